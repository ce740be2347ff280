package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTenantsCommand: runner submit --tenant stores the task's tenant,
// tasks show prints it, a bad tenant is a usage error with nothing queued;
// runner tenants weight sets a weight the store keeps, runner tenants lists
// it, a bad weight is a usage error; tenant_weights is checked as config.
func TestTenantsCommand(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	_, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--tenant", "bad\ttenant")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "tenant")
	require.NoFileExists(t, dir+"/stint.db", "nothing queued")

	out, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--tenant", "acme")
	require.Equal(t, 0, code, stderr)
	id := mustID(t, out)
	task, err := openTestStore(t, dir).Get(context.Background(), id)
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
	out, stderr, code = runInProcess(t, "tenants", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `acme\s+3`, out)
	out, stderr, code = runInProcess(t, "tenants", "--data-dir", dir, "--json")
	require.Equal(t, 0, code, stderr)
	var got struct{ Weights map[string]int }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, map[string]int{"acme": 3}, got.Weights)

	for _, bad := range []string{"acme", "acme=0", "=x"} {
		_, stderr, code = runInProcess(t, "config", "--tenant-weights", bad)
		require.Equal(t, exitUsage, code, "%s: %s", bad, stderr)
		require.Contains(t, stderr, "tenant_weights")
	}
	_, stderr, code = runInProcess(t, "config", "--tenant-weights", "acme=2,=3")
	require.Equal(t, 0, code, "the empty tenant may be weighted: %s", stderr)
}
