package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// TestSubmitOnRetry: runner submit --on-retry restart|resume stores the
// task's OnRetry (none given: "", which resumes), --json shows it as
// on_retry, and any other value is a usage error naming the flag, nothing
// queued. runner run, which has no retries, has no --on-retry.
func TestSubmitOnRetry(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	submit := func(args ...string) (string, string, int) {
		return runInProcess(t, append([]string{"submit", fixture(t, "noop"), "--data-dir", dir}, args...)...)
	}
	for _, bad := range []string{"never", "Restart", "resume,restart"} {
		_, stderr, code := submit("--on-retry", bad)
		require.Equal(t, exitUsage, code, "%s: %s", bad, stderr)
		require.Contains(t, stderr, "--on-retry")
		require.Contains(t, stderr, "resume")
		require.Contains(t, stderr, "restart")
	}
	require.NoFileExists(t, dir+"/stint.db", "nothing queued")

	ids := map[string]int64{}
	for _, v := range []string{"restart", "resume", ""} {
		args := []string{}
		if v != "" {
			args = append(args, "--on-retry", v)
		}
		out, stderr, code := submit(args...)
		require.Equal(t, 0, code, stderr)
		ids[v] = testutil.TaskID(t, out)
	}
	s := teststore.Open(t, dir)
	for v, id := range ids {
		task, err := s.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, v, task.OnRetry, "--on-retry %q", v)
	}

	out, stderr, code := submit("--on-retry", tasks.OnRetryRestart, "--json")
	require.Equal(t, 0, code, stderr)
	var view map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &view))
	require.Equal(t, "restart", view["on_retry"])

	_, stderr, code = runInProcess(t, "run", fixture(t, "noop"), "--data-dir", dir, "--on-retry", "restart")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "unknown flag: --on-retry")
}

// TestScheduleOnRetry: runner schedule add --on-retry restart keeps it in
// the schedule's task spec, so each task it submits starts afresh after a
// failure; a bad value is a usage error, nothing added.
func TestScheduleOnRetry(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	_, stderr, code := runInProcess(t, "schedule", "add", "bad", fixture(t, "noop"), "--every", "1h", "--data-dir", dir, "--on-retry", "never")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "--on-retry")
	_, stderr, code = runInProcess(t, "schedule", "add", "fresh", fixture(t, "noop"), "--every", "1h", "--data-dir", dir, "--on-retry", "restart")
	require.Equal(t, 0, code, stderr)
	s := teststore.Open(t, dir)
	list, err := s.Schedules(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "fresh", list[0].Name)
	require.Equal(t, tasks.OnRetryRestart, list[0].Spec.OnRetry)
}

// TestScheduleOverlapAndRunNow: runner schedule add --overlap keeps the
// policy (a bad one is a usage error); runner schedule run NAME submits a
// task of the schedule at once, paused or not, and prints its id; an
// unknown name is exit 3 (issue 40, item 5).
func TestScheduleOverlapAndRunNow(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	_, stderr, code := runInProcess(t, "schedule", "add", "x", fixture(t, "noop"), "--every", "1h", "--data-dir", dir, "--overlap", "often")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "--overlap")
	_, stderr, code = runInProcess(t, "schedule", "add", "tick", fixture(t, "noop"), "--every", "1h", "--paused", "--data-dir", dir, "--overlap", "queue_one")
	require.Equal(t, 0, code, stderr)
	out, stderr, code := runInProcess(t, "schedule", "run", "tick", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	id := testutil.TaskID(t, out)
	s := teststore.Open(t, dir)
	task, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "tick", task.Labels[tasks.ScheduleLabel])
	require.Equal(t, tasks.StateQueued, task.State)
	sc, err := s.GetSchedule(context.Background(), "tick")
	require.NoError(t, err)
	require.Equal(t, tasks.OverlapQueueOne, sc.Overlap)
	_, stderr, code = runInProcess(t, "schedule", "run", "nope", "--data-dir", dir)
	require.Equal(t, 3, code, stderr)
}
