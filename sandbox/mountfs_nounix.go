//go:build !unix

package sandbox

import (
	"errors"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// mountFS is Unix-only (see mountfs.go): it resolves paths with openat2 or
// with os.Root and the *at system calls.
type mountFS struct {
	experimentalsys.UnimplementedFS
}

func newMountFS(string, *mountBudget) (*mountFS, error) {
	return nil, errors.New("mounts need a Unix host (Linux, macOS, BSD): run without mounts here")
}

func openMount(Mount, *mountBudget) (*mountFS, error) { return newMountFS("", nil) }

func (*mountFS) Close() error { return nil }

func newReadOnlyMount(fs experimentalsys.FS) experimentalsys.FS { return fs }
