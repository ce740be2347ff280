package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// TestPoolRefusesStoredMountsOutsideItsAllowList: the runner that runs a
// task checks its mounts with its own allow-list, whatever was checked at
// submission. Tasks written to the store directly (no CheckSpec) with a
// mount outside the pool's allow-list, through a symlink that leads to /,
// or of a directory that does not exist end dead at their first attempt,
// outcome refused, with the reason; the other tasks run.
func TestPoolRefusesStoredMountsOutsideItsAllowList(t *testing.T) {
	t.Parallel()
	allowed, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink("/", filepath.Join(allowed, "root")))
	require.NoError(t, os.Mkdir(filepath.Join(allowed, "in"), 0o700))
	f := newFixture(t, pool.Config{Policy: tasks.Policy{MountsAllow: []string{allowed}}})
	ctx := context.Background()
	sha, err := f.store.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	submit := func(ms ...tasks.Mount) tasks.Task {
		task, _, err := f.store.Submit(ctx, tasks.Spec{Module: sha, Mounts: ms, MaxAttempts: 3})
		require.NoError(t, err)
		return task
	}
	refused := map[string]tasks.Task{
		"mount " + outside + " is not under this runner's mounts.allow [" + allowed + "]":    submit(tasks.Mount{HostPath: outside, GuestPath: "/o"}),
		"mount " + allowed + "/root (resolves to /) is not under this runner's mounts.allow": submit(tasks.Mount{HostPath: allowed + "/root", GuestPath: "/host", Writable: true}),
		"mount " + allowed + "/gone: the host directory does not exist":                      submit(tasks.Mount{HostPath: allowed + "/gone", GuestPath: "/g"}),
	}
	plain := submit()
	mounted := submit(tasks.Mount{HostPath: allowed + "/in", GuestPath: "/in"}, tasks.Mount{HostPath: allowed, GuestPath: "/all"})

	for reason, task := range refused {
		got := f.wait(t, task.ID)
		require.Equal(t, tasks.StateDead, got.State, reason)
		require.Contains(t, got.LastError, reason)
		as, err := f.store.Attempts(ctx, task.ID)
		require.NoError(t, err)
		require.Len(t, as, 1, "refused at once, not retried")
		require.Equal(t, string(pool.KindRefused), as[0].Outcome)
		require.Contains(t, as[0].Reason, reason)
	}
	require.Equal(t, tasks.StateSucceeded, f.wait(t, plain.ID).State)
	require.Equal(t, tasks.StateSucceeded, f.wait(t, mounted.ID).State)
}
