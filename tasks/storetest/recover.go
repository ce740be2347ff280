package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Recovery of attempts left running: tasks.Store.RecoverRunning (every
// attempt, a store held alone) and tasks.OwnRecoverer (one owner's, a
// shared store).

func testRecoverRunning(t *testing.T, e *env) {
	n, err := e.s.RecoverRunning(e.ctx, 0)
	require.NoError(t, err)
	require.Zero(t, n)

	all := e.submitN(4, tasks.Spec{Module: e.module, MaxAttempts: 1})
	cl := e.claim("dead-runner", 3)
	require.Len(t, cl, 3)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl[0].Lease, []byte("cp")))
	_, err = e.s.Cancel(e.ctx, cl[2].Task.ID)
	require.NoError(t, err)

	e.clock.Advance(time.Second)
	n, err = e.s.RecoverRunning(e.ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	for i, c := range cl {
		e.requireRecovered(c, "dead-runner", i == 2)
		if i != 2 {
			require.ErrorIs(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
		}
	}
	// Claimable at once, no lease timeout, no attempt charged (MaxAttempts 1).
	e.requireReclaimed(e.claim("new-runner", 10), cl, all[3])
	n, err = e.s.RecoverRunning(e.ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 3, n)
}

// testRecoverOwn: RecoverOwn(owner) is RecoverRunning for the attempts
// under a lease of owner (tasks.OwnRecoverer): each is recorded as "lost",
// not counted, its task queued and ready at once with its checkpoint (or
// cancelled, if its cancellation was requested), its old lease stale; it
// returns how many. Other owners' running tasks are left alone, their
// leases still held.
func testRecoverOwn(t *testing.T, e *env) {
	r := capability[tasks.OwnRecoverer](t, e)
	all := e.submitN(6, tasks.Spec{Module: e.module, MaxAttempts: 1})
	mine := e.claim("runner-a", 3)
	require.Len(t, mine, 3)
	theirs := e.claim("runner-b", 2)
	require.Len(t, theirs, 2)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, mine[0].Lease, []byte("cp")))
	_, err := e.s.Cancel(e.ctx, mine[2].Task.ID)
	require.NoError(t, err)

	e.clock.Advance(time.Second) // well within the leases
	n, err := r.RecoverOwn(e.ctx, "runner-a", 0)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	for i, c := range mine {
		e.requireRecovered(c, "runner-a", i == 2)
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
		require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, c.Lease, []byte("late")), tasks.ErrStaleLease)
	}
	// runner-b's tasks still run under its leases, which still write.
	for _, c := range theirs {
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateRunning, got.State)
		require.Equal(t, "runner-b", got.LeaseOwner)
		require.Empty(t, e.attempts(c.Task.ID))
		lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{c.Lease}, lease)
		require.NoError(t, err)
		require.Empty(t, lost)
		require.NoError(t, e.s.Progress(e.ctx, c.Lease, 1, 2))
	}

	// Claimable at once, no lease expiry waited for, no attempt charged
	// (MaxAttempts 1), with the checkpoint; next to the task never claimed.
	e.requireReclaimed(e.claim("runner-a", 10), mine, all[5])
	// The new attempts are runner-a's again: a second start recovers them.
	n, err = r.RecoverOwn(e.ctx, "runner-a", 0)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, tasks.StateRunning, e.get(theirs[0].Task.ID).State, "still runner-b's")
}

// testRecoverOwnNothing: an owner with no attempt running recovers
// nothing and changes nothing, on an empty store and beside other owners'
// running tasks and queued ones.
func testRecoverOwnNothing(t *testing.T, e *env) {
	r := capability[tasks.OwnRecoverer](t, e)
	n, err := r.RecoverOwn(e.ctx, "runner-a", 0)
	require.NoError(t, err)
	require.Zero(t, n)

	e.submitN(3, e.spec())
	cl := e.claim("runner-b", 2)
	require.Len(t, cl, 2)
	before := e.all(tasks.ListFilter{})
	n, err = r.RecoverOwn(e.ctx, "runner-a", 0)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, before, e.all(tasks.ListFilter{}))
	for _, c := range cl {
		require.Empty(t, e.attempts(c.Task.ID))
	}
}

// requireRecovered requires that c's attempt, under a lease of owner, was
// recovered: recorded as "lost" and not counted, its task holding no lease
// and queued, ready at once, or cancelled when cancelled is set (its
// cancellation was requested).
func (e *env) requireRecovered(c tasks.Claimed, owner string, cancelled bool) {
	t := e.t
	t.Helper()
	got := e.get(c.Task.ID)
	require.Zero(t, got.Failures, "a recovered attempt is not counted")
	require.Empty(t, got.LeaseOwner)
	require.True(t, got.LeaseExpiry.IsZero())
	as := e.attempts(c.Task.ID)
	require.Len(t, as, 1)
	require.Equal(t, "lost", as[0].Outcome)
	require.False(t, as[0].Counted)
	require.Equal(t, owner, as[0].Owner)
	if cancelled {
		require.Equal(t, tasks.StateCancelled, got.State, "its cancellation was requested")
		return
	}
	require.Equal(t, tasks.StateQueued, got.State)
	requireTime(t, e.clock.Now(), got.RunAt, "ready at once")
}

// requireReclaimed requires that again, claimed after a recovery, holds
// the first two recovered tasks (recovered[0] with its checkpoint "cp",
// under a second lease) and the task never claimed.
func (e *env) requireReclaimed(again, recovered []tasks.Claimed, never tasks.Task) {
	t := e.t
	t.Helper()
	require.ElementsMatch(t, []int64{recovered[0].Task.ID, recovered[1].Task.ID, never.ID}, ids(again))
	for _, c := range again {
		if c.Task.ID == recovered[0].Task.ID {
			require.Equal(t, []byte("cp"), c.Checkpoint)
			require.Equal(t, 2, c.Lease.Token)
		}
	}
}
