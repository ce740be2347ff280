package stint_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// SubmitClaimed on SQLite stores new tasks already claimed by the pool
// (running, attempt 1) and runs them; stored sees every task before the
// pool does; a key used again returns the existing task, not claimed.
func TestSubmitClaimed(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{Pool: pool.Config{Queues: map[string]int{"mine": 0}}})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	require.NoError(t, r.Start(ctx))
	sha, err := r.PutModule(ctx, wat.MustLoad("upper"))
	require.NoError(t, err)
	var specs []tasks.Spec
	for i := range 5 {
		specs = append(specs, tasks.Spec{Module: sha, Queue: "mine", MaxAttempts: 1,
			Input: fmt.Appendf(nil, "input %d\n", i), IdempotencyKey: fmt.Sprint("k", i)})
	}
	var seen []tasks.Submitted
	subs, err := r.SubmitClaimed(ctx, specs, func(subs []tasks.Submitted) error {
		seen = subs
		for _, s := range subs {
			require.False(t, s.Existing)
			require.Equal(t, tasks.StateRunning, s.Task.State, "stored claimed")
			require.Equal(t, r.Owner(), s.Task.LeaseOwner)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, seen, subs)
	for i, s := range subs {
		done, err := r.Wait(ctx, s.Task.ID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateSucceeded, done.State)
		require.Equal(t, fmt.Sprintf("INPUT %d\n", i), string(done.Result))
	}

	again, err := r.SubmitMany(ctx, specs[:2])
	require.NoError(t, err)
	for i, s := range again {
		require.True(t, s.Existing)
		require.Equal(t, subs[i].Task.ID, s.Task.ID)
	}
}
