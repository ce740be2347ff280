package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Completion and retries: the states Complete moves a task to, backoff,
// max attempts, Cancel and Retry.

func testCompleteSucceeded(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	e.clock.Advance(2 * time.Second)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded, Result: []byte("out"),
		Attempt: tasks.Attempt{Outcome: "succeeded", ExitCode: 0}}))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateSucceeded, got.State)
	require.Equal(t, []byte("out"), got.Result)
	require.Empty(t, got.LeaseOwner)
	require.True(t, got.LeaseExpiry.IsZero())
	requireTime(t, e.clock.Now(), got.FinishedAt, "finished at")
	require.Zero(t, got.Failures)
	as := e.attempts(task.ID)
	require.Equal(t, []tasks.Attempt{{TaskID: task.ID, Number: 1, Owner: "a", StartedAt: Start, EndedAt: e.clock.Now(),
		Outcome: "succeeded"}}, normalize(as))
	require.Equal(t, 2*time.Second, as[0].Duration())
	require.Empty(t, e.claim("a", 10))

	// The tail of the attempt's stderr is kept with it.
	task = e.submit(e.spec())
	cl = e.claimOne("a", task.ID)
	tail := "line 1\nerror: ünïcode ✓\n"
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Counted: true, Stderr: tail, Work: 1<<40 + 7}}))
	as = e.attempts(task.ID)
	require.Equal(t, tail, as[0].Stderr)
	require.Equal(t, int64(1<<40+7), as[0].Work, "the attempt's work units are kept with it")

	// The snapshot an attempt resumed from is kept with it, alone and in a
	// batch of completions.
	from := &tasks.SnapshotInfo{Size: 4096, TakenAt: Start.Add(-time.Minute), Owner: "b", Attempt: 2, Work: 1 << 33,
		RunTime: 90 * time.Second, Suspended: true}
	one, two, plain := e.submit(e.spec()), e.submit(e.spec()), e.submit(e.spec())
	leases := map[int64]tasks.Lease{}
	for _, c := range e.claim("a", 3) {
		leases[c.Task.ID] = c.Lease
	}
	require.Len(t, leases, 3)
	resumed := tasks.Attempt{Outcome: "succeeded", Resumed: true, ResumedFrom: from}
	require.NoError(t, e.complete(tasks.Completion{Lease: leases[one.ID], State: tasks.StateSucceeded, Attempt: resumed}))
	errs, err := e.s.Complete(e.ctx, []tasks.Completion{
		{Lease: leases[two.ID], State: tasks.StateSucceeded, Attempt: resumed},
		{Lease: leases[plain.ID], State: tasks.StateSucceeded, Attempt: tasks.Attempt{Outcome: "succeeded"}}})
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil}, errs)
	require.Nil(t, e.attempts(plain.ID)[0].ResumedFrom)
	for _, id := range []int64{one.ID, two.ID} {
		as = e.attempts(id)
		require.Len(t, as, 1)
		require.NotNil(t, as[0].ResumedFrom, "task %d", id)
		got := *as[0].ResumedFrom
		requireTime(t, from.TakenAt, got.TakenAt, "taken at")
		got.TakenAt = from.TakenAt
		require.Equal(t, *from, got)
		require.True(t, as[0].Resumed)
	}

	// Caller-given attempt times are kept.
	task = e.submit(e.spec())
	cl = e.claimOne("a", task.ID)
	started, ended := Start.Add(time.Minute), Start.Add(2*time.Minute)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded", StartedAt: started, EndedAt: ended}}))
	as = e.attempts(task.ID)
	requireTime(t, started, as[0].StartedAt, "given start")
	requireTime(t, ended, as[0].EndedAt, "given end")
	require.Nil(t, e.get(task.ID).Result, "empty stdout")
}

// normalize puts the times of as in UTC so that attempts compare with Equal.
func normalize(as []tasks.Attempt) []tasks.Attempt {
	out := make([]tasks.Attempt, len(as))
	for i, a := range as {
		a.StartedAt, a.EndedAt = a.StartedAt.UTC(), a.EndedAt.UTC()
		out[i] = a
	}
	return out
}

func testCompleteRetry(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	backoff := Start.Add(time.Minute)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued, RunAt: backoff,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 3, Reason: "exit code 3", Counted: true}}))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateQueued, got.State)
	require.Equal(t, 1, got.Failures)
	require.Equal(t, "exit code 3", got.LastError)
	requireTime(t, backoff, got.RunAt, "backoff")
	require.True(t, got.FinishedAt.IsZero())
	require.Empty(t, got.LeaseOwner)
	require.Nil(t, got.Result)

	require.Empty(t, e.claim("a", 10), "not claimable before the backoff")
	e.clock.Set(backoff)
	cl = e.claimOne("a", task.ID)
	require.Equal(t, 2, cl.Lease.Token)
	as := e.attempts(task.ID)
	require.Len(t, as, 1)
	require.Equal(t, "failed", as[0].Outcome)
	require.Equal(t, 3, as[0].ExitCode)
	require.Equal(t, "exit code 3", as[0].Reason)
	require.True(t, as[0].Counted)

	// Zero RunAt: ready at once.
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "trap", Reason: "unreachable", Counted: true}}))
	cl = e.claimOne("a", task.ID)
	require.Equal(t, 2, cl.Task.Failures)
}

func testCompleteDeadCancelled(t *testing.T, e *env) {
	dead := e.submit(e.spec())
	cl := e.claimOne("a", dead.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "bad input", Counted: true}}))
	got := e.get(dead.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Equal(t, "bad input", got.LastError)
	require.Equal(t, 1, got.Failures)
	requireTime(t, Start, got.FinishedAt, "finished at")

	cancelled := e.submit(e.spec())
	cl = e.claimOne("a", cancelled.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateCancelled,
		Attempt: tasks.Attempt{Outcome: "cancelled", Reason: "cancelled by user"}}))
	got = e.get(cancelled.ID)
	require.Equal(t, tasks.StateCancelled, got.State)
	require.Zero(t, got.Failures)
	requireTime(t, Start, got.FinishedAt, "finished at")
	require.Empty(t, e.claim("a", 10))
}

func testCompleteInvalidState(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	for _, st := range []tasks.State{tasks.StateRunning, "", "bogus"} {
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: cl.Lease, State: st}), tasks.ErrInvalidState, string(st))
	}
	require.Equal(t, tasks.StateRunning, e.get(task.ID).State)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
}

func testCompleteBatch(t *testing.T, e *env) {
	e.submitN(4, e.spec())
	cl := e.claim("a", 4)
	require.Len(t, cl, 4)
	stale := cl[2].Lease
	stale.Token++
	errs, err := e.s.Complete(e.ctx, []tasks.Completion{
		{Lease: cl[0].Lease, State: tasks.StateSucceeded},
		{Lease: cl[1].Lease, State: tasks.StateQueued, Attempt: tasks.Attempt{Counted: true, Reason: "r"}},
		{Lease: stale, State: tasks.StateSucceeded},
		{Lease: cl[3].Lease, State: tasks.StateDead},
		{Lease: cl[0].Lease, State: tasks.StateSucceeded}, // the same attempt twice
	})
	require.NoError(t, err)
	require.Len(t, errs, 5)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], tasks.ErrStaleLease)
	require.NoError(t, errs[3])
	require.ErrorIs(t, errs[4], tasks.ErrStaleLease)
	require.Equal(t, tasks.StateSucceeded, e.get(cl[0].Task.ID).State)
	require.Equal(t, tasks.StateQueued, e.get(cl[1].Task.ID).State)
	require.Equal(t, tasks.StateRunning, e.get(cl[2].Task.ID).State)
	require.Equal(t, tasks.StateDead, e.get(cl[3].Task.ID).State)
	require.Len(t, e.attempts(cl[0].Task.ID), 1)

	errs, err = e.s.Complete(e.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, errs)
}

func testDeadAfterMaxAttempts(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 2})
	fail := func(c tasks.Claimed) {
		t.Helper()
		// The store, not only the caller, enforces MaxAttempts.
		require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateQueued,
			Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "boom", Counted: true}}))
	}
	fail(e.claimOne("a", task.ID))
	require.Equal(t, tasks.StateQueued, e.get(task.ID).State)
	fail(e.claimOne("a", task.ID))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Equal(t, 2, got.Failures)
	require.Equal(t, "boom", got.LastError)
	require.False(t, got.FinishedAt.IsZero())
	require.Empty(t, e.claim("a", 10))
	require.Len(t, e.attempts(task.ID), 2)
}

func testCancel(t *testing.T, e *env) {
	// Queued: cancelled at once.
	queued := e.submit(e.spec())
	got, err := e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateCancelled, got.State)
	requireTime(t, Start, got.FinishedAt, "finished at")
	require.Equal(t, got, e.get(queued.ID))
	require.Empty(t, e.claim("a", 10), "a cancelled task is not claimed")
	_, err = e.s.Cancel(e.ctx, queued.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState, "already cancelled")

	// Running: requested; the worker ends it.
	running := e.submit(e.spec())
	cl := e.claimOne("a", running.ID)
	got, err = e.s.Cancel(e.ctx, running.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateRunning, got.State)
	require.True(t, got.CancelRequested)
	_, err = e.s.Cancel(e.ctx, running.ID)
	require.NoError(t, err, "asking twice is fine")
	_, cancel, err := e.s.Heartbeat(e.ctx, []tasks.Lease{cl.Lease}, lease)
	require.NoError(t, err)
	require.Equal(t, []tasks.Lease{cl.Lease}, cancel)
	// A requeue of a task whose cancellation was requested cancels it.
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75}}))
	got = e.get(running.ID)
	require.Equal(t, tasks.StateCancelled, got.State)
	require.False(t, got.FinishedAt.IsZero())

	// Terminal.
	done := e.submit(e.spec())
	cl = e.claimOne("a", done.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	_, err = e.s.Cancel(e.ctx, done.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)
	require.Equal(t, tasks.StateSucceeded, e.get(done.ID).State)
}

func testRetry(t *testing.T, e *env) {
	dead := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	cl := e.claimOne("a", dead.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "failed", Counted: true, Reason: "boom"}}))
	require.Equal(t, tasks.StateDead, e.get(dead.ID).State)

	e.clock.Advance(time.Hour)
	got, err := e.s.Retry(e.ctx, dead.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)
	require.Zero(t, got.Failures)
	require.True(t, got.FinishedAt.IsZero())
	requireTime(t, e.clock.Now(), got.RunAt, "ready now")
	cl = e.claimOne("a", dead.ID)
	require.Equal(t, 2, cl.Lease.Token, "attempt numbers keep growing")

	// Running: not allowed.
	_, err = e.s.Retry(e.ctx, dead.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	// Succeeded: not allowed.
	_, err = e.s.Retry(e.ctx, dead.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)

	// Queued: not allowed.
	queued := e.submit(e.spec())
	_, err = e.s.Retry(e.ctx, queued.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)

	// Cancelled (also a cancel requested while running).
	_, err = e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	got, err = e.s.Retry(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)
	require.False(t, got.CancelRequested)
	cl = e.claimOne("a", queued.ID)
	_, err = e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateCancelled}))
	got, err = e.s.Retry(e.ctx, queued.ID)
	require.NoError(t, err)
	require.False(t, got.CancelRequested, "retry clears the cancellation request")
	cl = e.claimOne("a", queued.ID)
	_, cancel, err := e.s.Heartbeat(e.ctx, []tasks.Lease{cl.Lease}, lease)
	require.NoError(t, err)
	require.Empty(t, cancel)
}
