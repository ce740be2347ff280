package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// testPause checks tasks.Store.PauseQueue: a paused queue's tasks are not
// claimed, by a claim of every queue or of that queue, other queues' are;
// the pause is listed, kept and idempotent; a resume makes them claimable.
func testPause(t *testing.T, e *env) {
	spec := e.spec()
	spec.Queue = "held"
	held := e.submit(spec)
	spec.Queue = "free"
	spec.Priority = -1 // after held in claim order
	free := e.submit(spec)

	require.NoError(t, e.s.PauseQueue(e.ctx, "held"))
	e.clock.Advance(time.Second)
	require.NoError(t, e.s.PauseQueue(e.ctx, "held"), "pausing twice")
	require.NoError(t, e.s.PauseQueue(e.ctx, "empty"), "a queue with no task")
	ps, err := e.s.PausedQueues(e.ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	require.Equal(t, "empty", ps[0].Queue)
	require.Equal(t, "held", ps[1].Queue)
	require.True(t, ps[1].PausedAt.Equal(Start), "the first pause's time is kept: %v", ps[1].PausedAt)

	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 10, Lease: lease, Queues: map[string]int{"held": 5}})
	require.NoError(t, err)
	require.Empty(t, cl, "a claim of the paused queue alone")
	e.claimOne("a", free.ID) // a claim of every queue skips held
	require.Empty(t, e.claim("a", 10))
	require.Equal(t, tasks.StateQueued, e.get(held.ID).State)

	require.ErrorIs(t, e.s.PauseQueue(e.ctx, ""), tasks.ErrInvalidSpec)
	require.NoError(t, e.s.ResumeQueue(e.ctx, "held"))
	require.NoError(t, e.s.ResumeQueue(e.ctx, "never-paused"))
	ps, err = e.s.PausedQueues(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []tasks.PausedQueue{{Queue: "empty", PausedAt: Start.Add(time.Second)}}, ps)
	cl, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 10, Lease: lease, Queues: map[string]int{"held": 5, "empty": 5}})
	require.NoError(t, err)
	require.Equal(t, []int64{held.ID}, ids(cl))
}

// testDelete checks tasks.Store.Delete: a task that is not running
// goes with its attempts; a running one is refused; an unknown one is
// not found.
func testDelete(t *testing.T, e *env) {
	spec := e.spec()
	spec.Input = []byte("in")
	spec.IdempotencyKey = "k"
	done := e.submit(spec)
	cl := e.claimOne("a", done.ID)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("cp")))
	require.ErrorIs(t, e.s.Delete(e.ctx, done.ID), tasks.ErrInvalidState, "running")
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded, Result: []byte("out"),
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	queued := e.submit(e.spec())

	require.NoError(t, e.s.Delete(e.ctx, done.ID))
	require.NoError(t, e.s.Delete(e.ctx, queued.ID))
	_, err := e.s.Get(e.ctx, done.ID)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	require.ErrorIs(t, e.s.Delete(e.ctx, done.ID), tasks.ErrNotFound)
	require.Empty(t, e.all(tasks.ListFilter{}))
	as, err := e.s.Attempts(e.ctx, done.ID)
	if err == nil {
		require.Empty(t, as)
	}
	// The key is free again.
	again := e.submit(spec)
	require.NotEqual(t, done.ID, again.ID)
	c, err := e.s.CountTasks(e.ctx)
	require.NoError(t, err)
	require.Zero(t, c.Total[tasks.StateSucceeded], "the deleted succeeded task is not counted")
}

// testBulk checks tasks.Bulk on the store: a count selects by state,
// queue, label and age; the act does what it counted.
func testBulk(t *testing.T, e *env) {
	dead := func(queue string, labels map[string]string) tasks.Task {
		spec := e.spec()
		spec.Queue = queue
		spec.Labels = labels
		tk := e.submit(spec)
		cl := e.claimOne("a", tk.ID)
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
			Attempt: tasks.Attempt{Outcome: "failed", Counted: true}}))
		return tk
	}
	old := dead("q", map[string]string{"src": "api"})
	e.clock.Advance(2 * time.Hour)
	d2 := dead("q", map[string]string{"src": "cli"})
	d3 := dead("other", map[string]string{"src": "api"})
	queued := e.submit(e.spec())

	count := func(a tasks.Action, f tasks.BulkFilter) int {
		t.Helper()
		r, err := tasks.Bulk(e.ctx, e.s, a, f, true)
		require.NoError(t, err)
		require.Zero(t, r.Done)
		return r.Matched
	}
	require.Equal(t, 3, count(tasks.ActionRetry, tasks.BulkFilter{State: tasks.StateDead}))
	require.Equal(t, 2, count(tasks.ActionRetry, tasks.BulkFilter{Queue: "q"}))
	require.Equal(t, 2, count(tasks.ActionRetry, tasks.BulkFilter{Labels: map[string]string{"src": "api"}}))
	require.Equal(t, 1, count(tasks.ActionRetry, tasks.BulkFilter{Before: e.clock.Now().Add(-time.Hour)}))
	require.Equal(t, 1, count(tasks.ActionCancel, tasks.BulkFilter{All: true}))
	require.Equal(t, 0, count(tasks.ActionRetry, tasks.BulkFilter{State: tasks.StateQueued}))
	_, err := tasks.Bulk(e.ctx, e.s, tasks.ActionRetry, tasks.BulkFilter{}, true)
	require.ErrorIs(t, err, tasks.ErrInvalidSpec, "no filter")

	r, err := tasks.Bulk(e.ctx, e.s, tasks.ActionRetry, tasks.BulkFilter{Queue: "q", Labels: map[string]string{"src": "cli"}}, false)
	require.NoError(t, err)
	require.Equal(t, tasks.BulkResult{Action: tasks.ActionRetry, Matched: 1, Done: 1}, r)
	require.Equal(t, tasks.StateQueued, e.get(d2.ID).State)
	require.Equal(t, tasks.StateDead, e.get(old.ID).State)

	r, err = tasks.Bulk(e.ctx, e.s, tasks.ActionDelete, tasks.BulkFilter{State: tasks.StateDead}, false)
	require.NoError(t, err)
	require.Equal(t, 2, r.Done)
	_, err = e.s.Get(e.ctx, d3.ID)
	require.ErrorIs(t, err, tasks.ErrNotFound)

	r, err = tasks.Bulk(e.ctx, e.s, tasks.ActionCancel, tasks.BulkFilter{All: true}, false)
	require.NoError(t, err)
	require.Equal(t, 2, r.Done)
	require.Equal(t, tasks.StateCancelled, e.get(queued.ID).State)
}

// testModuleNames checks tasks.Store.NameModule and ModuleNames.
func testModuleNames(t *testing.T, e *env) {
	names, err := e.s.ModuleNames(e.ctx, []string{e.module})
	require.NoError(t, err)
	require.Empty(t, names)
	require.NoError(t, e.s.NameModule(e.ctx, e.module, "hello.wasm"))
	require.NoError(t, e.s.NameModule(e.ctx, e.module, "hello.wasm"))
	require.ErrorIs(t, e.s.NameModule(e.ctx, "00", "x"), tasks.ErrModuleNotFound)
	require.ErrorIs(t, e.s.NameModule(e.ctx, e.module, ""), tasks.ErrInvalidSpec)
	require.ErrorIs(t, e.s.NameModule(e.ctx, e.module, "a\nb"), tasks.ErrInvalidSpec)
	names, err = e.s.ModuleNames(e.ctx, []string{e.module, "00", e.module})
	require.NoError(t, err)
	require.Equal(t, map[string]string{e.module: "hello.wasm"}, names)
	require.NoError(t, e.s.NameModule(e.ctx, e.module, "renamed.wasm"))
	names, err = e.s.ModuleNames(e.ctx, []string{e.module})
	require.NoError(t, err)
	require.Equal(t, "renamed.wasm", names[e.module])
}

// testCountsSucceededByQueue checks that a queue holding only succeeded
// tasks is counted by queue.
func testCountsSucceededByQueue(t *testing.T, e *env) {
	spec := e.spec()
	spec.Queue = "done-only"
	for range 2 {
		tk := e.submit(spec)
		cl := e.claimOne("a", tk.ID)
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded,
			Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	}
	c, err := e.s.CountTasks(e.ctx)
	require.NoError(t, err)
	require.True(t, c.SucceededByQueue)
	require.Equal(t, []tasks.QueueCount{{Queue: "done-only", State: tasks.StateSucceeded, Count: 2}}, c.ByQueue)
	require.Equal(t, int64(2), c.Total[tasks.StateSucceeded])
	e.clock.Advance(time.Hour)
	n, err := e.s.Prune(e.ctx, e.clock.Now())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	c, err = e.s.CountTasks(e.ctx)
	require.NoError(t, err)
	require.Empty(t, c.ByQueue, "pruned")
	require.Zero(t, c.Total[tasks.StateSucceeded])
}

// testActBatch checks tasks.Store.ActBatch: each task of a batch changes as
// the single-task method would change it, a task that moved on (or is
// gone) is left alone and not counted, and tasks.Bulk over more tasks
// than a batch acts on them all.
func testActBatch(t *testing.T, e *env) {
	act := func(a tasks.Action, ids ...int64) int {
		t.Helper()
		n, err := e.s.ActBatch(e.ctx, a, ids)
		require.NoError(t, err)
		return n
	}
	running := e.submit(e.spec())
	e.claimOne("a", running.ID)
	dead := e.submit(e.spec())
	cl := e.claimOne("a", dead.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", Counted: true}}))
	queued := e.submit(e.spec())
	const gone = int64(1) << 40

	require.Equal(t, 2, act(tasks.ActionCancel, queued.ID, running.ID, dead.ID, gone))
	require.Equal(t, tasks.StateCancelled, e.get(queued.ID).State)
	r := e.get(running.ID)
	require.Equal(t, tasks.StateRunning, r.State, "a running task is asked to stop")
	require.True(t, r.CancelRequested)
	require.Equal(t, tasks.StateDead, e.get(dead.ID).State)

	require.Equal(t, 2, act(tasks.ActionRetry, queued.ID, running.ID, dead.ID, gone))
	for _, id := range []int64{queued.ID, dead.ID} {
		tk := e.get(id)
		require.Equal(t, tasks.StateQueued, tk.State)
		require.Zero(t, tk.Failures)
	}
	require.Equal(t, tasks.StateRunning, e.get(running.ID).State)

	require.Equal(t, 1, act(tasks.ActionDelete, queued.ID, running.ID, gone))
	_, err := e.s.Get(e.ctx, queued.ID)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	require.Equal(t, tasks.StateRunning, e.get(running.ID).State, "a running task is not deleted")
	require.Zero(t, act(tasks.ActionDelete))

	_, err = e.s.ActBatch(e.ctx, tasks.Action("purge"), []int64{dead.ID})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	_, err = e.s.ActBatch(e.ctx, tasks.ActionDelete, make([]int64, tasks.BulkBatch+1))
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.Equal(t, tasks.StateQueued, e.get(dead.ID).State)
	require.Len(t, e.attempts(dead.ID), 1)
	require.Equal(t, 1, act(tasks.ActionDelete, dead.ID))
	as, err := e.s.Attempts(e.ctx, dead.ID)
	if err == nil {
		require.Empty(t, as, "a deleted task's attempts go with it")
	}

	// More tasks than a batch: every one of them, in several batches.
	const n = 2*tasks.BulkBatch + 100
	specs := make([]tasks.Spec, n)
	for i := range specs {
		specs[i] = e.spec()
		specs[i].Queue = "many"
	}
	_, err = tasks.SubmitMany(e.ctx, e.s, specs)
	require.NoError(t, err)
	res, err := tasks.Bulk(e.ctx, e.s, tasks.ActionCancel, tasks.BulkFilter{Queue: "many"}, false)
	require.NoError(t, err)
	require.Equal(t, tasks.BulkResult{Action: tasks.ActionCancel, Matched: n, Done: n}, res)
	require.Empty(t, e.all(tasks.ListFilter{Queue: "many", State: tasks.StateQueued, Limit: 10}))
	res, err = tasks.Bulk(e.ctx, e.s, tasks.ActionDelete, tasks.BulkFilter{Queue: "many"}, false)
	require.NoError(t, err)
	require.Equal(t, n, res.Done)
	require.Empty(t, e.all(tasks.ListFilter{Queue: "many", Limit: 10}))
}
