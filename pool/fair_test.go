package pool_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
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
	h := newHoldingPool(t, pool.Config{})
	var noisy []int64
	for range 5 {
		noisy = append(noisy, h.submit(t, h.noop, "noisy"))
	}
	testutil.WaitFor(t, "the noisy tenant's tasks held", func() bool { return h.pl.Stats().Held == 5 })
	quiet := h.submit(t, h.noop, "quiet")
	testutil.WaitFor(t, "the quiet tenant's task held too", func() bool { return h.pl.Stats().Held == 6 })
	started := h.unblock(t, append(noisy, quiet))
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
	h := newHoldingPool(t, pool.Config{Poll: 10 * time.Millisecond})
	// 14 held, queued at once and claimed in one claim: the room left
	// (17 - 15 = 2) is under half the target, so polls claim no more.
	specs := make([]tasks.Spec, 14)
	for i := range specs {
		specs[i] = tasks.Spec{Module: h.noop, Tenant: "noisy"}
	}
	subs, err := tasks.SubmitMany(ctx, h.store, specs)
	require.NoError(t, err)
	var noisy []int64
	for _, s := range subs {
		noisy = append(noisy, s.Task.ID)
	}
	h.pl.Wake()
	testutil.WaitFor(t, "the noisy tenant's tasks held", func() bool { return h.pl.Stats().Held == 14 })
	quiet := h.submit(t, h.noop, "quiet") // pl.Submit wakes the pool
	testutil.WaitFor(t, "the quiet tenant's task claimed on the wake-up", func() bool { return h.pl.Stats().Held == 15 })
	started := h.unblock(t, append(noisy, quiet))
	require.Equal(t, quiet, started[len(started)-15], "the quiet tenant's task did not start first of what was held")
}

// holdingPool is a pool of one worker blocked by a task that runs until
// cancelled (block), after short tasks of the tenant "noisy" made their
// average known, so that it claims short tasks ahead (up to ClaimBatch
// 16; ClaimAhead of a minute, so what it holds is never given back while
// the blocker runs); it records the order attempts start in.
type holdingPool struct {
	store   *sqlite.Store
	pl      *pool.Pool
	noop    string
	block   int64
	mu      sync.Mutex
	started []int64
}

// newHoldingPool starts a holdingPool with cfg's Poll, and returns once
// its blocker runs.
func newHoldingPool(t *testing.T, cfg pool.Config) *holdingPool {
	t.Helper()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	h := &holdingPool{store: store, noop: putFixture(t, store, "noop")}
	blocker := putFixture(t, store, "stop_aware")
	startedCh := make(chan int64, 64)
	cfg.Workers, cfg.ClaimBatch, cfg.ClaimAhead, cfg.Heartbeat = 1, 16, time.Minute, 20*time.Millisecond
	cfg.OnEvent = func(e pool.Event) {
		if e.Kind == pool.EventStarted {
			h.mu.Lock()
			h.started = append(h.started, e.TaskID)
			h.mu.Unlock()
			startedCh <- e.TaskID
		}
	}
	var err error
	h.pl, err = pool.New(store, rt, cfg)
	require.NoError(t, err)
	require.NoError(t, h.pl.Start(ctx))
	t.Cleanup(func() { require.NoError(t, h.pl.Stop(ctx)) })
	for range 3 { // the average attempt is then known: short tasks are claimed ahead
		waitSucceeded(t, h.pl, h.submit(t, h.noop, "noisy"))
	}
	h.block = h.submit(t, blocker, "noisy")
	for id := range startedCh {
		if id == h.block {
			break
		}
	}
	return h
}

// submit queues a task of module sha for tenant through the pool (which
// wakes it) and returns its id.
func (h *holdingPool) submit(t *testing.T, sha, tenant string) int64 {
	t.Helper()
	task, _, err := h.pl.Submit(context.Background(), tasks.Spec{Module: sha, Tenant: tenant})
	require.NoError(t, err)
	return task.ID
}

// unblock cancels the blocker (it sees stop_requested and exits), waits
// until every task of ids has succeeded, and returns the order attempts
// started in.
func (h *holdingPool) unblock(t *testing.T, ids []int64) []int64 {
	t.Helper()
	_, err := h.store.Cancel(context.Background(), h.block)
	require.NoError(t, err)
	for _, id := range ids {
		waitSucceeded(t, h.pl, id)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.started)
}
