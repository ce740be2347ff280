package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// endedTask stores a noop task in the store of dir that ended in state
// at the given time (the store's clock), and returns its id.
func endedTask(t *testing.T, dir string, at time.Time, state tasks.State) int64 {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{Now: func() time.Time { return at }})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	sha, err := s.PutModule(ctx, readFile(t, fixture(t, "noop")))
	require.NoError(t, err)
	task, _, err := s.Submit(ctx, tasks.Spec{Module: sha, Input: []byte("old input")})
	require.NoError(t, err)
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "past", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, task.ID, cl[0].Task.ID)
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: state, Result: []byte("old result"),
		Attempt: tasks.Attempt{Outcome: string(state)}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	return task.ID
}

// TestPrune: `runner tasks prune --older-than` deletes the tasks that
// ended before then; `runner serve` with retention does the same at start;
// queued and recent tasks stay.
func TestPrune(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	now := time.Now()
	monthAgoOK := endedTask(t, dir, now.Add(-30*24*time.Hour), tasks.StateSucceeded)
	monthAgoDead := endedTask(t, dir, now.Add(-30*24*time.Hour), tasks.StateDead)
	daysAgo := endedTask(t, dir, now.Add(-3*24*time.Hour), tasks.StateSucceeded)
	s := openTestStore(t, dir)
	queued := queue(t, s, fixture(t, "noop"), tasks.Spec{})

	for _, args := range [][]string{{}, {"--older-than", "soon"}, {"--older-than", "-1h"}} {
		_, stderr, code := runRunner(t, "", append([]string{"tasks", "prune", "--data-dir", dir}, args...)...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "--older-than")
	}
	// --dry-run lists the same two tasks and deletes nothing.
	out, stderr, code := runRunner(t, "", "tasks", "prune", "--older-than", "7d", "--dry-run", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "would delete 2 tasks that ended before ")
	require.Contains(t, out, "(dry run: nothing deleted)")
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+succeeded\s+default\s`, monthAgoOK), out)
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+dead\s+default\s`, monthAgoDead), out)
	require.NotRegexp(t, fmt.Sprintf(`(?m)^%d\s`, daysAgo), out)
	for _, id := range []int64{monthAgoOK, monthAgoDead, daysAgo} {
		getTask(t, s, id)
	}
	out, stderr, code = runRunner(t, "", "tasks", "prune", "--older-than", "7d", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "deleted 2 tasks that ended before ")
	for _, id := range []int64{monthAgoOK, monthAgoDead} {
		_, err := s.Get(context.Background(), id)
		require.ErrorIs(t, err, tasks.ErrNotFound)
	}
	require.Equal(t, tasks.StateSucceeded, getTask(t, s, daysAgo).State)
	require.Equal(t, tasks.StateQueued, getTask(t, s, queued).State)

	p := startRunner(t, nil, serveArgs(dir, "--retention", "1d")...)
	p.waitLine(t, "deleted tasks past retention", `"tasks":1,`)
	testutil.WaitFor(t, "the queued task to run", func() bool { return getTask(t, s, queued).State == tasks.StateSucceeded })
	p.stopCleanly(t)
	_, err := s.Get(context.Background(), daysAgo)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	require.Equal(t, tasks.StateSucceeded, getTask(t, s, queued).State, "a task that just ended stays")
}

func getTask(t *testing.T, s tasks.Store, id int64) tasks.Task {
	t.Helper()
	task, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	return task
}

// TestSubmitSaysWhenNobodyServes: a submission to a store no runner works
// says that the task waits; one next to a running `runner serve` does not.
func TestSubmitSaysWhenNobodyServes(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the lock holder is known on Linux only")
	}
	dir := dataDir(t)
	const hint = "no runner serve is working this store"
	out, stderr, code := runRunner(t, "", "submit", fixture(t, "noop"), "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, hint)
	first := mustID(t, out)

	p := startServe(t, dir)
	out, stderr, code = runRunner(t, "", "submit", fixture(t, "noop"), "--data-dir", dir, "--wait")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, hint)
	s := openTestStore(t, dir)
	testutil.WaitFor(t, "the first task to run", func() bool { return getTask(t, s, first).State == tasks.StateSucceeded })
	p.stopCleanly(t)
	require.Empty(t, out, "noop writes nothing")
}
