package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// TestPoolShowsClaimedUntilBegun: the tasks a pool claimed ahead, which
// wait behind its one busy worker, are shown claimed by it (BeganAt zero)
// and counted so, while the task its worker runs is shown running once the
// pool has marked it begun (tasks.Store.MarkBegun). Before, the store
// showed all of them running: 6 running with 1 worker.
func TestPoolShowsClaimedUntilBegun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, pool.Config{Workers: 1, ClaimAhead: time.Hour})
	warm := f.submit(t, "noop", tasks.Spec{}) // the pool learns that tasks are short: it claims ahead
	require.Equal(t, tasks.StateSucceeded, f.wait(t, warm.ID).State)
	sleeper := f.submit(t, "sleep", tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour}})
	f.waitRunning(t, sleeper.ID, 2)
	var held []tasks.Task
	for range 5 {
		held = append(held, f.submit(t, "noop", tasks.Spec{}))
	}
	testutil.WaitFor(t, "the pool to hold the 5 tasks for its worker", func() bool {
		if f.pl.Stats().Held == 5 {
			return true
		}
		f.pl.Wake()
		return false
	})
	testutil.WaitFor(t, "the sleeper to be shown running", func() bool {
		got, err := f.store.Get(ctx, sleeper.ID)
		require.NoError(t, err)
		return got.Shown() == tasks.StateRunning
	})
	for _, h := range held {
		got, err := f.store.Get(ctx, h.ID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateClaimed, got.Shown(), "no worker began task %d", h.ID)
		require.Equal(t, f.pl.Owner(), got.LeaseOwner, "claimed by its runner")
	}
	counts, err := f.store.CountTasks(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(5), counts.Total[tasks.StateClaimed])
	require.Equal(t, int64(1), counts.Total[tasks.StateRunning], "one worker, one running")
	f.pl.StopIntake()
	f.pl.ForceStop()
	<-f.pl.Idle()
}
