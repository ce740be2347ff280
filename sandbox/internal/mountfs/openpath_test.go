//go:build unix

package mountfs

import "os"

// newMountFS opens dir, by path, as a mount whose open files and disk
// count against shared (nil: a budget of its own, with no disk budget):
// the tests' way to a mount (Open takes only a directory its caller
// opened and checked, internal/hostdir).
func newMountFS(dir string, shared *Budget) (*FS, error) {
	return openMountFS(dir, true, shared)
}

// openMountFS is newMountFS; useAt false skips openat2 (for tests of the
// os.Root resolver on Linux).
func openMountFS(dir string, useAt bool, shared *Budget) (*FS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return newMountFSOnRoot(dir, root, useAt, shared)
}
