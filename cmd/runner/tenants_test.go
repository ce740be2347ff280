package main

import (
	"context"
	"encoding/json"
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

// TestTenantsCommand: runner submit --tenant stores the task's tenant,
// tasks show prints it, a bad tenant is a usage error with nothing queued;
// runner tenants weight sets a weight the store keeps, runner tenants lists
// it, a bad weight is a usage error; tenant_weights is checked as config.
func TestTenantsCommand(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	_, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--tenant", "bad\ttenant")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "tenant")
	require.NoFileExists(t, dir+"/stint.db", "nothing queued")

	out, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--tenant", "acme")
	require.Equal(t, 0, code, stderr)
	id := testutil.TaskID(t, out)
	task, err := teststore.Open(t, dir).Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "acme", task.Tenant)
	out, stderr, code = runInProcess(t, "tasks", "show", out[:len(out)-1], "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `tenant:\s+acme`, out)

	for _, bad := range []string{"0", "1001", "three"} {
		_, stderr, code = runInProcess(t, "tenants", "weight", "acme", bad, "--data-dir", dir)
		require.Equal(t, exitUsage, code, "%s: %s", bad, stderr)
		require.Contains(t, stderr, "weight")
	}
	_, stderr, code = runInProcess(t, "tenants", "weight", "acme", "3", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runInProcess(t, "tenants", "max-running", "--data-dir", dir, "--", "acme", "-1")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "max_running")
	_, stderr, code = runInProcess(t, "tenants", "max-running", "beta", "5", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runInProcess(t, "tenants", "quota", "gamma", "1000", "--per", "1ms", "--data-dir", dir)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "1s")
	_, stderr, code = runInProcess(t, "tenants", "quota", "gamma", "1000", "--per", "1h", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runInProcess(t, "tenants", "rate", "gamma", "fast", "--data-dir", dir)
	require.Equal(t, exitUsage, code, stderr)
	_, stderr, code = runInProcess(t, "tenants", "rate", "gamma", "2.5", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	out, stderr, code = runInProcess(t, "tenants", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `"acme"\s+3\s+-\s+0\s+0\s+1\s+0\s`, out, "acme's task is ready")
	require.Regexp(t, `"beta"\s+1\s+5\s+0`, out)
	require.Regexp(t, `"gamma"\s+1\s+-\s+0\s+0\s+0\s+0\s+2.5/s\s+0 of 1000 per 1h\s+-`, out)
	out, stderr, code = runInProcess(t, "tenants", "--data-dir", dir, "--json")
	require.Equal(t, 0, code, stderr)
	var got struct{ Tenants map[string]tasks.Tenant }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, map[string]tasks.Tenant{"acme": {Weight: 3, SharedLimits: tasks.SharedLimits{Queued: 1}}, "beta": {Weight: 1, SharedLimits: tasks.SharedLimits{MaxRunning: 5}},
		"gamma": {Weight: 1, SharedLimits: tasks.SharedLimits{WorkQuota: 1000, WorkPeriod: time.Hour, Rate: 2.5, Tokens: 2.5}}}, got.Tenants)

	for _, bad := range []string{"acme", "acme=0", "=x"} {
		_, stderr, code = runInProcess(t, "config", "--tenant-weights", bad)
		require.Equal(t, exitUsage, code, "%s: %s", bad, stderr)
		require.Contains(t, stderr, "tenant_weights")
	}
	_, stderr, code = runInProcess(t, "config", "--tenant-weights", "acme=2,=3")
	require.Equal(t, 0, code, "the empty tenant may be weighted: %s", stderr)
	_, stderr, code = runInProcess(t, "config", "--tenant-max-running", "acme=-1")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "tenant_max_running")
}

// TestTasksShowThrottled: a ready task whose tenant runs its most tasks
// at once says so in runner tasks show and its --json; once the tenant's
// running task ends, it no longer does.
func TestTasksShowThrottled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testwasm.DataDir(t)
	var ids []string
	for range 2 {
		out, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--tenant", "acme")
		require.Equal(t, 0, code, stderr)
		ids = append(ids, strings.TrimSpace(out))
	}
	_, stderr, code := runInProcess(t, "tenants", "max-running", "acme", "1", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	s := teststore.Open(t, dir)
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "test", Max: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1, "acme's limit")
	waiting := ids[0]
	if strconv.FormatInt(cl[0].Task.ID, 10) == waiting {
		waiting = ids[1]
	}
	out, stderr, code := runInProcess(t, "tasks", "show", waiting, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `waits:\s+throttled: its tenant runs its most tasks at once \(1\)`, out)
	out, stderr, code = runInProcess(t, "tasks", "show", waiting, "--data-dir", dir, "--json")
	require.Equal(t, 0, code, stderr)
	var got struct{ Task server.TaskView }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.NotNil(t, got.Task.Throttled)
	require.Contains(t, got.Task.Throttled.Reason, "most tasks at once")

	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	out, stderr, code = runInProcess(t, "tasks", "show", waiting, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, out, "waits:")
}
