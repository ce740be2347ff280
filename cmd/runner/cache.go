package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/cachenames"
	"github.com/stint-run/stint/internal/fsutil"
	"github.com/stint-run/stint/sandbox"
)

// The compilation cache's place and size.
//
// One cache for every command, so that a module compiled by runner run is
// not compiled again by runner batch or serve (compileCacheDir):
// sandbox.cache_dir when set; else data_dir/cache when data_dir is set
// (flag, env or file: a service's own directory); else (sandbox.user_cache
// =on, the default) stint in the user's cache directory (os.UserCacheDir:
// $XDG_CACHE_HOME, else ~/.cache), created 0700; else data_dir/cache.
// runner run and runner call create nothing in a data_dir that does not
// exist: they use none there. Every cache is pruned to
// sandbox.cache_max_bytes, least recently used first, when a command that
// compiles starts (pruneCache), and by runner cache prune.
//
// Each module's entries carry its names (sandbox.Runtime.NameInCache, in
// cachenames.Dir): runner run, call and batch give the file's
// absolute path (nameInCache, cacheName), runner serve's pool the name a
// module was uploaded with; runner cache list shows the latest, and a
// record goes when the last of its entries is pruned (sweepCacheNames).

// userCacheName is the compilation cache's directory in the user's cache
// directory.
const userCacheName = "stint"

// cacheRecentlyWritten is how recent a file's modification must be for
// pruneCache to leave it: a compilation in flight (this process's or
// another's) may be writing it.
const cacheRecentlyWritten = time.Minute

// compileCacheDir is the compilation cache of this command (see above),
// created if need be; "" for none. oneShot is for runner run and runner
// call, which create nothing in data_dir.
func (a *app) compileCacheDir(oneShot bool) (string, error) {
	if dir := a.cfg.Sandbox.CacheDir; dir != "" {
		if err := fsutil.MkdirPrivate(dir); err != nil {
			return "", fmt.Errorf("sandbox.cache_dir %s: %w", dir, err)
		}
		if wide := fsutil.WideFiles(dir); len(wide) > 0 {
			a.log.Warn("the compilation cache is open to other users; fix: chmod 700 "+dir, zap.Strings("dirs", wide))
		}
		return dir, nil
	}
	_, err := os.Stat(a.cfg.DataDir)
	dataDirExists := err == nil
	if !(a.cfg.DataDirSet && (dataDirExists || !oneShot)) && a.cfg.Sandbox.UserCache {
		if dir := a.userCacheDir(); dir != "" {
			return dir, nil
		}
	}
	if oneShot && !dataDirExists {
		why := "no compilation cache: data_dir does not exist (runner run and call create nothing there)"
		if !a.cfg.Sandbox.UserCache {
			why += " and sandbox.user_cache is off"
		}
		a.log.Debug(why, zap.String("data_dir", a.cfg.DataDir))
		return "", nil
	}
	if err := a.ensureDataDir(); err != nil {
		return "", err
	}
	dir := a.cfg.cacheDir()
	if err := fsutil.MkdirPrivate(dir); err != nil {
		return "", fmt.Errorf("data_dir %s: %w", a.cfg.DataDir, err)
	}
	return dir, nil
}

// userCacheDir is stint in the user's cache directory, created 0700; ""
// when there is none, it cannot be created or it is open to other users.
func (a *app) userCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		a.log.Debug("no user cache directory", zap.Error(err))
		return ""
	}
	dir := filepath.Join(base, userCacheName)
	if err := os.MkdirAll(base, 0o700); err != nil {
		a.log.Debug("cannot create the user cache directory", zap.Error(err))
		return ""
	}
	if err := fsutil.MkdirPrivate(dir); err != nil {
		a.log.Debug("cannot create the compilation cache in the user cache directory", zap.Error(err))
		return ""
	}
	if wide := fsutil.WideFiles(dir); len(wide) > 0 {
		a.log.Warn("the compilation cache is open to other users: not using it; fix: chmod 700 "+dir, zap.Strings("dirs", wide))
		return ""
	}
	a.log.Debug("compilation cache in the user's cache directory", zap.String("dir", dir))
	return dir
}

// nameInCache records the file path a module was read from (runner run,
// runner call: the module's or the manifest's) as its name in the
// compilation cache (cacheName, sandbox.Runtime.NameInCache), for runner
// cache list. A failure is logged at debug, never the command's.
func (a *app) nameInCache(rt *sandbox.Runtime, mod *sandbox.Module, path string) {
	if err := rt.NameInCache(mod, cacheName(path)); err != nil {
		a.log.Debug("compilation cache: recording the module's name", zap.Error(err))
	}
}

// cacheName is the name in the compilation cache of a module read from
// path: the path made absolute, or "" (no name) when it is not a regular
// file (a pipe's /dev/fd/63 would name nothing).
func cacheName(path string) string {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// cacheFile is one file of a cache.
type cacheFile struct {
	path     string // relative to the cache's directory
	size     int64
	used     time.Time // the later of its access and modification times
	modified time.Time
}

// pruneCache deletes the least recently used files of the compilation
// cache at dir until it holds at most max bytes (max <= 0: no cap). A
// file's last use is the later of its access and modification times
// (access times are coarse on relatime mounts: a day at worst). Files
// written in the last cacheRecentlyWritten are kept (a compilation may be
// writing them), and so are directories; the records of names are not
// entries (cacheFiles), and those left without entries go after a
// deletion (sweepCacheNames). It returns the bytes and files deleted;
// errors are logged at debug and skipped (a cache is best effort).
func pruneCache(dir string, max int64, log *zap.Logger) (freed int64, deleted int) {
	if dir == "" || max <= 0 {
		return 0, 0
	}
	// Everything through the directory's os.Root: a link put in the cache
	// (or in place of one of its folders between the walk and a removal)
	// never leads a deletion out of it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		log.Debug("compilation cache: opening it", zap.Error(err))
		return 0, 0
	}
	defer root.Close()
	all, total := cacheFiles(root)
	if total <= max {
		return 0, 0
	}
	now := time.Now()
	files := slices.DeleteFunc(all, func(f cacheFile) bool {
		return now.Sub(f.modified) < cacheRecentlyWritten // maybe being written: never a candidate
	})
	sort.Slice(files, func(i, j int) bool {
		// Stale temporary files first, then the least recently used.
		ti, tj := strings.HasSuffix(files[i].path, ".tmp"), strings.HasSuffix(files[j].path, ".tmp")
		if ti != tj {
			return ti
		}
		return files[i].used.Before(files[j].used)
	})
	for _, f := range files {
		if total <= max {
			break
		}
		if err := root.Remove(f.path); err != nil {
			log.Debug("compilation cache: deleting an entry", zap.Error(err))
			continue
		}
		total -= f.size
		freed += f.size
		deleted++
	}
	names := 0
	if deleted > 0 {
		names = sweepCacheNames(root, now, log)
	}
	log.Debug("compilation cache pruned", zap.String("dir", dir), zap.Int64("max_bytes", max),
		zap.Int("deleted", deleted), zap.Int64("freed_bytes", freed), zap.Int64("bytes", total), zap.Int("names_deleted", names))
	return freed, deleted
}

// sweepCacheNames deletes the records that name the entries of the cache
// opened at root (cachenames.Read) once none of their entries is
// left, and the temporary files of record writes that never ended; each
// only if written more than cacheRecentlyWritten ago (a compilation may be
// writing its entries, or naming them). It returns how many files it
// deleted; errors are logged at debug and skipped.
func sweepCacheNames(root *os.Root, now time.Time, log *zap.Logger) int {
	deleted := 0
	stale := func(name string) bool {
		fi, err := root.Lstat(filepath.FromSlash(name))
		return err == nil && fi.Mode().IsRegular() && now.Sub(fi.ModTime()) >= cacheRecentlyWritten
	}
	remove := func(name string) {
		if err := root.Remove(filepath.FromSlash(name)); err != nil {
			log.Debug("compilation cache: deleting a record of names", zap.Error(err))
			return
		}
		deleted++
	}
	exists := func(entry string) bool {
		_, err := root.Lstat(filepath.FromSlash(entry))
		return err == nil
	}
	for _, rec := range cachenames.Read(root.FS()) {
		if !slices.ContainsFunc(rec.Entries, exists) && stale(rec.File) {
			remove(rec.File)
		}
	}
	ents, _ := fs.ReadDir(root.FS(), cachenames.Dir)
	for _, e := range ents {
		if name := path.Join(cachenames.Dir, e.Name()); strings.HasPrefix(e.Name(), ".") && stale(name) {
			remove(name)
		}
	}
	return deleted
}

// sweepCacheNamesIn is sweepCacheNames of the cache at dir.
func sweepCacheNamesIn(dir string, log *zap.Logger) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	sweepCacheNames(root, time.Now(), log)
}
