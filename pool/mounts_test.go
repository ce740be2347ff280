package pool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
	sha := putFixture(t, f.store, "noop")
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

// TestPoolMountsRaceASwappedDirectory: the issue-24 attack. Something
// with write access under the allow-list (a guest with a read-write mount
// of allowed/box, here a goroutine doing what it could) renames a
// directory that other tasks mount and puts a relative symlink to a
// directory outside the allow-list in its place, then puts it back, over
// and over, while tasks that mount it run. Each task either runs with the
// real directory mounted (it reads "inside") or is refused; none ever
// mounts the outside directory (it never reads "SECRET").
func TestPoolMountsRaceASwappedDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	allowed, outside := filepath.Join(base, "allowed"), filepath.Join(base, "outside")
	box := filepath.Join(allowed, "box")
	d, moved := filepath.Join(box, "d"), filepath.Join(box, "d.real")
	require.NoError(t, os.MkdirAll(d, 0o700))
	require.NoError(t, os.Mkdir(outside, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(d, "secret.txt"), []byte("inside"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("SECRET"), 0o600))

	f := newFixture(t, pool.Config{Workers: 4, Policy: tasks.Policy{MountsAllow: []string{allowed}}})
	ctx := context.Background()
	sha := putFixture(t, f.store, "mount_escape")

	stop, swapped := make(chan struct{}), make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				swapped <- nil
				return
			default:
			}
			for _, step := range []func() error{
				func() error { return os.Rename(d, moved) },
				func() error { return os.Symlink("../../outside", d) },
				func() error { return os.Remove(d) },
				func() error { return os.Rename(moved, d) },
			} {
				if err := step(); err != nil {
					swapped <- fmt.Errorf("swap %d: %w", n, err)
					return
				}
			}
			n++
		}
	}()

	const n = 200
	ids := make([]int64, n)
	for i := range ids {
		// Into the store directly: the pool's own check is the one tested.
		task, _, err := f.store.Submit(ctx, tasks.Spec{Module: sha, Args: []string{"x", "secret.txt"},
			Mounts: []tasks.Mount{{HostPath: d, GuestPath: "/d"}}, MaxAttempts: 1})
		require.NoError(t, err)
		ids[i] = task.ID
	}
	ran, refused := 0, 0
	for _, id := range ids {
		got := f.wait(t, id)
		require.NotContains(t, string(got.Result), "SECRET", "task %d mounted a directory outside the allow-list", id)
		require.NotContains(t, got.LastError, "SECRET")
		switch got.State {
		case tasks.StateSucceeded:
			require.Contains(t, string(got.Result), "read 0 inside\n")
			ran++
		case tasks.StateDead:
			as := attempts(t, f.store, id)
			require.Len(t, as, 1)
			require.Equal(t, string(pool.KindRefused), as[0].Outcome, as[0].Reason)
			refused++
		default:
			t.Fatalf("task %d: %s", id, got.State)
		}
	}
	close(stop)
	require.NoError(t, <-swapped)
	require.Equal(t, n, ran+refused)
	t.Logf("%d tasks ran with the real directory, %d were refused", ran, refused)
}
