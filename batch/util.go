package batch

import (
	"fmt"
	"io"
	"strconv"
)

// readAtMost reads r to its end, or fails once it has read more than max
// bytes (max <= 0: no cap), without holding more than max+1 of them.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
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

// formatSize prints a byte size with the largest exact binary unit, as
// the runner's configuration spells sizes (64MiB).
func formatSize(n int64) string {
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
