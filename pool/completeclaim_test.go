package pool_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// claimsWithCompletions is a store (tasks.CompletingClaimer) whose plain
// Claim finds work only the first time: every later task must be claimed
// with the completions of the ones before.
type claimsWithCompletions struct {
	tasks.Store
	plain, together *atomic.Int32
}

func (s claimsWithCompletions) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	if s.plain.Add(1) > 1 {
		return nil, nil
	}
	return s.Store.Claim(ctx, req)
}

func (s claimsWithCompletions) CompleteAndClaim(ctx context.Context, cs []tasks.Completion, req tasks.ClaimRequest) ([]error, []tasks.Claimed, error) {
	s.together.Add(1)
	errs, err := s.Store.Complete(ctx, cs)
	if err != nil {
		return errs, nil, err
	}
	claimed, _ := s.Store.Claim(ctx, req)
	return errs, claimed, nil
}

// TestPoolClaimsWithCompletions: a pool over a tasks.CompletingClaimer
// claims the room its finished attempts leave with their completions; all
// 20 tasks, of which a plain claim finds only the first, succeed, each at
// its first attempt.
func TestPoolClaimsWithCompletions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	sha, err := store.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	var ids []int64
	for range 20 {
		task, _, err := store.Submit(ctx, tasks.Spec{Module: sha})
		require.NoError(t, err)
		ids = append(ids, task.ID)
	}
	s := claimsWithCompletions{Store: store, plain: new(atomic.Int32), together: new(atomic.Int32)}
	pl, err := pool.New(s, rt, pool.Config{Workers: 1, ClaimBatch: 2, Poll: time.Hour})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() { require.NoError(t, pl.Stop(ctx)) }()
	for _, id := range ids {
		waitSucceeded(t, pl, id)
		task, err := store.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, 1, task.Attempt, "task %d", id)
	}
	require.GreaterOrEqual(t, s.together.Load(), int32(9), "20 tasks, at most 2 a claim")
}
