package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/internal/fsutil"
)

// checkpointFile is `runner run --checkpoint`: a file reached through its
// directory, opened once when the run starts (os.Root), never by its path
// again. A guest whose mount holds that directory can rename it or put a
// symlink where the file (or the directory) was; the checkpoint is still
// read from and written to the directory that was opened, and a symlink
// there that leads out of it is refused (os.Root): the guest cannot make
// the runner hand it a host file as its checkpoint, or write its
// checkpoint anywhere else.
type checkpointFile struct {
	root *os.Root
	name string // the file's name in root
	path string // as the operator gave it, for messages
}

// openCheckpointFile opens the directory of path (its symlinks resolved
// now, as for any path an operator types).
func openCheckpointFile(path string) (*checkpointFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &checkpointFile{root: root, name: filepath.Base(abs), path: path}, nil
}

// Close releases the directory.
func (c *checkpointFile) Close() error { return c.root.Close() }

// read reads the checkpoint, at most max bytes (limits.max_checkpoint: no
// guest could have saved more): a longer file, or one that is not a
// regular file, is an error. A missing file is os.ErrNotExist.
func (c *checkpointFile) read(max int64) ([]byte, error) {
	f, err := c.root.OpenFile(c.name, checkpointOpenFlags, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", c.path)
	}
	b, err := bytesize.ReadAtMost(f, max)
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) {
		return nil, fmt.Errorf("%s: %w (limits.max_checkpoint)", c.path, err)
	}
	return b, err
}

// write replaces the checkpoint durably (fsutil.WriteFileIn): a synced
// temporary file in the same directory, renamed over it, the directory
// synced.
func (c *checkpointFile) write(data []byte) error {
	return fsutil.WriteFileIn(c.root, c.name, data, 0o600, fsutil.Options{})
}
