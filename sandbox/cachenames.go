package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"

	"github.com/stint-run/stint/internal/fsutil"
)

// The names of the on-disk cache's entries.
//
// The compilation cache (Config.CacheDir) names its files by hashes: a
// prepared module by preparedKey, wazero's machine code for it by a hash
// of the prepared bytes. So that a listing of the cache (runner cache
// list) can say which program each file belongs to, Stint keeps one small
// record per prepared module in CacheNamesDir, named as its prepared entry
// (CacheNameRecord, JSON): the module's sha256, the cache files that hold
// it, and the names its callers know it by (Runtime.NameInCache).
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
//
// A record is written whole (a temporary file, renamed over it: 0600, no
// directory fsync, as a cache can lose it), so concurrent writers never
// tear one; two processes naming one module at once may each write their
// own name over the other's, and a name is lost, which a cache can afford.
// runner cache prune deletes a record once none of its files is left.

// CacheNamesDir is the directory, inside Config.CacheDir, of the records
// that name the cache's entries (CacheNameRecord).
const CacheNamesDir = "stint-names"

// maxCacheNames is how many names a record keeps, newest first.
const maxCacheNames = 8

// maxCacheNameLen bounds one name, in bytes: a longer one is cut.
const maxCacheNameLen = 1024

// maxCacheRecord bounds what ReadCacheNames reads of one record.
const maxCacheRecord = 64 << 10

// CacheNameRecord is what the on-disk compilation cache knows of one
// module prepared under one key: the files that hold it and its names.
type CacheNameRecord struct {
	// File is the record's own file, relative to the cache directory
	// (CacheNamesDir/KEY); not stored.
	File string `json:"-"`
	// SHA256 is the module's hex sha256 (of its bytes as given, before
	// the preparation).
	SHA256 string `json:"sha256"`
	// Entries are the cache files that hold it, relative to the cache
	// directory, slash-separated: its prepared entry, then wazero's
	// machine code. Some may have been deleted since.
	Entries []string `json:"entries"`
	// Names are the names its callers gave it (Runtime.NameInCache), the
	// latest first, at most 8.
	Names []string `json:"names,omitempty"`
}

// recordName is the file of key's record, relative to the cache directory.
func recordName(key [32]byte) string {
	return CacheNamesDir + "/" + hex.EncodeToString(key[:])
}

// readNameRecord reads key's record in the cache at dir; a missing or
// unreadable one is an error.
func readNameRecord(dir string, key [32]byte) (CacheNameRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(recordName(key))))
	if err != nil {
		return CacheNameRecord{}, err
	}
	var rec CacheNameRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return CacheNameRecord{}, err
	}
	rec.File = recordName(key)
	return rec, nil
}

// writeNameRecord writes rec as key's record in the cache at dir, atomically.
func writeNameRecord(dir string, key [32]byte, rec CacheNameRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	names := filepath.Join(dir, CacheNamesDir)
	if err := fsutil.MkdirPrivate(names); err != nil {
		return err
	}
	return fsutil.WriteFile(filepath.Join(names, hex.EncodeToString(key[:])), b, fsutil.PrivateFileMode, fsutil.Options{NoDirSync: true})
}

// noteCacheEntries makes sure the record of the module sha, prepared under
// key and compiled from wasm, lists its cache files (see the top of this
// file). Best effort: a failure is logged, never the compilation's.
func (r *Runtime) noteCacheEntries(key [32]byte, sha string, wasm []byte) {
	dir := r.cfg.CacheDir
	rec, err := readNameRecord(dir, key)
	if err == nil && rec.SHA256 == sha && r.anyExists(rec.Entries[min(1, len(rec.Entries)):]) {
		return // up to date: the usual case, a read and a stat
	}
	if err != nil || rec.SHA256 != sha {
		rec = CacheNameRecord{SHA256: sha}
	}
	rec.Entries = append([]string{preparedDir + "/" + hex.EncodeToString(key[:])},
		wazeroCacheFiles(dir, wasm, r.cfg.Interrupt.closeOnContextDone())...)
	if err := writeNameRecord(dir, key, rec); err != nil {
		r.log.Debug("compilation cache: recording its entries' module: " + err.Error())
	}
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
// as wazero does (see the top of this file), for each value of the CPU
// feature bits wazero may have used (three bits on amd64, one on arm64),
// in each of wazero's directories for this system (wazero-VERSION-ARCH-OS).
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

// NameInCache records name, what a user knows the module by (the file
// it was read from, a plugin's or a stored module's name), beside mod's
// entries in the on-disk compilation cache (Config.CacheDir), so that a
// listing of the cache can say which program each entry belongs to
// (ReadCacheNames). The latest name comes first and a few are kept; a name
// longer than 1 KiB is cut. It does nothing without Config.CacheDir, for
// an empty name, or for a name the record already starts with (so a warm
// start writes nothing). Safe for concurrent use, in one process or
// several (the record is replaced whole); the error is only the record's,
// never the module's.
func (r *Runtime) NameInCache(mod *Module, name string) error {
	if mod == nil || !mod.cacheKeyed || r.cfg.CacheDir == "" || name == "" {
		return nil
	}
	if len(name) > maxCacheNameLen {
		name = strings.ToValidUTF8(name[:maxCacheNameLen], "")
	}
	rec, err := readNameRecord(r.cfg.CacheDir, mod.cacheKey)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && rec.SHA256 != mod.SHA256:
		// Deleted since its compilation (runner cache prune), or not ours:
		// its prepared entry, at least, is known.
		rec = CacheNameRecord{SHA256: mod.SHA256, Entries: []string{preparedDir + "/" + hex.EncodeToString(mod.cacheKey[:])}}
	case err != nil:
		return err
	case len(rec.Names) > 0 && rec.Names[0] == name:
		return nil
	}
	rec.Names = slices.DeleteFunc(rec.Names, func(n string) bool { return n == name })
	rec.Names = append([]string{name}, rec.Names[:min(len(rec.Names), maxCacheNames-1)]...)
	return writeNameRecord(r.cfg.CacheDir, mod.cacheKey, rec)
}

// ReadCacheNames returns the records of the compilation cache whose
// directory is fsys (an os.Root's FS, say): what each module's entries
// are and the names it was given (Runtime.NameInCache). A record that
// cannot be read or decoded, a temporary file and an entry that is not a
// path inside the cache (outside CacheNamesDir) are skipped.
func ReadCacheNames(fsys fs.FS) []CacheNameRecord {
	ents, err := fs.ReadDir(fsys, CacheNamesDir)
	if err != nil {
		return nil
	}
	var recs []CacheNameRecord
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := path.Join(CacheNamesDir, e.Name())
		b, err := readAtMost(fsys, file, maxCacheRecord)
		if err != nil {
			continue
		}
		var rec CacheNameRecord
		if json.Unmarshal(b, &rec) != nil {
			continue
		}
		rec.File = file
		rec.Entries = slices.DeleteFunc(rec.Entries, func(p string) bool {
			return !fs.ValidPath(p) || p == "." || p == CacheNamesDir || strings.HasPrefix(p, CacheNamesDir+"/")
		})
		recs = append(recs, rec)
	}
	return recs
}

// readAtMost reads the file name of fsys, failing past max bytes.
func readAtMost(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = errors.New("too large")
	}
	return b, err
}
