package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// TestTasksShowStderrOfEachAttempt: tasks show prints the kept stderr
// tail of every attempt that wrote any, in text and in JSON.
func TestTasksShowStderrOfEachAttempt(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	s := teststore.Open(t, dir)
	id := teststore.Queue(t, s, fixture(t, "noop"), tasks.Spec{})
	endAttemptStderr(t, s, id, tasks.StateQueued, "failed", "exit code 1", "first boom\n")
	endAttempt(t, s, id, tasks.StateQueued, "failed", "exit code 2")
	endAttemptStderr(t, s, id, tasks.StateDead, "failed", "exit code 3", "second boom\nthe last line\n")
	require.NoError(t, s.Close())

	out := tasksShow(t, dir, id)
	require.Contains(t, out, "\nstderr of attempt 1 (failed; its last 4096 bytes at most):\n  first boom\n")
	require.NotContains(t, out, "stderr of attempt 2")
	require.Contains(t, out, "\nstderr of attempt 3 (failed; its last 4096 bytes at most):\n  second boom\n  the last line\n")
	require.Less(t, strings.Index(out, "attempt 1 (failed"), strings.Index(out, "attempt 3 (failed"), "oldest first")

	out = tasksShow(t, dir, id, "--json")
	var shown struct {
		Attempts []tasks.Attempt `json:"attempts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	require.Len(t, shown.Attempts, 3)
	require.Equal(t, "first boom\n", shown.Attempts[0].Stderr)
	require.Empty(t, shown.Attempts[1].Stderr)
	require.Equal(t, "second boom\nthe last line\n", shown.Attempts[2].Stderr)
}

// listIDs runs tasks list with args and returns the ids it printed (text
// or, with --json, JSON) and its stderr.
func listIDs(t *testing.T, dir string, args ...string) ([]int64, string) {
	t.Helper()
	out, stderr, code := runInProcess(t, append([]string{"tasks", "list", "--data-dir", dir}, args...)...)
	require.Equal(t, 0, code, stderr)
	ids := []int64{}
	if strings.Contains(strings.Join(args, " "), "--json") {
		var views []server.TaskView
		require.NoError(t, json.Unmarshal([]byte(out), &views), out)
		for _, v := range views {
			ids = append(ids, v.ID)
		}
		return ids, stderr
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.True(t, strings.HasPrefix(lines[0], "ID "), out)
	for _, l := range lines[1:] {
		id, err := strconv.ParseInt(strings.Fields(l)[0], 10, 64)
		require.NoError(t, err, l)
		ids = append(ids, id)
	}
	return ids, stderr
}

func TestTasksListPages(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	s := teststore.Open(t, dir)
	ctx := context.Background()
	h, err := s.PutModule(ctx, testutil.ReadFile(t, fixture(t, "noop")))
	require.NoError(t, err)
	specs := make([]tasks.Spec, 250)
	for i := range specs {
		specs[i] = tasks.Spec{Module: h, Queue: []string{"a", "b"}[i%2]}
	}
	res, err := tasks.SubmitMany(ctx, s, specs)
	require.NoError(t, err)
	var all, inB []int64
	for i, r := range res {
		all = append(all, r.Task.ID)
		if i%2 == 1 {
			inB = append(inB, r.Task.ID)
		}
	}
	require.NoError(t, s.Close())

	// A page, and how to get the next.
	for _, json := range []string{"", "--json"} {
		args := []string{}
		if json != "" {
			args = append(args, json)
		}
		ids, hint := listIDs(t, dir, args...)
		require.Equal(t, all[:100], ids)
		require.Contains(t, hint, fmt.Sprintf("runner tasks list --after %d, or --all", all[99]))
		ids, hint = listIDs(t, dir, append(args, "--after", strconv.FormatInt(all[99], 10), "--limit", "120")...)
		require.Equal(t, all[100:220], ids)
		require.Contains(t, hint, fmt.Sprintf("runner tasks list --after %d --limit 120", all[219]))
		// The last page, even when full: no hint.
		ids, hint = listIDs(t, dir, append(args, "--after", strconv.FormatInt(all[219], 10), "--limit", "30")...)
		require.Equal(t, all[220:], ids)
		require.NotContains(t, hint, "more tasks")
		ids, hint = listIDs(t, dir, append(args, "--after", strconv.FormatInt(all[249], 10))...)
		require.Empty(t, ids)
		require.NotContains(t, hint, "more tasks")
		// Every task, page after page.
		ids, hint = listIDs(t, dir, append(args, "--all", "--limit", "7")...)
		require.Equal(t, all, ids)
		require.NotContains(t, hint, "more tasks")
		ids, _ = listIDs(t, dir, append(args, "--all", "--queue", "b", "--state", "queued")...)
		require.Equal(t, inB, ids)
		_, hint = listIDs(t, dir, append(args, "--queue", "b", "--limit", "50")...)
		require.Contains(t, hint, fmt.Sprintf("runner tasks list --after %d --limit 50 --queue \"b\"", inB[49]))
	}
	for _, bad := range [][]string{{"--limit", "0"}, {"--after", "-1"}, {"--state", "odd"}} {
		_, stderr, code := runInProcess(t, append([]string{"tasks", "list", "--data-dir", dir}, bad...)...)
		require.Equal(t, exitUsage, code, stderr)
		require.Contains(t, stderr, bad[0])
	}
}

func TestTasksStats(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	s := teststore.Open(t, dir)
	noop := fixture(t, "noop")
	dead := teststore.Queue(t, s, noop, tasks.Spec{Queue: "a", MaxAttempts: 1})
	endAttempt(t, s, dead, tasks.StateDead, "failed", "exit code 1")
	teststore.Queue(t, s, noop, tasks.Spec{Queue: "a"})
	teststore.Queue(t, s, noop, tasks.Spec{Queue: "b"})
	teststore.Queue(t, s, noop, tasks.Spec{Queue: "b", RunAt: time.Now().Add(time.Hour)}) // later: not ready
	require.NoError(t, s.Close())

	out, stderr, code := runInProcess(t, "tasks", "stats", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 4, out)
	// fields are a row's columns, WAITED (the oldest ready task's wait,
	// which depends on this machine's speed) checked apart.
	fields := func(line string) []string {
		f := strings.Fields(line)
		if len(f) > 3 && f[3] != "-" && f[3] != "WAITED" {
			_, err := time.ParseDuration(f[3])
			require.NoError(t, err, line)
			f[3] = "D"
		}
		return f
	}
	require.Equal(t, []string{"QUEUE", "QUEUED", "LATER", "WAITED", "CLAIMED", "RUNNING", "SUCCEEDED", "DEAD", "CANCELLED", "ALL"}, fields(lines[0]))
	require.Equal(t, []string{"a", "1", "0", "D", "0", "0", "0", "1", "0", "2"}, fields(lines[1]))
	require.Equal(t, []string{"b", "2", "1", "D", "0", "0", "0", "0", "0", "2"}, fields(lines[2]))
	require.Equal(t, []string{"(all)", "3", "1", "D", "0", "0", "0", "1", "0", "4"}, fields(lines[3]))

	require.Equal(t, map[string]any{
		"total": map[string]any{"queued": 3.0, "scheduled": 1.0, "claimed": 0.0, "running": 0.0, "succeeded": 0.0, "dead": 1.0, "cancelled": 0.0, "all": 4.0},
		"queues": map[string]any{
			"a": map[string]any{"queued": 1.0, "scheduled": 0.0, "claimed": 0.0, "running": 0.0, "succeeded": 0.0, "dead": 1.0, "cancelled": 0.0, "all": 2.0},
			"b": map[string]any{"queued": 2.0, "scheduled": 1.0, "claimed": 0.0, "running": 0.0, "succeeded": 0.0, "dead": 0.0, "cancelled": 0.0, "all": 2.0},
		},
		"succeeded_by_queue": true,
	}, statsJSON(t, dir, "a", "b"))

	// A succeeded task: counted by queue (SQLite keeps the count), so
	// queue a, holding only a succeeded task, is listed; a paused queue
	// with no task is listed too.
	dir = testwasm.DataDir(t)
	s = teststore.Open(t, dir)
	ok := teststore.Queue(t, s, noop, tasks.Spec{Queue: "a"})
	endAttempt(t, s, ok, tasks.StateSucceeded, "succeeded", "")
	teststore.Queue(t, s, noop, tasks.Spec{Queue: "b"})
	require.NoError(t, s.PauseQueue(t.Context(), "idle"))
	require.NoError(t, s.Close())
	out, stderr, code = runInProcess(t, "tasks", "stats", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	lines = strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 9, out)
	require.Equal(t, []string{"a", "0", "0", "-", "0", "0", "1", "0", "0", "1"}, fields(lines[1]))
	require.Equal(t, []string{"b", "1", "0", "D", "0", "0", "0", "0", "0", "1"}, fields(lines[2]))
	require.Equal(t, []string{"idle", "0", "0", "-", "0", "0", "0", "0", "0", "0"}, fields(lines[3]))
	require.Equal(t, []string{"(all)", "1", "0", "D", "0", "0", "1", "0", "0", "2"}, fields(lines[4]))
	require.Equal(t, []string{"PAUSED", "QUEUE", "SINCE"}, strings.Fields(lines[6]))
	require.Equal(t, "idle", strings.Fields(lines[7])[0])
	require.Equal(t, "(runner tasks resume idle resumes them)", lines[8])
	require.Equal(t, map[string]any{
		"total": map[string]any{"queued": 1.0, "scheduled": 0.0, "claimed": 0.0, "running": 0.0, "succeeded": 1.0, "dead": 0.0, "cancelled": 0.0, "all": 2.0},
		"queues": map[string]any{
			"a":    map[string]any{"queued": 0.0, "scheduled": 0.0, "claimed": 0.0, "running": 0.0, "succeeded": 1.0, "dead": 0.0, "cancelled": 0.0, "all": 1.0},
			"b":    map[string]any{"queued": 1.0, "scheduled": 0.0, "claimed": 0.0, "running": 0.0, "succeeded": 0.0, "dead": 0.0, "cancelled": 0.0, "all": 1.0},
			"idle": map[string]any{"queued": 0.0, "scheduled": 0.0, "claimed": 0.0, "running": 0.0, "succeeded": 0.0, "dead": 0.0, "cancelled": 0.0, "all": 0.0},
		},
		"paused":             []any{"idle"},
		"succeeded_by_queue": true,
	}, statsJSON(t, dir, "b"))
}

// statsJSON is what runner tasks stats --json prints for the store of
// dir, decoded, after checking that the total and each of queues has an
// oldest_ready_seconds of 0 or more, and dropping it (it depends on the
// clock).
func statsJSON(t *testing.T, dir string, queues ...string) map[string]any {
	t.Helper()
	out, stderr, code := runInProcess(t, "tasks", "stats", "--json", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	counts := []any{got["total"]}
	for _, q := range queues {
		counts = append(counts, got["queues"].(map[string]any)[q])
	}
	for _, c := range counts {
		m := c.(map[string]any)
		require.GreaterOrEqual(t, m["oldest_ready_seconds"], 0.0, "%v", m)
		delete(m, "oldest_ready_seconds")
	}
	return got
}
