package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Checkpoints and progress: saved under a lease, handed to the next
// attempt, kept when an attempt is interrupted.

func testCheckpoint(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cp, err := e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Nil(t, cp, "no checkpoint yet")

	cl := e.claimOne("a", task.ID)
	require.Nil(t, cl.Checkpoint)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("first")))
	blob := make([]byte, 100<<10)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, blob))
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, blob, cp, "the last save wins")
	require.Equal(t, len(blob), e.get(task.ID).CheckpointSize)

	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75}}))
	cl = e.claimOne("b", task.ID)
	require.Nil(t, cl.Checkpoint, "over tasks.ClaimInline: left out of the next claim")
	require.Equal(t, len(blob), cl.Task.CheckpointSize)
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, blob, cp, "read when the attempt starts")
	require.Equal(t, len(blob), cl.Task.CheckpointSize)

	// An empty checkpoint is a checkpoint.
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte{}))
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.NotNil(t, cp)
	require.Empty(t, cp)
	require.Equal(t, 0, e.get(task.ID).CheckpointSize)

	// Kept after success.
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("final")))
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("final"), cp)
	as := e.attempts(task.ID)
	require.Len(t, as, 2)
	require.False(t, as[0].Resumed)
	require.True(t, as[1].Resumed, "the second attempt was handed a checkpoint")
}

func testProgress(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	require.NoError(t, e.s.Progress(e.ctx, cl.Lease, 3, 10))
	got := e.get(task.ID)
	require.Equal(t, int64(3), got.ProgressDone)
	require.Equal(t, int64(10), got.ProgressTotal)
	require.NoError(t, e.s.Progress(e.ctx, cl.Lease, 10, 10))
	require.Equal(t, int64(10), e.get(task.ID).ProgressDone)
}

func testInterrupted(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	for i := 1; i <= 3; i++ {
		cl := e.claimOne("a", task.ID)
		require.Equal(t, i, cl.Lease.Token)
		if i > 1 {
			require.Equal(t, []byte(fmt.Sprint("step ", i-1)), cl.Checkpoint)
		}
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte(fmt.Sprint("step ", i))))
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
			Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75, Reason: "shutdown"}}))
		got := e.get(task.ID)
		require.Equal(t, tasks.StateQueued, got.State, "interrupted attempts are not counted")
		require.Zero(t, got.Failures)
	}
	cp, err := e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("step 3"), cp)
	as := e.attempts(task.ID)
	require.Len(t, as, 3)
	for _, a := range as {
		require.Equal(t, "interrupted", a.Outcome)
		require.False(t, a.Counted)
	}
}
