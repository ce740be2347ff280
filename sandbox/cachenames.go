package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"github.com/stint-run/stint/internal/cachenames"
)

// The names of the on-disk cache's entries (docs/sandbox.md, "The cache's
// names"; the records' format: internal/cachenames).
//
// The compilation cache (Config.CacheDir) names its files by hashes: a
// prepared module by preparedKey, wazero's machine code for it by a hash
// of the prepared bytes. So that a listing of the cache (runner cache
// list) can say which program each file belongs to, a record per prepared
// module, named as its prepared entry, lists its files and its names.
//
// compile writes the record after a compilation that used the cache, when
// there is none yet or none of the wazero files it lists exists (wazero
// upgraded, or its entry deleted and compiled again): finding them costs a
// sha256 of the prepared module, paid once per record, not per run.
// wazero does not say which file it wrote: wazeroCacheFiles computes its
// key as wazero 1.x does (wazevo's fileCacheKey: the sha256 of the module
// id, "WAZEVO" and the CPU feature bits, the id being the sha256 of the
// module's bytes and the close-on-context-done flag, with no function
// listeners, which Stint never gives a guest's compilation) and keeps the
// candidates that exist. Should wazero change its key, no candidate exists
// and its files show no name; TestCacheNames fails, saying so.

// preparedEntry is the prepared entry of key, relative to the cache's
// directory.
func preparedEntry(key [32]byte) string {
	return preparedDir + "/" + hex.EncodeToString(key[:])
}

// noteCacheEntries makes sure the record of the module sha, prepared under
// key and compiled from wasm, lists its cache files (see above), and
// returns its latest name ("" for none). Best effort: a failure is
// logged, never the compilation's.
func (r *Runtime) noteCacheEntries(key [32]byte, sha string, wasm []byte) string {
	dir := r.cfg.CacheDir
	rec, err := cachenames.Load(dir, key)
	if err == nil && rec.SHA256 == sha && r.anyExists(rec.Entries[min(1, len(rec.Entries)):]) {
		return rec.Latest() // up to date: the usual case, a read and a stat
	}
	if err != nil || rec.SHA256 != sha {
		rec = cachenames.Record{SHA256: sha}
	}
	rec.Entries = append([]string{preparedEntry(key)}, wazeroCacheFiles(dir, wasm, r.cfg.Interrupt.closeOnContextDone())...)
	if err := cachenames.Write(dir, key, rec); err != nil {
		r.log.Debug("compilation cache: recording which files hold a module: " + err.Error())
	}
	return rec.Latest()
}

// anyExists reports whether one of the cache files entries exists.
func (r *Runtime) anyExists(entries []string) bool {
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(r.cfg.CacheDir, filepath.FromSlash(e))); err == nil {
			return true
		}
	}
	return false
}

// wazeroCacheFiles returns the files of wazero's compilation cache in dir
// that hold its machine code for wasm, relative to dir: its key computed
// as wazero does (see above), for each value of the CPU feature bits
// wazero may have used (three bits on amd64, one on arm64), in each of
// wazero's directories for this system (wazero-VERSION-ARCH-OS).
func wazeroCacheFiles(dir string, wasm []byte, closeOnContextDone bool) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	suffix := "-" + goruntime.GOARCH + "-" + goruntime.GOOS
	var dirs []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "wazero-") && strings.HasSuffix(e.Name(), suffix) {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	h := sha256.New()
	h.Write(wasm)
	var flag byte
	if closeOnContextDone {
		flag = 1
	}
	h.Write([]byte{flag})
	id := h.Sum(nil)
	var found []string
	for cpu := range uint64(8) {
		k := sha256.New()
		k.Write(id)
		k.Write([]byte("WAZEVO"))
		k.Write(binary.LittleEndian.AppendUint64(nil, cpu))
		name := hex.EncodeToString(k.Sum(nil))
		for _, d := range dirs {
			if fi, err := os.Lstat(filepath.Join(dir, d, name)); err == nil && fi.Mode().IsRegular() {
				found = append(found, d+"/"+name)
			}
		}
	}
	return found
}

// NameInCache names mod's entries in the on-disk cache (docs/sandbox.md).
func (r *Runtime) NameInCache(mod *Module, name string) error {
	// What a user knows the module by (a file's path, an uploaded module's
	// name), the latest first; nothing without Config.CacheDir, and
	// nothing written for the name already first (a warm start: known
	// from the record compile read, so not even read again). The error is
	// the record's, never the module's.
	if mod == nil || !mod.cacheKeyed || r.cfg.CacheDir == "" {
		return nil
	}
	if latest := mod.cacheName.Load(); latest != nil && *latest == name {
		return nil
	}
	rec, err := cachenames.Load(r.cfg.CacheDir, mod.cacheKey)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && rec.SHA256 != mod.SHA256:
		// Deleted since its compilation (runner cache prune), or not ours:
		// its prepared entry, at least, is known.
		rec = cachenames.Record{SHA256: mod.SHA256, Entries: []string{preparedEntry(mod.cacheKey)}}
	case err != nil:
		return err
	}
	if rec.AddName(name) {
		if err := cachenames.Write(r.cfg.CacheDir, mod.cacheKey, rec); err != nil {
			return err
		}
	}
	mod.cacheName.Store(&name)
	return nil
}
