package sandbox

import (
	"fmt"
	"os"

	"github.com/stint-run/stint/internal/hostdir"
	"github.com/stint-run/stint/sandbox/internal/mountfs"
)

// A run's mounts are served by Stint's own file system, mountfs: every
// path resolved beneath the mounted directory, read-only mounts that
// refuse every write, and a disk budget (Limits.MaxDiskBytes,
// Limits.MaxDiskFiles). Their host directories are found and opened by
// internal/hostdir, as the queue's are: a path resolved, then opened
// without following a link, and held (holdDirs); mountfs is only ever
// given a directory so held. What is left here is what ties them to a run.

// maxMounts is how many directories one run may mount. (How many files it
// may hold open through them is mountfs.MaxOpenFiles: docs/sandbox.md.)
const maxMounts = 16

// newMountBudget returns the budget of a run's mounts under lim: their
// open files and disk (mountfs.Budget says what counts).
func newMountBudget(lim Limits) *mountfs.Budget {
	return mountfs.NewBudget(lim.MaxDiskBytes, lim.MaxDiskFiles)
}

// check is what Spec.Validate checks of a mount's host side: its open
// directory when it has one (Mount.Dir), never a path the caller did not
// check; else its path, resolved as every host directory is
// (hostdir.Resolve: it must exist and be a directory).
func (m Mount) check() error {
	if m.Dir == nil {
		_, err := hostdir.Resolve(m.HostPath)
		return err
	}
	fi, err := m.Dir.Stat()
	if err != nil {
		return fmt.Errorf("mount %s: %w", m.HostPath, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("mount %s: not a directory", m.HostPath)
	}
	return nil
}

// holdMounts is a plugin's holdDirs: its errors are ErrManifest's. The
// plugin holds the directories for its life: every instance then mounts
// the directory opened at load, where a path checked at load and opened
// again at each instantiation could name another directory by then (a
// plugin with a writable mount above another one could put a link in its
// place).
func holdMounts(mounts []Mount) ([]Mount, []*os.File, error) {
	out, held, err := holdDirs(mounts)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	return out, held, nil
}

// holdDirs opens the directory of each mount that names one by path,
// once (hostdir.OpenAny: the path resolved, then opened without following
// a link), and returns the mounts with those directories (Mount.Dir) and
// the files to close when they are no longer mounted (a run's are closed
// when it ends, a plugin's when it is closed). The caller's mounts are
// left as they were.
func holdDirs(mounts []Mount) ([]Mount, []*os.File, error) {
	var out []Mount
	var held []*os.File
	for i, m := range mounts {
		if m.Dir != nil {
			continue
		}
		if out == nil {
			out = append([]Mount(nil), mounts...)
		}
		d, err := hostdir.OpenAny(m.HostPath) // a FIFO or a file fails at once
		if err != nil {
			closeFiles(held)
			return nil, nil, err
		}
		held = append(held, d.File)
		out[i].Dir = d.File
	}
	if out == nil {
		return mounts, nil, nil
	}
	return out, held, nil
}

// closeFiles closes fs.
func closeFiles(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
