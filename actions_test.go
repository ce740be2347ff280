package stint_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/tasks"
)

// TestRunnerActions: Delete, Bulk (a count, then the act) and their
// errors through a Runner on SQLite, before it starts (the tasks stay
// queued).
func TestRunnerActions(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	sha, err := r.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	var ids []int64
	for i := range 4 {
		src := "api"
		if i == 3 {
			src = "cli"
		}
		task, _, err := r.Submit(ctx, tasks.Spec{Module: sha, Queue: "q", Labels: map[string]string{"src": src}})
		require.NoError(t, err)
		ids = append(ids, task.ID)
	}

	// Count, then act: the filter's tasks only.
	f := tasks.BulkFilter{Queue: "q", Labels: map[string]string{"src": "api"}}
	res, err := r.Bulk(ctx, tasks.ActionCancel, f, true)
	require.NoError(t, err)
	require.Equal(t, tasks.BulkResult{Action: tasks.ActionCancel, Matched: 3, DryRun: true}, res)
	for _, id := range ids {
		task, err := r.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tasks.StateQueued, task.State, "a count changes nothing")
	}
	res, err = r.Bulk(ctx, tasks.ActionCancel, f, false)
	require.NoError(t, err)
	require.Equal(t, 3, res.Done)
	task, err := r.Get(ctx, ids[3])
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, task.State, "src=cli is not in the filter")

	res, err = r.Bulk(ctx, tasks.ActionRetry, tasks.BulkFilter{State: tasks.StateCancelled}, false)
	require.NoError(t, err)
	require.Equal(t, 3, res.Done)
	task, err = r.Get(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, task.State)

	_, err = r.Bulk(ctx, tasks.ActionDelete, tasks.BulkFilter{}, true)
	require.ErrorIs(t, err, tasks.ErrInvalidSpec, "a filter that sets nothing needs All")
	_, err = r.Bulk(ctx, tasks.Action("purge"), f, true)
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	res, err = r.Bulk(ctx, tasks.ActionDelete, tasks.BulkFilter{All: true}, true)
	require.NoError(t, err)
	require.Equal(t, 4, res.Matched)

	require.NoError(t, r.Delete(ctx, ids[1]))
	_, err = r.Get(ctx, ids[1])
	require.ErrorIs(t, err, tasks.ErrNotFound)
	require.ErrorIs(t, r.Delete(ctx, ids[1]), tasks.ErrNotFound)
}

// TestRunnerPauseQueue: a paused queue's tasks wait while another queue's
// run; resumed, they run.
func TestRunnerPauseQueue(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	require.ErrorIs(t, r.PauseQueue(ctx, ""), tasks.ErrInvalidSpec)
	require.NoError(t, r.PauseQueue(ctx, "slow"))
	require.NoError(t, r.PauseQueue(ctx, "slow"))
	paused, err := r.PausedQueues(ctx)
	require.NoError(t, err)
	require.Len(t, paused, 1)
	require.Equal(t, "slow", paused[0].Queue)

	sha, err := r.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	held, _, err := r.Submit(ctx, tasks.Spec{Module: sha, Queue: "slow"})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	other, _, err := r.Submit(ctx, tasks.Spec{Module: sha, Queue: "fast"})
	require.NoError(t, err)
	done, err := r.Wait(ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State)
	// The pool claims by id: it went past the held task, which it would
	// have claimed first were its queue not paused.
	got, err := r.Get(ctx, held.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)

	require.NoError(t, r.ResumeQueue(ctx, "slow"))
	require.NoError(t, r.ResumeQueue(ctx, "slow"), "resuming a queue not paused does nothing")
	paused, err = r.PausedQueues(ctx)
	require.NoError(t, err)
	require.Empty(t, paused)
	done, err = r.Wait(ctx, held.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State)
}
