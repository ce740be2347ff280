//go:build unix && !linux

package hostdir

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open a directory read-only (there is no O_PATH here).
const dirOpenFlags = unix.O_RDONLY

// openat2NoSymlinks is Linux's: ok is false, the caller walks the path.
func openat2NoSymlinks(string) (*os.File, bool, error) { return nil, false, nil }
