package e2e

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestServeLostLimit: with --snapshots-lost-limit 2, the runner is killed
// with SIGKILL twice while chase runs, before any snapshot is stored
// (--snapshots-every 1h): each restart recovers the lost attempt (not
// counted), and the second makes the task dead, with
// tasks.LostLimitReason(2)'s reason, instead of running it again: a task
// that kills its runner does not loop.
func TestServeLostLimit(t *testing.T) {
	t.Parallel()
	dir, taskID, s := queuedChase(t)
	args := serveArgs(dir, "--snapshots-enabled", "true", "--snapshots-every", "1h", "--snapshots-lost-limit", "2")
	for kill := 1; kill <= 2; kill++ {
		p := startRunner(t, nil, args...)
		p.waitLine(t, "runner ready")
		testutil.WaitFor(t, "attempt "+strconv.Itoa(kill)+" to run", func() bool {
			task, err := s.Get(context.Background(), taskID)
			require.NoError(t, err)
			require.Contains(t, []tasks.State{tasks.StateQueued, tasks.StateRunning}, task.State, task.LastError)
			return task.State == tasks.StateRunning && task.Attempt == kill && !task.BeganAt.IsZero()
		})
		p.kill(t)
	}
	p := startRunner(t, nil, args...) // recovers the second lost attempt: dead
	p.waitLine(t, "runner ready")
	task, err := s.Get(context.Background(), taskID)
	require.NoError(t, err)
	p.stopCleanly(t)

	require.Equal(t, tasks.StateDead, task.State, task.LastError)
	require.Contains(t, task.LastError, tasks.LostLimitReason(2))
	require.Zero(t, task.Failures, "lost attempts are not counted")
	require.Equal(t, 2, task.LostStreak)
	require.Zero(t, task.Snapshots, "no snapshot was stored")
	require.Nil(t, task.Snapshot)
	atts, err := s.Attempts(context.Background(), taskID)
	require.NoError(t, err)
	require.Len(t, atts, 2, "the dead task did not run again")
	for _, a := range atts {
		require.Equal(t, "lost", a.Outcome, "attempt %d: %s", a.Number, a.Reason)
		require.False(t, a.Counted)
	}
	require.NotContains(t, atts[0].Reason, "in a row")
	require.Contains(t, atts[1].Reason, tasks.LostLimitReason(2))
}
