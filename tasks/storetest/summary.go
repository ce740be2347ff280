package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// testSummary checks tasks.Summarizer: counts by queue and state, and the
// newest tasks first with every filter.
func testSummary(t *testing.T, e *env) {
	sm, ok := e.s.(tasks.Summarizer)
	if !ok {
		t.Skip("the store does not implement tasks.Summarizer")
	}
	counts, err := sm.CountTasks(e.ctx)
	require.NoError(t, err)
	require.Empty(t, counts)

	later := e.spec()
	later.RunAt = Start.Add(24 * time.Hour) // stays queued
	q1 := e.submit(later)
	q2 := e.submit(later)
	other := later
	other.Queue = "other"
	o1 := e.submit(other)
	c1 := e.submit(other)
	_, err = e.s.Cancel(e.ctx, c1.ID)
	require.NoError(t, err)
	r1 := e.submit(e.spec())
	e.claimOne("a", r1.ID)

	counts, err = sm.CountTasks(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []tasks.QueueCount{
		{Queue: "default", State: tasks.StateQueued, Count: 2},
		{Queue: "default", State: tasks.StateRunning, Count: 1},
		{Queue: "other", State: tasks.StateCancelled, Count: 1},
		{Queue: "other", State: tasks.StateQueued, Count: 1},
	}, counts)

	ids := func(ts []tasks.Task, err error) []int64 {
		t.Helper()
		require.NoError(t, err)
		require.NotNil(t, ts)
		out := []int64{}
		for _, tk := range ts {
			require.Nil(t, tk.Input)
			out = append(out, tk.ID)
		}
		return out
	}
	require.Equal(t, []int64{r1.ID, c1.ID, o1.ID, q2.ID, q1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{})))
	require.Equal(t, []int64{r1.ID, c1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{Limit: 2})))
	require.Equal(t, []int64{o1.ID, q2.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{BeforeID: c1.ID, Limit: 2})))
	require.Equal(t, []int64{o1.ID, q2.ID, q1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateQueued})))
	require.Equal(t, []int64{c1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateCancelled})))
	require.Equal(t, []int64{}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateDead})))
	require.Equal(t, []int64{c1.ID, o1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{Queue: "other"})))
	require.Equal(t, []int64{q1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateQueued, Queue: "default", BeforeID: q2.ID})))
	_, err = sm.ListNewest(e.ctx, tasks.NewestFilter{State: "bogus"})
	require.Error(t, err)
}
