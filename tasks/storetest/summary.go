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
	require.Empty(t, counts.ByQueue)
	require.Zero(t, counts.Total[tasks.StateQueued]+counts.Total[tasks.StateSucceeded])

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

	okSpec := e.spec()
	okSpec.Queue = "other"
	s1 := e.submit(okSpec)
	cl := e.claimOne("a", s1.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	d1 := e.submit(e.spec())
	cl = e.claimOne("a", d1.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", Counted: true}}))

	counts, err = sm.CountTasks(e.ctx)
	require.NoError(t, err)
	byQueue := map[string]map[tasks.State]int64{}
	for _, c := range counts.ByQueue {
		require.Positive(t, c.Count)
		if byQueue[c.Queue] == nil {
			byQueue[c.Queue] = map[tasks.State]int64{}
		}
		byQueue[c.Queue][c.State] = c.Count
	}
	want := map[string]map[tasks.State]int64{
		"default": {tasks.StateQueued: 2, tasks.StateRunning: 1, tasks.StateDead: 1},
		"other":   {tasks.StateCancelled: 1, tasks.StateQueued: 1},
	}
	if counts.SucceededByQueue {
		want["other"][tasks.StateSucceeded] = 1
	}
	require.Equal(t, want, byQueue)
	for st, n := range map[tasks.State]int64{tasks.StateQueued: 3, tasks.StateRunning: 1, tasks.StateSucceeded: 1,
		tasks.StateDead: 1, tasks.StateCancelled: 1} {
		require.Equal(t, n, counts.Total[st], "total %s", st)
	}

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
	require.Equal(t, []int64{d1.ID, s1.ID, r1.ID, c1.ID, o1.ID, q2.ID, q1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{})))
	require.Equal(t, []int64{d1.ID, s1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{Limit: 2})))
	require.Equal(t, []int64{o1.ID, q2.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{BeforeID: c1.ID, Limit: 2})))
	require.Equal(t, []int64{o1.ID, q2.ID, q1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateQueued})))
	require.Equal(t, []int64{c1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateCancelled})))
	require.Equal(t, []int64{d1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateDead})))
	require.Equal(t, []int64{s1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateSucceeded})))
	require.Equal(t, []int64{s1.ID, c1.ID, o1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{Queue: "other"})))
	require.Equal(t, []int64{q1.ID}, ids(sm.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateQueued, Queue: "default", BeforeID: q2.ID})))
	_, err = sm.ListNewest(e.ctx, tasks.NewestFilter{State: "bogus"})
	require.Error(t, err)
}
