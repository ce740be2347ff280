//go:build !unix

package batch

import (
	"io"
	"io/fs"
	"os"
)

// descriptor: the *at calls are Unix's; elsewhere inputs are opened by path.
func descriptor(*os.File) int { return -1 }

// openInput opens the input name of d by its path, refusing a link
// (checked before the open: this system has no O_NOFOLLOW) and anything
// but a regular file (after it). See inputdir_unix.go.
func (d *inputDir) openInput(name string) (io.ReadCloser, int64, fs.FileMode, error) {
	path := d.join(name)
	if d.err != nil {
		return nil, 0, 0, d.err
	}
	if fi, err := os.Lstat(path); err != nil {
		return nil, 0, 0, err
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, 0, 0, &fs.PathError{Op: "open", Path: path, Err: errInputLink}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: errInputNotRegular}
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, 0, err
	}
	return f, fi.Size(), fi.Mode().Perm(), nil
}

// lstat is the type and size of the entry name of d (see inputdir_unix.go).
func (d *inputDir) lstat(name string, follow bool) (fs.FileMode, int64, error) {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(d.join(name))
	if err != nil {
		return 0, 0, err
	}
	return fi.Mode(), fi.Size(), nil
}

// sub opens the subfolder name of d, refusing a link.
func (d *inputDir) sub(name string) (*inputDir, error) {
	path := d.join(name)
	if d.err != nil {
		return nil, d.err
	}
	if fi, err := os.Lstat(path); err != nil {
		return nil, err
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errInputLink}
	}
	return openInputDir(path)
}
