package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// TestQueuesCommand: runner queues max-running, rate and quota set limits
// the store keeps and its claims apply (a second task of the limited
// queue waits while another queue's goes), bad values and names are usage
// errors, runner queues lists them (and --json), runner tasks show says
// why a task of the queue waits, and 0 removes a limit.
func TestQueuesCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testwasm.DataDir(t)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runInProcess(t, append(args, "--data-dir", dir)...)
	}
	var slow []string
	for range 2 {
		out, stderr, code := run("submit", fixture(t, "noop"), "--queue", "slow")
		require.Equal(t, 0, code, stderr)
		slow = append(slow, strings.TrimSpace(out))
	}
	_, stderr, code := run("submit", fixture(t, "noop"), "--queue", "fast")
	require.Equal(t, 0, code, stderr)

	_, stderr, code = run("queues")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "no queue has a limit")
	out, stderr, code := runInProcess(t, "__complete", "queues", "max-running", "--data-dir", dir, "")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, []string{"default", "slow", "fast"}, strings.Fields(out)[:3], "the queues are completed")
	out, stderr, code = runInProcess(t, "__complete", "queues", "rate", "--data-dir", dir, "slow", "")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, out, "slow", "no queue after the queue")
	for _, bad := range [][]string{
		{"queues", "max-running", "slow", "many"},
		{"queues", "max-running", "--", "slow", "-1"},
		{"queues", "max-running", "", "1"},
		{"queues", "rate", "slow", "fast"},
		{"queues", "rate", "--", "slow", "-2"},
		{"queues", "quota", "slow", "1000", "--per", "1ms"},
		{"queues", "quota", "slow", "lots"},
	} {
		_, stderr, code = run(bad...)
		require.Equal(t, exitUsage, code, "%v: %s", bad, stderr)
	}
	out, stderr, code = run("queues", "max-running", "slow", "1")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "queue \"slow\": max_running 1\n", out)
	out, stderr, code = run("queues", "rate", "mail", "2.5")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "queue \"mail\": rate 2.5 a second\n", out)
	out, stderr, code = run("queues", "quota", "batch", "1000", "--per", "1h")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "queue \"batch\": work quota 1000 per 1h\n", out)

	s := teststore.Open(t, dir)
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "test", Max: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 2)
	require.ElementsMatch(t, []string{"slow", "fast"}, []string{cl[0].Task.Queue, cl[1].Task.Queue}, "one of slow's, and fast's")

	out, stderr, code = run("queues")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^QUEUE\s+MAX RUNNING\s+RUNNING\s+CLAIMED\s+READY`, out)
	require.Regexp(t, `(?m)^batch\s+-\s+0\s+0\s+0\s+0\s+-\s+0 of 1000 per 1h\s+-$`, out)
	require.Regexp(t, `(?m)^mail\s+-\s+0\s+0\s+0\s+0\s+2.5/s\s+-\s+-$`, out)
	require.Regexp(t, `(?m)^slow\s+1\s+0\s+1\s+1\s+0\s+-\s+-\s+-$`, out, "one claimed, one ready")
	out, stderr, code = run("queues", "--json")
	require.Equal(t, 0, code, stderr)
	var got struct{ Queues map[string]tasks.SharedLimits }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, map[string]tasks.SharedLimits{
		"batch": {WorkQuota: 1000, WorkPeriod: time.Hour},
		"mail":  {Rate: 2.5, Tokens: 2.5},
		"slow":  {MaxRunning: 1, Claimed: 1, Queued: 1},
	}, got.Queues)

	waiting := slow[0]
	if id := testutil.TaskID(t, waiting); id == cl[0].Task.ID || id == cl[1].Task.ID {
		waiting = slow[1]
	}
	out, stderr, code = run("tasks", "show", waiting)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `waits:\s+throttled: its queue runs its most tasks at once \(1\)`, out)

	_, stderr, code = run("queues", "max-running", "slow", "0")
	require.Equal(t, 0, code, stderr)
	out, stderr, code = run("tasks", "show", waiting)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, out, "waits:")
	cl, err = s.Claim(ctx, tasks.ClaimRequest{Owner: "test", Max: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1, "no limit: slow's other task")
}
