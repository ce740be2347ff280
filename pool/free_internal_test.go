package pool

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestClaimsOnlyForFreeWorkers: a pool whose workers are all busy, and
// that has not seen an attempt short enough to claim ahead for, claims
// nothing (its claim, claimOnce, asks the store for nothing): a task
// submitted meanwhile stays queued for another runner, which runs it while
// the first one's workers are still busy.
func TestClaimsOnlyForFreeWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	sleep := putFixture(t, store, "sleep")
	noop := putFixture(t, store, "noop")

	a, err := New(store, rt, Config{Workers: 2, Owner: "a", Poll: time.Hour})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	long := tasks.Spec{Module: sleep, Limits: tasks.Limits{Timeout: time.Hour}}
	_, err = tasks.SubmitMany(ctx, store, []tasks.Spec{long, long})
	require.NoError(t, err)
	a.Wake()
	testutil.WaitFor(t, "runner a's 2 workers to begin the sleepers", func() bool { return a.Stats().Started == 2 })

	task, _, err := store.Submit(ctx, tasks.Spec{Module: noop})
	require.NoError(t, err)
	n, err := a.claimOnce(func() {})
	require.NoError(t, err)
	require.Zero(t, n, "no free worker: nothing claimed")
	got, err := store.Get(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)

	b, err := New(store, rt, Config{Workers: 1, Owner: "b", Poll: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := b.Wait(wctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State)
	atts, err := store.Attempts(ctx, task.ID)
	require.NoError(t, err)
	require.Len(t, atts, 1)
	require.Equal(t, "b", atts[0].Owner)
	require.Equal(t, 2, a.Stats().Started, "runner a's workers are still busy")
	require.Zero(t, a.Stats().GivenBack)

	require.NoError(t, b.Stop(ctx))
	a.ForceStop()
	require.NoError(t, a.Stop(ctx))
}
