package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The data directory holds task inputs, results, checkpoints and env
// values (secrets, often): its files and directories are the runner
// user's alone, whatever the umask.
const (
	// PrivateFileMode is the mode of the files the runner creates there.
	PrivateFileMode fs.FileMode = 0o600
	// PrivateDirMode is the mode of the directories it creates there.
	PrivateDirMode fs.FileMode = 0o700
)

// MkdirPrivate creates dir and any missing parent with mode PrivateDirMode,
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
	if err := os.MkdirAll(dir, PrivateDirMode); err != nil {
		return err
	}
	for _, d := range missing {
		if err := os.Chmod(d, PrivateDirMode); err != nil {
			return err
		}
	}
	return nil
}

// CreatePrivate creates the empty file at path with mode PrivateFileMode
// (the umask plays no part) when it does not exist. An existing file is
// left as it is (WideFiles tells whether it is wider).
func CreatePrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, PrivateFileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return errors.Join(f.Chmod(PrivateFileMode), f.Close()) // whatever the umask
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
