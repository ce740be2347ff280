package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/stint-run/stint/internal/fsutil"
	"github.com/stint-run/stint/sandbox"
)

// snapshotFile is `runner run --snapshot FILE`: the snapshot a suspended
// run writes (fsutil.WriteFile: atomic, durable, mode 0600) and the next
// run of the same command resumes. A guest that suspends has no
// writable mount (the sandbox's mountsSuspendable), so it cannot change FILE.
type snapshotFile struct {
	path  string
	prior *sandbox.Snapshot // the snapshot FILE held when the run began (nil: none)
}

// openSnapshotFile reads FILE if it exists: a file that is not a
// snapshot is an error, nothing is run.
func openSnapshotFile(path string) (*snapshotFile, error) {
	s := &snapshotFile{path: path}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, err
	}
	if s.prior, err = sandbox.DecodeSnapshot(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("%s: %w (remove it to start the task afresh)", path, err)
	}
	return s, nil
}

// settle writes a suspended run's snapshot, or removes FILE once the task
// has ended. A forced or timed-out run keeps the last snapshot: the same
// command resumes from it.
func (s *snapshotFile) settle(out *sandbox.Outcome) error {
	switch {
	case out.Kind == sandbox.KindSuspended:
		var buf bytes.Buffer
		if err := out.Snapshot.Encode(&buf); err != nil {
			return fmt.Errorf("--snapshot: %w", err)
		}
		if err := fsutil.WriteFile(s.path, buf.Bytes(), 0o600, fsutil.Options{}); err != nil {
			return fmt.Errorf("--snapshot: the guest was suspended but its snapshot cannot be written: %w", err)
		}
		out.Message += "; written to " + s.path + ": run the same command again to resume"
	case out.Kind == sandbox.KindForced || out.Kind == sandbox.KindTimedOut:
	default:
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--snapshot: the task ended but %s cannot be removed: %w", s.path, err)
		}
	}
	return nil
}
