// Package bytesize is the one way this module prints a byte size (64MiB,
// as the runner's configuration spells sizes) and reads a stream under a
// cap on its size.
package bytesize

import (
	"fmt"
	"io"
	"strconv"
)

// Format prints n with the largest binary unit that divides it exactly
// (64MiB, 512KiB, 1GiB), or as a plain number of bytes (1000).
func Format(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return fmt.Sprintf("%d%s", n/u.m, u.s)
		}
	}
	return strconv.FormatInt(n, 10)
}

// ReadAtMost reads r to its end, or fails once it has read more than max
// bytes (max <= 0: no cap), without holding more than max+1 of them. A nil
// r reads nothing.
func ReadAtMost(r io.Reader, max int64) ([]byte, error) {
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
		return nil, fmt.Errorf("more than %s", Format(max))
	}
	return b, nil
}
