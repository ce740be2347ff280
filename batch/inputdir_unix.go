//go:build unix

package batch

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// rawFile is a file open for reading as a bare descriptor. os.Open costs
// several system calls more than the open itself (on Linux an fcntl to
// make the descriptor non-blocking, an epoll registration that a regular
// file refuses, and their undoing at Close) and an allocation with a
// finalizer: a batch opens each input twice (to hash it, then for its
// attempt), and for small inputs that was a tenth of its CPU time. Errors
// are *fs.PathError, as os.File's are.
type rawFile struct {
	fd   int
	path string
}

// openInput opens the input name of the folder d for reading: relative
// to d's descriptor (the folder that was listed, whatever its path names
// now), without following a link (O_NOFOLLOW: a link is errInputLink) and
// without blocking (O_NONBLOCK: a FIFO or a device put in the input's
// place opens at once), and then only if fstat says it is a regular file
// (else errInputNotRegular). It returns the file with the size and mode
// fstat gave.
func (d *inputDir) openInput(name string) (io.ReadCloser, int64, fs.FileMode, error) {
	path := d.join(name)
	if d.err != nil {
		return nil, 0, 0, d.err
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) { // O_NOFOLLOW on a link (EMLINK on FreeBSD)
			return nil, 0, 0, &fs.PathError{Op: "open", Path: path, Err: errInputLink}
		}
		return nil, 0, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		_ = unix.Close(fd)
		return nil, 0, 0, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return nil, 0, 0, &fs.PathError{Op: "open", Path: path, Err: errInputNotRegular}
	}
	return &rawFile{fd: fd, path: path}, st.Size, fs.FileMode(st.Mode & 0o7777), nil
}

// lstat is the type and size of the entry name of d, not following a
// link; follow: of what a link leads to (only to know whether it is a
// file: nothing is opened).
func (d *inputDir) lstat(name string, follow bool) (fs.FileMode, int64, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(d.fd, name, &st, flags) }); err != nil {
		return 0, 0, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	var t fs.FileMode
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		t = fs.ModeDir
	case unix.S_IFLNK:
		t = fs.ModeSymlink
	default:
		t = fs.ModeIrregular
	}
	return t | fs.FileMode(st.Mode&0o777), st.Size, nil
}

// sub opens the subfolder name of d without following a link: a link is
// errInputLink.
func (d *inputDir) sub(name string) (*inputDir, error) {
	path := d.join(name)
	if d.err != nil {
		return nil, d.err
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) { // O_DIRECTORY|O_NOFOLLOW on a link (Linux)
			if mode, _, serr := d.lstat(name, false); serr == nil && mode&fs.ModeSymlink != 0 {
				err = errInputLink
			}
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
			err = errInputLink
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return newInputDir(os.NewFile(uintptr(fd), path), path)
}

// ignoringEINTR runs fn again while it fails with EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// descriptor is the folder's descriptor, for the *at calls.
func descriptor(f *os.File) int { return int(f.Fd()) }

// Read reads from the descriptor; io.EOF at the end of the file.
func (f *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, p)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Close closes the descriptor (once).
func (f *rawFile) Close() error {
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	err := unix.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}
