//go:build !linux

package sqlite

import (
	"errors"
	"fmt"
)

// LockHolder is known on Linux only (from /proc/locks); elsewhere it
// returns an error wrapping errors.ErrUnsupported.
func LockHolder(path string) (pid int, held bool, err error) {
	return 0, false, fmt.Errorf("sqlite: lock holder of %s: %w", path, errors.ErrUnsupported)
}
