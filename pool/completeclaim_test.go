package pool_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// claimsWithCompletions is a store (tasks.CompletingClaimer) that counts
// the tasks claimed with completions.
type claimsWithCompletions struct {
	tasks.Store
	together, claimed *atomic.Int32
}

func (s claimsWithCompletions) CompleteAndClaim(ctx context.Context, cs []tasks.Completion, req tasks.ClaimRequest) ([]error, []tasks.Claimed, error) {
	s.together.Add(1)
	errs, err := s.Store.Complete(ctx, cs)
	if err != nil {
		return errs, nil, err
	}
	claimed, _ := s.Store.Claim(ctx, req)
	s.claimed.Add(int32(len(claimed)))
	return errs, claimed, nil
}

// TestPoolClaimsWithCompletions: a pool over a tasks.CompletingClaimer
// claims the room its finished attempts leave with their completions (in
// the same transaction) when no claim of its claim loop is under way: of
// 20 tasks, run one at a time, some are claimed that way, and every one
// succeeds at its first attempt.
func TestPoolClaimsWithCompletions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	ids := submitNoops(t, store, 20)
	s := claimsWithCompletions{Store: store, together: new(atomic.Int32), claimed: new(atomic.Int32)}
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
	require.Positive(t, s.claimed.Load(), "tasks claimed with completions (%d writes)", s.together.Load())
}
