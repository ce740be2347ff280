package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// TestLostToCrashes: Stats.LostToCrashes (stint_pool_attempts_lost_to_
// crashes_total) counts every attempt lost to a crash once, a streak of
// two included, and the loss that makes the task dead too, though no
// attempt of it starts after. Two runners die running the task: the first
// is recovered at a start (RecoverRunning), the second's lease expires
// and the pool's claim takes it over, at LostLimit 2: the task is dead.
func TestLostToCrashes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := pool.StoreAndRuntime(t)
	sha := putFixture(t, store, "noop")
	task, _, err := store.Submit(ctx, tasks.Spec{Module: sha, MaxAttempts: 5})
	require.NoError(t, err)
	claim := func(owner string, lease time.Duration) {
		t.Helper()
		cl, err := store.Claim(ctx, tasks.ClaimRequest{Owner: owner, Max: 1, Lease: lease, LostLimit: 2})
		require.NoError(t, err)
		require.Len(t, cl, 1)
	}
	claim("died-a", time.Hour)
	n, err := store.RecoverRunning(ctx, 2) // died-a's restart
	require.NoError(t, err)
	require.Equal(t, 1, n)
	claim("died-b", time.Millisecond) // dies too: its lease expires at once

	pl, err := pool.New(store, rt, pool.Config{Workers: 1, Poll: 5 * time.Millisecond, LostLimit: 2})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	t.Cleanup(func() { require.NoError(t, pl.Stop(ctx)) })
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	done, err := pl.Wait(wctx, task.ID) // its claims take over died-b's lease
	require.NoError(t, err)
	require.Equal(t, tasks.StateDead, done.State)
	require.Contains(t, done.LastError, tasks.LostLimitReason(2))
	st := pl.Stats()
	require.Zero(t, st.Started, "no attempt of the dead task started")
	require.Equal(t, 2, st.LostToCrashes, "both lost attempts, the one that made the task dead included")
}
