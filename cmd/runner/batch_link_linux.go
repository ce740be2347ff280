package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// writeLinked writes name as an unnamed file in the folder (O_TMPFILE),
// fsyncs it, and only then gives it its name (linkat): the name appears
// with the whole, durable content, or not at all, as with a temporary
// file and a rename, but with one change to the folder instead of three
// (create, rename, and the temporary name's removal), and nothing left
// behind by a kill. A name that exists is replaced by a rename from a
// temporary name. errNoLink: this system cannot (no O_TMPFILE on the file
// system, no /proc); the caller writes a named temporary file instead.
func (o *outDir) writeLinked(name string, data []byte) error {
	fd, err := unix.Open(o.dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			return errNoLink
		}
		return &os.PathError{Op: "open", Path: o.dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), o.dir)
	defer func() { _ = f.Close() }()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	final := filepath.Join(o.dir, name)
	err = unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, final, unix.AT_SYMLINK_FOLLOW)
	if errors.Is(err, unix.EEXIST) { // replace it: link under a temporary name, rename over
		tmp := o.tempName(name)
		if err = unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW); err == nil {
			if err = os.Rename(tmp, final); err != nil {
				_ = os.Remove(tmp)
			}
			return err
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EXDEV):
		return errNoLink // no /proc, or linking refused: the unnamed file goes with its close
	default:
		return &os.LinkError{Op: "linkat", Old: src, New: final, Err: err}
	}
}
