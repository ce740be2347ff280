package sqlite_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestWakeups: a store that listens for wake-ups gets one when another
// store on the same file (another process, in real use) submits or retries
// a task; a second listener on the same file is refused, and one on
// another file is independent.
func TestWakeups(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("wake-ups use Linux's abstract socket namespace; elsewhere runners poll")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stint.db")
	runner, submitter := open(t, path, sqlite.Options{}), open(t, path, sqlite.Options{})
	wakeups, stop, err := runner.ListenWakeups()
	require.NoError(t, err)
	defer func() { require.NoError(t, stop()) }()
	woken := func(what string) {
		t.Helper()
		select {
		case <-wakeups:
		case <-time.After(30 * time.Second):
			t.Fatalf("no wake-up after %s", what)
		}
	}

	_, _, err = submitter.ListenWakeups()
	require.ErrorContains(t, err, "another process already listens")
	other := open(t, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	_, stopOther, err := other.ListenWakeups()
	require.NoError(t, err, "another store file has its own wake-ups")
	require.NoError(t, stopOther())

	sha, err := submitter.PutModule(ctx, wasm)
	require.NoError(t, err)
	task, _, err := submitter.Submit(ctx, tasks.Spec{Module: sha})
	require.NoError(t, err)
	woken("submit")

	_, err = submitter.Cancel(ctx, task.ID)
	require.NoError(t, err)
	_, err = submitter.Retry(ctx, task.ID)
	require.NoError(t, err)
	woken("retry")
}
