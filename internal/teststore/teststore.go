// Package teststore holds the store fixtures that the runner's tests, in
// process (cmd/runner) and end to end (cmd/runner/e2e), share: a runner's
// SQLite store opened beside it (Open), and a task queued straight into a
// store (Queue).
package teststore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// Open opens the SQLite store of the runner whose data directory is dir
// (dir/stint.db), closed when the test ends.
func Open(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "stint.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Queue stores the module at wasmPath and submits one task of spec for
// it, straight into s, and returns the task's id.
func Queue(t *testing.T, s tasks.Store, wasmPath string, spec tasks.Spec) int64 {
	t.Helper()
	ctx := context.Background()
	sha, err := s.PutModule(ctx, testutil.ReadFile(t, wasmPath))
	require.NoError(t, err)
	spec.Module = sha
	task, _, err := s.Submit(ctx, spec)
	require.NoError(t, err)
	return task.ID
}
