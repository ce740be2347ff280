package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
)

// The store holds task inputs, results, checkpoints and env values
// (secrets, often): its files are the runner user's alone, whatever the
// umask.
const (
	// FileMode is the mode Open gives the database file it creates; SQLite
	// gives the -wal and -shm files it creates later the database file's
	// mode, and the lock file is created with it too.
	FileMode fs.FileMode = 0o600
	// DirMode is the mode Open gives the directories it creates for the
	// database file.
	DirMode fs.FileMode = 0o700
)

// StoreFiles are the files of the store at path: the database, its -wal
// and -shm files and its lock file (some may not exist).
func StoreFiles(path string) []string {
	return []string{path, path + "-wal", path + "-shm", path + ".lock"}
}

// MkdirPrivate creates dir and any missing parent with mode DirMode,
// setting the mode of each directory it creates explicitly (the umask
// plays no part). Existing directories are left as they are.
func MkdirPrivate(dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	for _, d := range missing {
		if err := os.Chmod(d, DirMode); err != nil {
			return err
		}
	}
	return nil
}

// createPrivate creates the empty database file at path with mode
// FileMode when it does not exist (SQLite takes an empty file for an
// empty database), so that SQLite, which gives the -wal and -shm files it
// creates the database file's mode, makes them FileMode too. An existing
// file is left as it is: Open warns when it is wider.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return errors.Join(f.Chmod(FileMode), f.Close()) // whatever the umask
}

// WideFiles returns those of paths that exist and that users other than
// their owner may read or write (any group or other permission bit), each
// with its mode. A file that cannot be stat'ed is skipped.
func WideFiles(paths ...string) []string {
	var wide []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			wide = append(wide, fmt.Sprintf("%s (%#o)", p, fi.Mode().Perm()))
		}
	}
	return wide
}

// warnWideFiles logs a warning when a file of the store is open to other
// users, with the command that fixes it.
func (s *Store) warnWideFiles() {
	wide := WideFiles(StoreFiles(s.path)...)
	if len(wide) == 0 {
		return
	}
	s.log.Warn("store files are readable by other users, and they hold task inputs, results and env values; "+
		"fix: chmod 600 "+strings.Join(StoreFiles(s.path), " "),
		zap.Strings("files", wide))
}
