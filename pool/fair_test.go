package pool_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// TestPoolTakesTenantsInTurn: a pool of one worker starts the tasks of a
// tenant submitted behind another tenant's backlog in turn with it, not
// after it (fair claims, tasks/fair.go), whatever it claims ahead.
func TestPoolTakesTenantsInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	sha := putFixture(t, store, "noop")
	tenant := map[int64]string{}
	for _, tn := range []string{"big", "big", "big", "big", "big", "big", "big", "big", "big", "big", "small", "small"} {
		task, _, err := store.Submit(ctx, tasks.Spec{Module: sha, Tenant: tn})
		require.NoError(t, err)
		tenant[task.ID] = tn
	}
	var mu sync.Mutex
	var started []string
	pl, err := pool.New(store, rt, pool.Config{Workers: 1, OnEvent: func(e pool.Event) {
		if e.Kind == pool.EventStarted {
			mu.Lock()
			started = append(started, tenant[e.TaskID])
			mu.Unlock()
		}
	}})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() { require.NoError(t, pl.Stop(ctx)) }()
	for id := range tenant {
		waitSucceeded(t, pl, id)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, started, 12)
	require.Equal(t, []string{"big", "small", "big", "small"}, started[:4], "in turn: %v", started)
}

// TestPoolStartsAnotherTenantBeforeWhatItHolds: with a tenant's tasks
// claimed ahead and waiting for the one busy worker, another tenant's
// task claimed after them is started first, when the worker frees: a
// tenant's backlog held by a runner delays another tenant's next task by
// no more than the attempts running (Pool's hand). Within a tenant the
// order stays the claim's.
func TestPoolStartsAnotherTenantBeforeWhatItHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	noop := putFixture(t, store, "noop")
	blocker := putFixture(t, store, "stop_aware")
	var mu sync.Mutex
	var started []int64
	startedCh := make(chan int64, 64)
	// ClaimAhead of a minute: what is held is never given back while the
	// blocker runs, and short tasks are claimed ahead once their average
	// is known.
	pl, err := pool.New(store, rt, pool.Config{Workers: 1, ClaimBatch: 16, ClaimAhead: time.Minute, Heartbeat: 20 * time.Millisecond,
		OnEvent: func(e pool.Event) {
			if e.Kind == pool.EventStarted {
				mu.Lock()
				started = append(started, e.TaskID)
				mu.Unlock()
				startedCh <- e.TaskID
			}
		}})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() { require.NoError(t, pl.Stop(ctx)) }()
	submit := func(sha, tenant string) int64 {
		task, _, err := pl.Submit(ctx, tasks.Spec{Module: sha, Tenant: tenant})
		require.NoError(t, err)
		return task.ID
	}
	for range 3 { // the average attempt is then known: short tasks are claimed ahead
		waitSucceeded(t, pl, submit(noop, "noisy"))
	}
	block := submit(blocker, "noisy")
	for id := range startedCh {
		if id == block {
			break
		}
	}
	var noisy []int64
	for range 5 {
		noisy = append(noisy, submit(noop, "noisy"))
	}
	testutil.WaitFor(t, "the noisy tenant's tasks held", func() bool { return pl.Stats().Held == 5 })
	quiet := submit(noop, "quiet")
	testutil.WaitFor(t, "the quiet tenant's task held too", func() bool { return pl.Stats().Held == 6 })
	_, err = store.Cancel(ctx, block) // the blocker sees stop_requested and exits
	require.NoError(t, err)
	for _, id := range append(noisy, quiet) {
		waitSucceeded(t, pl, id)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, append([]int64{quiet}, noisy...), started[len(started)-6:], "the quiet tenant's task waited behind the noisy one's held backlog")
}

// A Wake while the pool holds a tenant's backlog claimed ahead, past the
// point where it refills (half the target), claims at once: another
// tenant's new task is claimed and started before the held backlog, not
// after the refill (which, here, would never come: the one worker is
// blocked).
func TestPoolClaimsAnotherTenantAtOnceWhenWoken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	noop := putFixture(t, store, "noop")
	blocker := putFixture(t, store, "stop_aware")
	var mu sync.Mutex
	var started []int64
	startedCh := make(chan int64, 64)
	pl, err := pool.New(store, rt, pool.Config{Workers: 1, ClaimBatch: 16, ClaimAhead: time.Minute, Heartbeat: 20 * time.Millisecond,
		Poll: 10 * time.Millisecond,
		OnEvent: func(e pool.Event) {
			if e.Kind == pool.EventStarted {
				mu.Lock()
				started = append(started, e.TaskID)
				mu.Unlock()
				startedCh <- e.TaskID
			}
		}})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() { require.NoError(t, pl.Stop(ctx)) }()
	submit := func(sha, tenant string) int64 {
		task, _, err := pl.Submit(ctx, tasks.Spec{Module: sha, Tenant: tenant})
		require.NoError(t, err)
		return task.ID
	}
	for range 3 { // the average attempt is then known: short tasks are claimed ahead
		waitSucceeded(t, pl, submit(noop, "noisy"))
	}
	block := submit(blocker, "noisy")
	for id := range startedCh {
		if id == block {
			break
		}
	}
	// 14 held, queued at once and claimed in one claim: the room left
	// (17 - 15 = 2) is under half the target, so polls claim no more.
	specs := make([]tasks.Spec, 14)
	for i := range specs {
		specs[i] = tasks.Spec{Module: noop, Tenant: "noisy"}
	}
	subs, err := tasks.SubmitMany(ctx, store, specs)
	require.NoError(t, err)
	var noisy []int64
	for _, s := range subs {
		noisy = append(noisy, s.Task.ID)
	}
	pl.Wake()
	testutil.WaitFor(t, "the noisy tenant's tasks held", func() bool { return pl.Stats().Held == 14 })
	quiet := submit(noop, "quiet") // pl.Submit wakes the pool
	testutil.WaitFor(t, "the quiet tenant's task claimed on the wake-up", func() bool { return pl.Stats().Held == 15 })
	_, err = store.Cancel(ctx, block) // the blocker sees stop_requested and exits
	require.NoError(t, err)
	for _, id := range append(noisy, quiet) {
		waitSucceeded(t, pl, id)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, quiet, started[len(started)-15], "the quiet tenant's task did not start first of what was held")
}
