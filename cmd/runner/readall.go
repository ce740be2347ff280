package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// readAtMost reads r to its end, or fails once it has read more than max
// bytes (max <= 0: no cap), without holding more than max+1 of them. A nil
// r reads nothing.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	if max <= 0 {
		return io.ReadAll(r)
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("more than %s", formatSize(max))
	}
	return b, nil
}

// readFileAtMost is readAtMost of the file at path. An error opening or
// reading it is returned as it is (an *fs.PathError); over is true when
// the file held more than max bytes.
func readFileAtMost(path string, max int64) (b []byte, over bool, err error) {
	f, err := openRead(path)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = f.Close() }()
	b, err = readAtMost(f, max)
	var pe *fs.PathError
	return b, err != nil && !errors.As(err, &pe), err
}
