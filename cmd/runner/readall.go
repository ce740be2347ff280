package main

import (
	"fmt"
	"io"
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
