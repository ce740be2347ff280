package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/fsutil"
)

// The compilation cache's place and size.
//
// runner serve, batch and submit keep it in data_dir/cache. runner run and
// runner call create nothing in data_dir when it does not exist: they use
// data_dir/cache if data_dir exists, else (sandbox.user_cache=on, the
// default) stint in the user's cache directory (os.UserCacheDir:
// $XDG_CACHE_HOME, else ~/.cache), created 0700. Every cache is pruned to
// sandbox.cache_max_bytes when a command that compiles starts (pruneCache).

// userCacheName is the compilation cache's directory in the user's cache
// directory.
const userCacheName = "stint"

// cacheRecentlyWritten is how recent a file's modification must be for
// pruneCache to leave it: a compilation in flight (this process's or
// another's) may be writing it.
const cacheRecentlyWritten = time.Minute

// oneShotCacheDir is the compilation cache of runner run and runner call
// (see above); "" for none.
func (a *app) oneShotCacheDir() (string, error) {
	if _, err := os.Stat(a.cfg.DataDir); err == nil {
		if err := a.ensureDataDir(); err != nil {
			return "", err
		}
		return a.cfg.cacheDir(), nil
	}
	if !a.cfg.Sandbox.UserCache {
		a.log.Debug("no compilation cache: data_dir does not exist (runner run and call create nothing there) and sandbox.user_cache is off",
			zap.String("data_dir", a.cfg.DataDir))
		return "", nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		a.log.Debug("no compilation cache: data_dir does not exist and there is no user cache directory", zap.Error(err))
		return "", nil
	}
	dir := filepath.Join(base, userCacheName)
	if err := os.MkdirAll(base, 0o700); err != nil {
		a.log.Debug("no compilation cache: cannot create the user cache directory", zap.Error(err))
		return "", nil
	}
	if err := fsutil.MkdirPrivate(dir); err != nil {
		a.log.Debug("no compilation cache: cannot create it in the user cache directory", zap.Error(err))
		return "", nil
	}
	if wide := fsutil.WideFiles(dir); len(wide) > 0 {
		a.log.Warn("the compilation cache is open to other users: not using it; fix: chmod 700 "+dir, zap.Strings("dirs", wide))
		return "", nil
	}
	a.log.Debug("compilation cache in the user's cache directory (data_dir does not exist)", zap.String("dir", dir))
	return dir, nil
}

// cacheFile is one file of a cache, for pruning.
type cacheFile struct {
	path string // relative to the cache's directory
	size int64
	used time.Time // the later of its access and modification times
}

// pruneCache deletes the least recently used files of the compilation
// cache at dir until it holds at most max bytes (max <= 0: no cap). A
// file's last use is the later of its access and modification times
// (access times are coarse on relatime mounts: a day at worst). Files
// written in the last cacheRecentlyWritten are kept (a compilation may be
// writing them), and so are directories. It returns the bytes and files
// deleted; errors are logged at debug and skipped (a cache is best
// effort).
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
	var files []cacheFile
	var total int64
	now := time.Now()
	_ = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			log.Debug("compilation cache: walking it", zap.Error(err))
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		total += fi.Size()
		used := fi.ModTime()
		if at := accessTime(fi); at.After(used) {
			used = at
		}
		if now.Sub(fi.ModTime()) < cacheRecentlyWritten {
			return nil // maybe being written: never a candidate
		}
		files = append(files, cacheFile{path: path, size: fi.Size(), used: used})
		return nil
	})
	if total <= max {
		return 0, 0
	}
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
	log.Debug("compilation cache pruned", zap.String("dir", dir), zap.Int64("max_bytes", max),
		zap.Int("deleted", deleted), zap.Int64("freed_bytes", freed), zap.Int64("bytes", total))
	return freed, deleted
}
