package pool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
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
	sha, err := store.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
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
