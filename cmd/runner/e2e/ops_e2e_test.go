package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestRunnersAndSchedules: runner runners and runner schedule on a data
// directory: read-only commands create nothing; a schedule is added,
// refused when bad, listed with its next run; runner serve records itself
// (runners lists it alive, then no more once it stopped) and submits the
// schedule's tasks, labelled, one per period; pause and remove work, and
// an unknown name is exit 3.
func TestRunnersAndSchedules(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	noop := fixture(t, "noop")

	for _, args := range [][]string{{"runners"}, {"schedule", "list"}, {"schedule", "pause", "x"}} {
		_, stderr, code := runRunner(t, "", append(args, "--data-dir", dir)...)
		require.Equal(t, 3, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "no store")
	}
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "a read-only command creates nothing")

	for _, bad := range [][]string{
		{"schedule", "add", "x", noop},
		{"schedule", "add", "x", noop, "--every", "1m", "--cron", "* * * * *"},
		{"schedule", "add", "x", noop, "--cron", "61 * * * *"},
		{"schedule", "add", "x", noop, "--every", "10ms"},
		{"schedule", "add", "x/y", noop, "--every", "1m"},
		{"schedule", "add", "x"},
	} {
		_, stderr, code := runRunner(t, "", append(bad, "--data-dir", dir)...)
		require.Equal(t, 2, code, "%v: %s", bad, stderr)
	}
	_, err = os.Stat(filepath.Join(dir, "stint.db"))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused schedule opens no store")

	out, stderr, code := runRunner(t, "", "schedule", "add", "tick", noop, "--every", "1s", "--queue", "edge",
		"--label", "team=ops", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "schedule tick added: every 1s; next run ")
	runExits(t, 1, "runner: a schedule named tick exists",
		"schedule", "add", "tick", noop, "--every", "1s", "--data-dir", dir)
	_, stderr, code = runRunner(t, "", "schedule", "add", "hourly", noop, "--cron", "0 * * * *", "--paused", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)

	out, stderr, code = runRunner(t, "", "schedule", "list", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "NAME")
	require.Regexp(t, `hourly\s+cron 0 \* \* \* \*\s+paused`, out)
	require.Regexp(t, `tick\s+every 1s\s+active\s+20\d\d-`, out)

	p := startServe(t, dir, "--owner", "e2e-runner")
	type runnerList struct {
		Runners []struct {
			Owner   string `json:"owner"`
			Status  string `json:"status"`
			Workers int    `json:"workers"`
		} `json:"runners"`
	}
	rs := runJSON[runnerList](t, 0, "", "runners", "--json", "--data-dir", dir)
	require.Len(t, rs.Runners, 1)
	require.Equal(t, "e2e-runner", rs.Runners[0].Owner)
	require.Equal(t, "alive", rs.Runners[0].Status)
	require.Equal(t, 2, rs.Runners[0].Workers)

	s := openTestStore(t, dir)
	testutil.WaitFor(t, "two scheduled tasks to succeed", func() bool {
		ts, err := s.List(t.Context(), tasks.ListFilter{State: tasks.StateSucceeded})
		require.NoError(t, err)
		return len(ts) >= 2
	})
	_, stderr, code = runRunner(t, "", "schedule", "pause", "tick", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	p.stopCleanly(t)
	out, stderr, code = runRunner(t, "", "runners", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, out, "a runner that stopped cleanly is no longer listed")
	require.Contains(t, stderr, "no runner works this store")

	all, err := s.List(t.Context(), tasks.ListFilter{})
	require.NoError(t, err)
	keys := map[string]bool{}
	for _, task := range all {
		require.Equal(t, "tick", task.Labels["schedule"])
		require.Equal(t, "ops", task.Labels["team"])
		require.Equal(t, "edge", task.Queue)
		require.True(t, strings.HasPrefix(task.IdempotencyKey, "stint-schedule:tick:"), task.IdempotencyKey)
		require.False(t, keys[task.IdempotencyKey], "one task per period")
		keys[task.IdempotencyKey] = true
	}

	_, stderr, code = runRunner(t, "", "schedule", "remove", "tick", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	runExits(t, 3, "schedule not found", "schedule", "remove", "tick", "--data-dir", dir)
}
