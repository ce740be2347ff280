package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// tasks.Store.Prune: deleting ended tasks.

// testPrune: Prune deletes the tasks that ended before its time, with
// everything stored for them, and nothing else.
func testPrune(t *testing.T, e *env) {
	finish := func(id int64, state tasks.State, result string) {
		t.Helper()
		cl := e.claimOne("a", id)
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("cp")))
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: state, Result: []byte(result),
			Attempt: tasks.Attempt{Outcome: string(state)}}))
	}
	spec := e.spec()
	spec.Input, spec.IdempotencyKey = []byte("input"), "old-succeeded"
	oldOK := e.submit(spec)
	finish(oldOK.ID, tasks.StateSucceeded, "out")
	oldDead := e.submit(e.spec())
	finish(oldDead.ID, tasks.StateDead, "")
	oldCancelled := e.submit(e.spec())
	_, err := e.s.Cancel(e.ctx, oldCancelled.ID)
	require.NoError(t, err)
	running := e.submit(e.spec())
	runningLease := e.claimOne("a", running.ID).Lease
	_, _, err = e.s.Heartbeat(e.ctx, []tasks.Lease{runningLease}, 24*time.Hour)
	require.NoError(t, err)
	later := e.spec()
	later.RunAt = Start.Add(24 * time.Hour) // stays queued
	queued := e.submit(later)

	e.clock.Advance(time.Hour)
	cutoff := e.clock.Now()
	e.clock.Advance(time.Hour)
	recent := e.submit(e.spec())
	finish(recent.ID, tasks.StateSucceeded, "new")

	n, err := e.s.Prune(e.ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, id := range []int64{oldOK.ID, oldDead.ID, oldCancelled.ID} {
		_, err := e.s.Get(e.ctx, id)
		require.ErrorIs(t, err, tasks.ErrNotFound, "task %d", id)
	}
	list, err := e.s.List(e.ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, []int64{running.ID, queued.ID, recent.ID}, []int64{list[0].ID, list[1].ID, list[2].ID})
	require.Len(t, list, 3)
	require.Equal(t, []byte("new"), e.get(recent.ID).Result)
	cp, err := e.s.Checkpoint(e.ctx, recent.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("cp"), cp)
	require.Len(t, e.attempts(recent.ID), 1)
	// The running task still completes; the module stays.
	require.NoError(t, e.complete(tasks.Completion{Lease: runningLease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	_, err = e.s.Module(e.ctx, e.module)
	require.NoError(t, err)

	// Nothing more to delete; the pruned task's idempotency key is free.
	n, err = e.s.Prune(e.ctx, cutoff)
	require.NoError(t, err)
	require.Zero(t, n)
	again := e.submit(spec)
	require.NotEqual(t, oldOK.ID, again.ID)

	// A done context deletes nothing.
	done, cancel := context.WithCancel(e.ctx)
	cancel()
	n, err = e.s.Prune(done, e.clock.Now().Add(time.Hour))
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, n)
}
