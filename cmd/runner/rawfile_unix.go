//go:build unix

package main

import (
	"errors"
	"io"
	"io/fs"

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

// openRead opens path for reading, as os.Open does, without os.File.
func openRead(path string) (io.ReadCloser, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return &rawFile{fd: fd, path: path}, nil
	}
}

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
