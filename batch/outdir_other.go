//go:build !unix

package batch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// openDirAt opens the folder name of dir (path its path) by its path,
// refusing a link (checked before the open: this system has no
// O_NOFOLLOW), making it first if it is missing and create is set. See
// outdir_unix.go.
func openDirAt(_ *os.File, path, name string, create bool) (*os.File, bool, error) {
	full := filepath.Join(path, name)
	made := false
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = os.Mkdir(full, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			made = err == nil
			fi, err = os.Lstat(full)
		}
	}
	if err != nil {
		return nil, false, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, false, &fs.PathError{Op: "open", Path: full, Err: errOutLink}
	}
	f, err := os.Open(full)
	return f, made, err
}

// unlinkAt removes the file name of the folder path.
func unlinkAt(_ *os.File, path, name string) error { return os.Remove(filepath.Join(path, name)) }
