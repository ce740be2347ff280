package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestCompleteAndClaim: completions and a claim in one round trip keep
// Complete's fencing (a stale lease refused, the others written, each
// once) and Claim's results, and the claim sees the completions: a task
// queued again ready at once is claimed by it, under the next token.
func TestCompleteAndClaim(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t), postgres.Options{})
	ctx := t.Context()
	h := putModule(t, s)
	var ids []int64
	for range 3 {
		task, _, err := s.Submit(ctx, tasks.Spec{Module: h})
		require.NoError(t, err)
		ids = append(ids, task.ID)
	}
	req := func(max int) tasks.ClaimRequest {
		return tasks.ClaimRequest{Owner: "o", Max: max, Lease: time.Minute}
	}
	first, err := s.Claim(ctx, req(1))
	require.NoError(t, err)
	require.Len(t, first, 1)
	l := first[0].Lease
	stale := tasks.Lease{TaskID: l.TaskID, Owner: l.Owner, Token: l.Token + 5}

	errs, claimed, err := s.CompleteAndClaim(ctx, []tasks.Completion{
		{Lease: stale, State: tasks.StateDead},
		{Lease: l, State: tasks.StateSucceeded, Result: []byte("r")},
	}, req(5))
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], tasks.ErrStaleLease)
	require.NoError(t, errs[1])
	require.Len(t, claimed, 2)
	require.ElementsMatch(t, ids[1:], []int64{claimed[0].Task.ID, claimed[1].Task.ID})
	done, err := s.Get(ctx, l.TaskID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State)
	as, err := s.Attempts(ctx, l.TaskID)
	require.NoError(t, err)
	require.Len(t, as, 1, "one attempt recorded")

	// Queued again at once, not counted: the claim in the same trip takes it.
	again := claimed[0]
	errs, claimed, err = s.CompleteAndClaim(ctx, []tasks.Completion{
		{Lease: again.Lease, State: tasks.StateQueued},
	}, req(5))
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Len(t, claimed, 1)
	require.Equal(t, again.Task.ID, claimed[0].Task.ID)
	require.Equal(t, again.Lease.Token+1, claimed[0].Lease.Token)

	// The old lease is fenced out; nothing to claim is no error.
	errs, claimed, err = s.CompleteAndClaim(ctx, []tasks.Completion{
		{Lease: again.Lease, State: tasks.StateSucceeded},
	}, req(5))
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], tasks.ErrStaleLease)
	require.Empty(t, claimed)
}
