package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Leases and fencing: expiry and takeover, stale leases refused,
// heartbeats, Release.

func testTakeover(t *testing.T, e *env) {
	task := e.submit(e.spec())
	old := e.claimOne("pool-a", task.ID)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, old.Lease, []byte("cp-a")))

	e.clock.Advance(lease)
	require.Empty(t, e.claim("pool-b", 10), "a lease holds until its expiry")
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	cl := e.claimOne("pool-b", task.ID)
	require.Equal(t, 2, cl.Task.Attempt)
	require.Equal(t, tasks.Lease{TaskID: task.ID, Owner: "pool-b", Token: 2}, cl.Lease)
	require.Zero(t, cl.Task.Failures, "the lost attempt is not counted")
	require.Equal(t, 1, cl.Task.LostStreak, "one attempt lost in a row")
	require.Equal(t, []byte("cp-a"), cl.Checkpoint, "the new attempt starts from the old one's checkpoint")
	requireTime(t, now.Add(lease), cl.Task.LeaseExpiry, "new lease expiry")

	as := e.attempts(task.ID)
	require.Len(t, as, 1)
	require.Equal(t, task.ID, as[0].TaskID)
	require.Equal(t, 1, as[0].Number)
	require.Equal(t, "pool-a", as[0].Owner)
	require.Equal(t, "lost", as[0].Outcome)
	require.False(t, as[0].Counted)
	require.Equal(t, "lease of pool-a expired without a heartbeat", as[0].Reason)
	e.requireLostAttempts(1, "one attempt lost")
	requireTime(t, Start, as[0].StartedAt, "lost attempt start")
	require.False(t, as[0].EndedAt.IsZero())

	// Every write of the old attempt is refused.
	require.ErrorIs(t, e.complete(tasks.Completion{Lease: old.Lease, State: tasks.StateSucceeded, Result: []byte("late")}), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, old.Lease, []byte("late")), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.Progress(e.ctx, old.Lease, 1, 1), tasks.ErrStaleLease)
	lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{old.Lease}, lease)
	require.NoError(t, err)
	require.Equal(t, []tasks.Lease{old.Lease}, lost)
	cp, err := e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("cp-a"), cp)

	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded, Result: []byte("ok"),
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateSucceeded, got.State)
	require.Equal(t, []byte("ok"), got.Result)
	require.Zero(t, got.LostStreak, "an attempt that ends through Complete ends the streak")
	require.Len(t, e.attempts(task.ID), 2)
}

// testTakeoverDead: lost attempts are not counted (MaxAttempts 1 is not
// used up by them), but a task that loses ClaimRequest.LostLimit attempts
// in a row is dead instead of claimed again, with a reason that says so.
func testTakeoverDead(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	claim := func(owner string) []tasks.Claimed {
		t.Helper()
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: owner, Max: 10, Lease: lease, LostLimit: 2})
		require.NoError(t, err)
		return cl
	}
	require.Len(t, claim("pool-a"), 1)
	e.clock.Advance(lease + time.Second)
	cl := claim("pool-b")
	require.Len(t, cl, 1, "a lost attempt is not counted: MaxAttempts 1 is not used up")
	require.Equal(t, 2, cl[0].Lease.Token)
	require.Zero(t, cl[0].Task.Failures)
	require.Equal(t, 1, cl[0].Task.LostStreak)
	require.Equal(t, tasks.StateRunning, cl[0].Task.State)

	e.clock.Advance(lease + time.Second)
	require.Empty(t, claim("pool-c"), "lost twice in a row (LostLimit 2): dead, not claimed")
	got := e.get(task.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Zero(t, got.Failures, "lost attempts are never counted")
	require.Equal(t, 2, got.LostStreak)
	require.Empty(t, got.LeaseOwner)
	require.False(t, got.FinishedAt.IsZero())
	require.Equal(t, "attempt 2 lost: lease of pool-b expired without a heartbeat; "+tasks.LostLimitReason(2), got.LastError)
	require.Contains(t, got.LastError, "lost 2 attempts in a row without progress")
	as := e.attempts(task.ID)
	require.Len(t, as, 2)
	for i, a := range as {
		require.Equal(t, "lost", a.Outcome)
		require.False(t, a.Counted)
		require.Equal(t, i+1, a.Number)
	}
	require.Equal(t, "lease of pool-a expired without a heartbeat", as[0].Reason)
	e.requireLostAttempts(2, "a streak of two, the second making the task dead")
	require.Equal(t, "lease of pool-b expired without a heartbeat; "+tasks.LostLimitReason(2), as[1].Reason)

	// Retried by hand: the streak starts again, at the default limit.
	retried, err := e.s.Retry(e.ctx, task.ID)
	require.NoError(t, err)
	require.Zero(t, retried.LostStreak)
	require.Equal(t, tasks.StateQueued, retried.State)
	for i := range tasks.DefaultLostLimit {
		cl := e.claim("pool-d", 10)
		require.Len(t, cl, 1, "lost %d in a row of %d", i, tasks.DefaultLostLimit)
		e.clock.Advance(lease + time.Second)
	}
	require.Empty(t, e.claim("pool-e", 10), "a request's LostLimit 0 is DefaultLostLimit")
	got = e.get(task.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Equal(t, tasks.DefaultLostLimit, got.LostStreak)
	require.Contains(t, got.LastError, tasks.LostLimitReason(tasks.DefaultLostLimit))
}

func testFencing(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("pool-a", task.ID)
	good := cl.Lease
	for name, bad := range map[string]tasks.Lease{
		"old token":    {TaskID: good.TaskID, Owner: good.Owner, Token: good.Token - 1},
		"future token": {TaskID: good.TaskID, Owner: good.Owner, Token: good.Token + 1},
		"other owner":  {TaskID: good.TaskID, Owner: "pool-b", Token: good.Token},
	} {
		require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, bad, []byte("x")), tasks.ErrStaleLease, name)
		require.ErrorIs(t, e.s.Progress(e.ctx, bad, 1, 2), tasks.ErrStaleLease, name)
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: bad, State: tasks.StateSucceeded}), tasks.ErrStaleLease, name)
		lost, cancel, err := e.s.Heartbeat(e.ctx, []tasks.Lease{bad}, lease)
		require.NoError(t, err)
		require.Equal(t, []tasks.Lease{bad}, lost, name)
		require.Empty(t, cancel)
	}
	got := e.get(task.ID)
	require.Equal(t, tasks.StateRunning, got.State, "stale writes changed nothing")
	require.Equal(t, -1, got.CheckpointSize)
	require.Zero(t, got.ProgressDone)

	require.NoError(t, e.s.SaveCheckpoint(e.ctx, good, []byte("x")))
	require.NoError(t, e.s.Progress(e.ctx, good, 1, 2))
	require.NoError(t, e.complete(tasks.Completion{Lease: good, State: tasks.StateSucceeded}))
	// Once ended, the lease holds nothing.
	require.ErrorIs(t, e.complete(tasks.Completion{Lease: good, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, good, []byte("y")), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.Progress(e.ctx, good, 2, 2), tasks.ErrStaleLease)
	require.Len(t, e.attempts(task.ID), 1)
}

func testHeartbeat(t *testing.T, e *env) {
	e.submitN(3, e.spec())
	cl := e.claim("pool-a", 3)
	require.Len(t, cl, 3)
	leases := []tasks.Lease{cl[0].Lease, cl[1].Lease, cl[2].Lease}

	e.clock.Advance(lease - time.Second)
	lost, cancel, err := e.s.Heartbeat(e.ctx, leases, time.Minute)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Empty(t, cancel)
	requireTime(t, e.clock.Now().Add(time.Minute), e.get(cl[0].Task.ID).LeaseExpiry, "extended lease")

	// Past the original expiry, the extended leases still hold.
	e.clock.Advance(lease)
	require.Empty(t, e.claim("pool-b", 10))

	// Cancellation requested: reported, and the lease is still extended.
	_, err = e.s.Cancel(e.ctx, cl[1].Task.ID)
	require.NoError(t, err)
	// A finished attempt: lost.
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[2].Lease, State: tasks.StateSucceeded}))
	lost, cancel, err = e.s.Heartbeat(e.ctx, leases, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []tasks.Lease{cl[2].Lease}, lost)
	require.Equal(t, []tasks.Lease{cl[1].Lease}, cancel)
	requireTime(t, e.clock.Now().Add(time.Minute), e.get(cl[1].Task.ID).LeaseExpiry, "lease of a cancelling task")

	// An expired lease that nobody took over is still held, and renewed.
	e.clock.Advance(2 * time.Minute)
	lost, cancel, err = e.s.Heartbeat(e.ctx, leases[:2], time.Minute)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Equal(t, []tasks.Lease{cl[1].Lease}, cancel)
	require.Empty(t, e.claim("pool-b", 10))

	// Taken over: lost.
	e.clock.Advance(2 * time.Minute)
	require.Len(t, e.claim("pool-b", 10), 1, "the cancelling task is cancelled on takeover, not claimed")
	lost, _, err = e.s.Heartbeat(e.ctx, leases[:2], time.Minute)
	require.NoError(t, err)
	require.Equal(t, leases[:2], lost)
	require.Equal(t, tasks.StateCancelled, e.get(cl[1].Task.ID).State)

	lost, cancel, err = e.s.Heartbeat(e.ctx, nil, time.Minute)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Empty(t, cancel)
}

func testRelease(t *testing.T, e *env) {
	require.NoError(t, e.s.Release(e.ctx, nil))

	// A task that has run and failed once before (with a checkpoint and a
	// backoff), and a fresh one (MaxAttempts 1: a release charges nothing).
	retried := e.submit(e.spec())
	first := e.claimOne("pool-a", retried.ID)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, first.Lease, []byte("cp")))
	require.NoError(t, e.complete(tasks.Completion{Lease: first.Lease, State: tasks.StateQueued, RunAt: Start.Add(time.Minute),
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "boom", Counted: true}}))
	fresh := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	e.clock.Set(Start.Add(time.Minute))
	freshBefore, retriedBefore := e.get(fresh.ID), e.get(retried.ID)
	require.Equal(t, 1, retriedBefore.Attempt)
	both := e.claim("pool-a", 10)
	require.Equal(t, []int64{fresh.ID, retried.ID}, ids(both))
	cl, second := both[0], both[1]
	require.Equal(t, 1, cl.Lease.Token)
	require.Equal(t, 2, second.Lease.Token)
	require.Equal(t, []byte("cp"), second.Checkpoint)

	e.clock.Advance(time.Second)
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl.Lease, second.Lease}))
	for _, want := range []tasks.Task{freshBefore, retriedBefore} {
		got := e.get(want.ID)
		requireTime(t, e.clock.Now(), got.UpdatedAt, "updated at")
		want.UpdatedAt = got.UpdatedAt
		// StartedAt alone is left as the released claim set it.
		requireTime(t, Start.Add(time.Minute), got.StartedAt, "started at")
		want.StartedAt = got.StartedAt
		require.Equal(t, want, got, "as if it had not been claimed")
		require.Equal(t, tasks.StateQueued, got.State)
		require.Empty(t, got.LeaseOwner)
		require.True(t, got.LeaseExpiry.IsZero())
		require.True(t, got.FinishedAt.IsZero())
	}
	require.Empty(t, e.attempts(fresh.ID), "no attempt is recorded")
	require.Len(t, e.attempts(retried.ID), 1, "no attempt is recorded")
	require.Equal(t, 1, e.get(retried.ID).Failures, "failures unchanged")
	requireTime(t, Start.Add(time.Minute), e.get(retried.ID).RunAt, "run at unchanged")

	// The released leases write nothing.
	for _, l := range []tasks.Lease{cl.Lease, second.Lease} {
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: l, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
		require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, l, []byte("late")), tasks.ErrStaleLease)
		require.ErrorIs(t, e.s.Progress(e.ctx, l, 1, 1), tasks.ErrStaleLease)
		lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{l}, lease)
		require.NoError(t, err)
		require.Equal(t, []tasks.Lease{l}, lost)
	}

	// Claimable at once, with the same attempt number (the token is reused)
	// and the checkpoint; MaxAttempts 1 was not used up.
	cl2 := e.claim("pool-b", 10)
	require.Equal(t, []int64{fresh.ID, retried.ID}, ids(cl2))
	require.Equal(t, tasks.Lease{TaskID: fresh.ID, Owner: "pool-b", Token: cl.Lease.Token}, cl2[0].Lease)
	require.Equal(t, tasks.Lease{TaskID: retried.ID, Owner: "pool-b", Token: second.Lease.Token}, cl2[1].Lease)
	require.Nil(t, cl2[0].Checkpoint)
	require.Equal(t, []byte("cp"), cl2[1].Checkpoint)

	// The released leases (same token, other owner) still write nothing.
	for _, l := range []tasks.Lease{cl.Lease, second.Lease} {
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: l, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
		require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, l, []byte("late")), tasks.ErrStaleLease)
		lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{l}, lease)
		require.NoError(t, err)
		require.Equal(t, []tasks.Lease{l}, lost)
	}
	cp, err := e.s.Checkpoint(e.ctx, retried.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("cp"), cp)
	for _, c := range cl2 {
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, c.Lease, []byte("b")))
		require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte("b"),
			Attempt: tasks.Attempt{Outcome: "succeeded"}}))
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateSucceeded, got.State)
		require.Equal(t, []byte("b"), got.Result)
		as := e.attempts(c.Task.ID)
		require.Equal(t, got.Attempt, len(as), "one record per attempt that ran")
		require.Equal(t, "pool-b", as[len(as)-1].Owner)
		require.Equal(t, c.Lease.Token, as[len(as)-1].Number)
	}

	// Cancellation requested: released as cancelled (as RecoverRunning
	// does), attempt number restored, no attempt recorded.
	cancelled := e.submit(e.spec())
	c := e.claimOne("pool-a", cancelled.ID)
	_, err = e.s.Cancel(e.ctx, cancelled.ID)
	require.NoError(t, err)
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{c.Lease}))
	got := e.get(cancelled.ID)
	require.Equal(t, tasks.StateCancelled, got.State)
	require.Zero(t, got.Attempt)
	require.Zero(t, got.Failures)
	require.Empty(t, got.LeaseOwner)
	requireTime(t, e.clock.Now(), got.FinishedAt, "finished at")
	require.Empty(t, e.attempts(cancelled.ID))
	require.Empty(t, e.claim("pool-b", 10), "a cancelled task is not claimed")
	require.ErrorIs(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
}

// testReleaseStale: a lease that no longer holds its task is skipped, and
// the rest of the batch is released.
func testReleaseStale(t *testing.T, e *env) {
	ts := e.submitN(5, e.spec())
	cl := e.claim("pool-a", 5)
	require.Len(t, cl, 5)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded}))
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl[1].Lease, cl[2].Lease, cl[3].Lease, cl[4].Lease}))
	cl2 := e.claim("pool-b", 4)
	require.Len(t, cl2, 4)
	require.Equal(t, cl[1].Lease.Token, cl2[0].Lease.Token, "released: the token is handed out again")

	// pool-b holds the tasks under pool-a's old tokens: pool-a's released
	// leases differ only by owner, and release nothing.
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl[1].Lease, cl[2].Lease}))
	for _, c := range cl2 {
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateRunning, got.State)
		require.Equal(t, "pool-b", got.LeaseOwner)
		require.Equal(t, c.Lease.Token, got.Attempt)
	}

	// pool-b's leases expire and pool-c takes the tasks over (token 2).
	e.clock.Advance(lease + time.Second)
	cl3 := e.claim("pool-c", 4)
	require.Len(t, cl3, 4, "pool-b's leases expired: taken over")
	require.Equal(t, 2, cl3[0].Lease.Token)
	e.clock.Advance(time.Second)

	before := map[int64]tasks.Task{}
	for _, task := range ts {
		before[task.ID] = e.get(task.ID)
	}
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{
		cl[0].Lease,  // ended
		cl[1].Lease,  // released, reclaimed, taken over
		cl2[0].Lease, // taken over
		cl3[1].Lease, // held: released
		cl3[1].Lease, // the same lease twice: released once
		{TaskID: 424242, Owner: "pool-c", Token: 1},                          // unknown task
		{TaskID: cl3[2].Task.ID, Owner: "pool-c", Token: 1},                  // old token
		{TaskID: cl3[2].Task.ID, Owner: "pool-c", Token: 3},                  // future token
		{TaskID: cl3[3].Task.ID, Owner: "pool-a", Token: cl3[3].Lease.Token}, // other owner
	}))
	for _, task := range ts {
		got := e.get(task.ID)
		if task.ID != cl3[1].Task.ID {
			require.Equal(t, before[task.ID], got, "a stale lease changes nothing")
			continue
		}
		require.Equal(t, tasks.StateQueued, got.State)
		require.Equal(t, 1, got.Attempt, "restored once")
		require.Zero(t, got.Failures, "pool-b's lost attempt is not counted")
		require.Equal(t, 1, got.LostStreak, "released: the lost streak is kept")
		as := e.attempts(task.ID)
		require.Len(t, as, 1, "pool-b's lost attempt only")
		require.Equal(t, "pool-b", as[0].Owner)
	}
	require.Equal(t, tasks.StateSucceeded, e.get(cl[0].Task.ID).State)
	for _, c := range cl3 {
		if c.Task.ID != cl3[1].Task.ID {
			require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}))
		}
	}
	require.Equal(t, []int64{cl3[1].Task.ID}, ids(e.claim("pool-d", 10)))
}

// testStartedAt: a task's StartedAt is the store clock's time at the
// claim of its latest attempt, as Claim, Get, List and ListNewest read
// it; zero before the first claim.
func testStartedAt(t *testing.T, e *env) {
	task := e.submit(e.spec())
	require.True(t, e.get(task.ID).StartedAt.IsZero(), "queued, never claimed")

	first := e.clock.Advance(time.Minute)
	cl := e.claimOne("pool-a", task.ID)
	requireTime(t, first, cl.Task.StartedAt, "claimed task's start")
	requireTime(t, first, e.get(task.ID).StartedAt, "Get's start")

	queued := e.submit(e.spec())
	require.True(t, e.get(queued.ID).StartedAt.IsZero(), "queued, never claimed")
	check := func(ts []tasks.Task, want time.Time, what string) {
		t.Helper()
		require.Len(t, ts, 2, what)
		for _, got := range ts {
			if got.ID == task.ID {
				requireTime(t, want, got.StartedAt, what)
			} else {
				require.True(t, got.StartedAt.IsZero(), "%s: queued, never claimed", what)
			}
		}
	}
	check(e.all(tasks.ListFilter{}), first, "List's start")
	ts, err := e.s.ListNewest(e.ctx, tasks.NewestFilter{})
	require.NoError(t, err)
	check(ts, first, "ListNewest's start")

	// A takeover starts a new attempt: StartedAt moves to its claim.
	second := e.clock.Advance(lease + time.Second)
	var again tasks.Claimed
	for _, c := range e.claim("pool-b", 10) {
		if c.Task.ID == task.ID {
			again = c
		}
	}
	require.Equal(t, 2, again.Lease.Token, "the task is taken over")
	requireTime(t, second, again.Task.StartedAt, "second attempt's start")
	requireTime(t, second, e.get(task.ID).StartedAt, "Get's start after the takeover")
}

// testBegun: a claimed task is shown claimed (BeganAt zero) until
// MarkBegun records that a worker began its attempt, and counted apart
// from the running ones (CountTasks, Tenants); a stale or repeated mark
// changes nothing, and the next claim clears the mark.
func testBegun(t *testing.T, e *env) {
	spec := e.spec()
	spec.Tenant = "t"
	e.submitN(3, spec)
	cl := e.claim("pool-a", 3)
	require.Len(t, cl, 3)
	counts := func(claimed, running int) {
		t.Helper()
		c, err := e.s.CountTasks(e.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(claimed), c.Total[tasks.StateClaimed], "claimed in total")
		require.Equal(t, int64(running), c.Total[tasks.StateRunning], "running in total")
		byQueue := map[tasks.State]int64{}
		for _, q := range c.ByQueue {
			byQueue[q.State] += q.Count
		}
		require.Equal(t, int64(claimed), byQueue[tasks.StateClaimed], "claimed by queue")
		require.Equal(t, int64(running), byQueue[tasks.StateRunning], "running by queue")
		ts, err := e.s.Tenants(e.ctx)
		require.NoError(t, err)
		require.Equal(t, claimed, ts["t"].Claimed, "the tenant's claimed")
		require.Equal(t, running, ts["t"].Running, "the tenant's running")
	}
	for _, c := range cl {
		require.True(t, c.Task.BeganAt.IsZero(), "claimed, not begun")
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateRunning, got.State, "stored as running")
		require.Equal(t, tasks.StateClaimed, got.Shown())
		require.Equal(t, "pool-a", got.LeaseOwner, "claimed by its runner")
	}
	counts(3, 0)
	require.NoError(t, e.s.MarkBegun(e.ctx, nil))

	began := e.clock.Advance(time.Second)
	stale := cl[2].Lease
	stale.Token++
	require.NoError(t, e.s.MarkBegun(e.ctx, []tasks.Lease{cl[1].Lease, cl[0].Lease, stale, cl[0].Lease}))
	for _, c := range cl[:2] {
		got := e.get(c.Task.ID)
		requireTime(t, began, got.BeganAt, "begun")
		require.Equal(t, tasks.StateRunning, got.Shown())
	}
	require.Equal(t, tasks.StateClaimed, e.get(cl[2].Task.ID).Shown(), "a stale lease marks nothing")
	for _, ts := range [][]tasks.Task{e.all(tasks.ListFilter{}), e.all(tasks.ListFilter{State: tasks.StateRunning})} {
		require.Len(t, ts, 3, "List's running tasks are claimed or begun")
		for _, got := range ts {
			require.Equal(t, got.ID != cl[2].Task.ID, !got.BeganAt.IsZero(), "List's BeganAt of task %d", got.ID)
		}
	}
	newest, err := e.s.ListNewest(e.ctx, tasks.NewestFilter{})
	require.NoError(t, err)
	for _, got := range newest {
		require.Equal(t, got.ID != cl[2].Task.ID, !got.BeganAt.IsZero(), "ListNewest's BeganAt of task %d", got.ID)
	}
	counts(1, 2)

	e.clock.Advance(time.Second)
	require.NoError(t, e.s.MarkBegun(e.ctx, []tasks.Lease{cl[0].Lease}))
	requireTime(t, began, e.get(cl[0].Task.ID).BeganAt, "marked once")

	// The begun attempt is interrupted: queued again, then claimed anew.
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateQueued}))
	require.NoError(t, e.s.MarkBegun(e.ctx, []tasks.Lease{cl[0].Lease}), "an ended attempt's mark is skipped")
	require.Equal(t, tasks.StateQueued, e.get(cl[0].Task.ID).Shown())
	again := e.claimOne("pool-b", cl[0].Task.ID)
	require.True(t, again.Task.BeganAt.IsZero(), "a new claim is not begun")
	got := e.get(cl[0].Task.ID)
	require.Equal(t, tasks.StateClaimed, got.Shown())
	require.Equal(t, "pool-b", got.LeaseOwner)
	counts(2, 1)
}
