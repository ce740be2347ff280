// Package cachenames holds the records that name the compilation cache's
// entries (docs/sandbox.md, "The cache's names"): one small JSON file per
// prepared module in Dir, inside the cache's directory, with the module's
// sha256, the cache files that hold it and the names its callers know it by.
// Package sandbox writes them (sandbox.Runtime.NameInCache); runner cache
// list reads them, and runner cache prune deletes a record with the last of
// its files.
//
// A record is written whole (a temporary file renamed over it: 0600, no
// directory fsync, as a cache can lose it), so concurrent writers never tear
// one; two processes naming one module at once may each write their name
// over the other's, and one name is lost, which a cache can afford.
package cachenames

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stint-run/stint/internal/fsutil"
)

// Dir is the records' directory inside the cache's directory.
const Dir = "stint-names"

// MaxNames is how many names a record keeps, the latest first.
const MaxNames = 8

// MaxNameLen bounds one name, in bytes: AddName cuts a longer one.
const MaxNameLen = 1024

// maxRecord bounds what Read reads of one record.
const maxRecord = 64 << 10

// Record is what the cache knows of one module prepared under one key.
type Record struct {
	File    string   `json:"-"`               // the record's file, relative to the cache's directory (Dir/KEY); not stored
	SHA256  string   `json:"sha256"`          // the module's hex sha256 (of its bytes as given)
	Entries []string `json:"entries"`         // its cache files, slash-separated, relative: the prepared entry, then wazero's
	Names   []string `json:"names,omitempty"` // the names it was given, the latest first, at most MaxNames
}

// Path is the file of key's record, relative to the cache's directory.
func Path(key [32]byte) string {
	return Dir + "/" + hex.EncodeToString(key[:])
}

// Load reads key's record in the cache at dir; a missing one wraps
// fs.ErrNotExist.
func Load(dir string, key [32]byte) (Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(Path(key))))
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, err
	}
	rec.File = Path(key)
	return rec, nil
}

// Write writes rec as key's record in the cache at dir, atomically,
// creating Dir (0700) if need be.
func Write(dir string, key [32]byte, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := fsutil.MkdirPrivate(filepath.Join(dir, Dir)); err != nil {
		return err
	}
	return fsutil.WriteFile(filepath.Join(dir, filepath.FromSlash(Path(key))), b, fsutil.PrivateFileMode, fsutil.Options{NoDirSync: true})
}

// Latest is rec's latest name, "" for none.
func (rec *Record) Latest() string {
	if len(rec.Names) == 0 {
		return ""
	}
	return rec.Names[0]
}

// AddName puts name first among rec's names (once; cut at MaxNameLen, on a
// character's boundary), keeping at most MaxNames. It reports whether that
// changed them: false for an empty name or one already first.
func (rec *Record) AddName(name string) bool {
	if len(name) > MaxNameLen {
		name = strings.ToValidUTF8(name[:MaxNameLen], "")
	}
	if name == "" || len(rec.Names) > 0 && rec.Names[0] == name {
		return false
	}
	rest := slices.DeleteFunc(rec.Names, func(n string) bool { return n == name })
	rec.Names = append([]string{name}, rest[:min(len(rest), MaxNames-1)]...)
	return true
}

// Read returns the records of the cache whose directory is fsys (an
// os.Root's FS, say). A record that cannot be read or decoded, a temporary
// file and an entry that is not a path inside the cache, outside Dir, are
// skipped.
func Read(fsys fs.FS) []Record {
	ents, err := fs.ReadDir(fsys, Dir)
	if err != nil {
		return nil
	}
	var recs []Record
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := path.Join(Dir, e.Name())
		b, err := readAtMost(fsys, file, maxRecord)
		if err != nil {
			continue
		}
		var rec Record
		if json.Unmarshal(b, &rec) != nil {
			continue
		}
		rec.File = file
		rec.Entries = slices.DeleteFunc(rec.Entries, func(p string) bool {
			return !fs.ValidPath(p) || p == "." || p == Dir || strings.HasPrefix(p, Dir+"/")
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
