//go:build !unix

package mountfs

import (
	"errors"
	"os"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// FS is Unix-only (see mountfs.go): it resolves paths with openat2 or
// with os.Root and the *at system calls.
type FS struct {
	experimentalsys.UnimplementedFS
}

// Open fails: mounts need a Unix host.
func Open(string, *os.File, *Budget) (*FS, error) {
	return nil, errors.New("mounts need a Unix host (Linux, macOS, BSD): run without mounts here")
}

// Close does nothing.
func (*FS) Close() error { return nil }

// ReadOnly returns fs.
func ReadOnly(fs experimentalsys.FS) experimentalsys.FS { return fs }
