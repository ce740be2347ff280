package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// testWaiting: CountTasks says, per queue, how many queued tasks are
// scheduled for later, and since when its oldest ready task has waited (a
// task is ready from its RunAt: its submission, a later RunAt, a retry's
// backoff); running tasks are neither; the clock moving makes scheduled
// tasks ready.
func testWaiting(t *testing.T, e *env) {
	waiting := func() map[string]tasks.QueueWaiting {
		t.Helper()
		c, err := e.s.CountTasks(e.ctx)
		require.NoError(t, err)
		require.Equal(t, e.clock.Now(), c.Now)
		out := map[string]tasks.QueueWaiting{}
		for _, w := range c.Waiting {
			out[w.Queue] = w
		}
		return out
	}
	require.Empty(t, waiting())
	later := e.spec()
	later.RunAt = Start.Add(time.Hour)
	e.submitN(2, later)
	e.clock.Advance(time.Minute)
	ready := e.submit(e.spec())
	e.clock.Advance(time.Minute)
	e.submit(e.spec())
	other := e.spec()
	other.Queue = "other"
	run := e.submit(other)
	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 10, Lease: lease, Queues: map[string]int{"other": 1}})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, run.ID, cl[0].Task.ID)
	require.Equal(t, map[string]tasks.QueueWaiting{
		"default": {Queue: "default", Scheduled: 2, OldestReady: Start.Add(time.Minute)},
	}, waiting(), "the running task waits for nothing")

	cl = e.claim("a", 1)
	require.Len(t, cl, 1)
	require.Equal(t, ready.ID, cl[0].Task.ID)
	e.clock.Advance(2 * time.Hour)
	require.Equal(t, map[string]tasks.QueueWaiting{
		"default": {Queue: "default", Scheduled: 0, OldestReady: Start.Add(2 * time.Minute)},
	}, waiting(), "claimed: the next oldest; the scheduled ones ready at their RunAt, later")
}

// testSummary checks tasks.Store.CountTasks and ListNewest: counts by
// queue and state, and the newest tasks first with every filter.
func testSummary(t *testing.T, e *env) {
	counts, err := e.s.CountTasks(e.ctx)
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

	counts, err = e.s.CountTasks(e.ctx)
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
		"default": {tasks.StateQueued: 2, tasks.StateClaimed: 1, tasks.StateDead: 1}, // no worker began r1
		"other":   {tasks.StateCancelled: 1, tasks.StateQueued: 1},
	}
	if counts.SucceededByQueue {
		want["other"][tasks.StateSucceeded] = 1
	}
	require.Equal(t, want, byQueue)
	for st, n := range map[tasks.State]int64{tasks.StateQueued: 3, tasks.StateClaimed: 1, tasks.StateRunning: 0, tasks.StateSucceeded: 1,
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
	require.Equal(t, []int64{d1.ID, s1.ID, r1.ID, c1.ID, o1.ID, q2.ID, q1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{})))
	require.Equal(t, []int64{d1.ID, s1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{Limit: 2})))
	require.Equal(t, []int64{o1.ID, q2.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{BeforeID: c1.ID, Limit: 2})))
	require.Equal(t, []int64{o1.ID, q2.ID, q1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateQueued})))
	require.Equal(t, []int64{c1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateCancelled})))
	require.Equal(t, []int64{d1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateDead})))
	require.Equal(t, []int64{s1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateSucceeded})))
	require.Equal(t, []int64{s1.ID, c1.ID, o1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{Queue: "other"})))
	require.Equal(t, []int64{q1.ID}, ids(e.s.ListNewest(e.ctx, tasks.NewestFilter{State: tasks.StateQueued, Queue: "default", BeforeID: q2.ID})))
	_, err = e.s.ListNewest(e.ctx, tasks.NewestFilter{State: "bogus"})
	require.Error(t, err)
}
