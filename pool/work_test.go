package pool_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// An attempt's work units travel from the sandbox to the attempt record
// in the store and to the ended event; the same input does the same work.
func TestPoolRecordsWork(t *testing.T) {
	t.Parallel()
	events := make(chan pool.Event, 16)
	f := newFixture(t, pool.Config{OnEvent: func(e pool.Event) {
		if e.Kind == pool.EventEnded {
			events <- e
		}
	}})
	in := bytes.Repeat([]byte("z"), 50)
	var works []int64
	for range 2 {
		task := f.submit(t, "work", tasks.Spec{Input: in})
		done := f.wait(t, task.ID)
		require.Equal(t, tasks.StateSucceeded, done.State)
		atts := attempts(t, f.store, task.ID)
		require.Len(t, atts, 1)
		require.Positive(t, atts[0].Work)
		e := <-events
		require.Equal(t, task.ID, e.TaskID)
		require.Equal(t, atts[0].Work, e.Attempt.Work)
		works = append(works, atts[0].Work)
	}
	require.Equal(t, works[0], works[1])
}

// A task's work budget ends an endless loop with work_limit: the guest's
// fault, dead at once (the same budget would end it again), counted.
func TestPoolWorkLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "loop", tasks.Spec{MaxAttempts: 3, Limits: tasks.Limits{Work: 2_000_000}})
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateDead, done.State)
	atts := attempts(t, f.store, task.ID)
	require.Len(t, atts, 1, "not retried")
	require.Equal(t, "work_limit", atts[0].Outcome)
	require.True(t, atts[0].Counted)
	require.Contains(t, atts[0].Reason, "work limit of 2000000 units")
	require.Greater(t, atts[0].Work, int64(2_000_000))
}

// On a runner whose sandbox does not count loops (wazero interrupt mode),
// a task that asks for a work budget is refused: dead at once, not run.
func TestPoolWorkRefusedInWazeroMode(t *testing.T) {
	t.Parallel()
	f := newFixtureRT(t, pool.Config{}, sandbox.Config{Interrupt: sandbox.InterruptWazero})
	task := f.submit(t, "loop", tasks.Spec{MaxAttempts: 3, Limits: tasks.Limits{Work: 2_000_000}})
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateDead, done.State)
	atts := attempts(t, f.store, task.ID)
	require.Len(t, atts, 1)
	require.Equal(t, string(pool.KindRefused), atts[0].Outcome)
	require.Contains(t, atts[0].Reason, "needs sandbox.interrupt=checks")
}
