package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestPauseAcrossRunners: a queue paused through one runner's store is not
// claimed by another runner's that reads the paused queues at each claim
// (PausedRecheck negative), and is again once resumed; with the default,
// the other runner reads them again within a second.
func TestPauseAcrossRunners(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := open(t, schema, postgres.Options{})
	b := open(t, schema, postgres.Options{PausedRecheck: -1})
	ctx := t.Context()
	h := putModule(t, a)
	claim := func(s *postgres.Store, queues map[string]int) []tasks.Claimed {
		t.Helper()
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "o", Max: 10, Lease: time.Minute, Queues: queues})
		require.NoError(t, err)
		return cl
	}
	require.Empty(t, claim(b, nil)) // b has read the paused queues: none
	require.NoError(t, a.PauseQueue(ctx, "held"))
	held, _, err := a.Submit(ctx, tasks.Spec{Module: h, Queue: "held", Priority: 1})
	require.NoError(t, err)
	free, _, err := a.Submit(ctx, tasks.Spec{Module: h, Queue: "free"})
	require.NoError(t, err)
	cl := claim(b, nil)
	require.Len(t, cl, 1, "b claimed a task of the paused queue, or not the free one")
	require.Equal(t, free.ID, cl[0].Task.ID)
	require.Empty(t, claim(b, map[string]int{"held": 5, "free": 5}))

	// The default store: a pause within a second, whatever it read before.
	c := open(t, schema, postgres.Options{})
	require.NoError(t, a.ResumeQueue(ctx, "held"))
	require.NoError(t, a.PauseQueue(ctx, "held"))
	require.Empty(t, claim(c, nil), "c read the pause at its first claim")

	require.NoError(t, a.ResumeQueue(ctx, "held"))
	cl = claim(b, nil)
	require.Len(t, cl, 1)
	require.Equal(t, held.ID, cl[0].Task.ID)
}
