package sandbox

import (
	"io/fs"
	"os"

	"github.com/stint-run/stint/sandbox/internal/mountfs"
)

// A run's mounts are served by Stint's own file system, mountfs: every
// path resolved beneath the mounted directory, read-only mounts that
// refuse every write, and a disk budget (Limits.MaxDiskBytes,
// Limits.MaxDiskFiles). What is left here is what ties it to a run.

// maxMounts is how many directories one run may mount. (How many files it
// may hold open through them is mountfs.MaxOpenFiles: docs/sandbox.md.)
const maxMounts = 16

// newMountBudget returns the budget of a run's mounts under lim: their
// open files and disk (mountfs.Budget says what counts).
func newMountBudget(lim Limits) *mountfs.Budget {
	return mountfs.NewBudget(lim.MaxDiskBytes, lim.MaxDiskFiles)
}

// stat is what Spec.Validate checks of a mount: its open directory when
// it has one (Mount.Dir), never a path the caller did not check.
func (m Mount) stat() (fs.FileInfo, error) {
	if m.Dir != nil {
		return m.Dir.Stat()
	}
	return os.Stat(m.HostPath)
}
