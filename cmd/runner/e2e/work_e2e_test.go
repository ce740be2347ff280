package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// TestRunWork: `runner run` reports the guest's work units (the same for
// the same input), and --work ends a guest past its budget with outcome
// work_limit (exit code 18) while a budget above its need changes
// nothing. In wazero interrupt mode a work budget is refused.
func TestRunWork(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("z", 40)
	work := func(args ...string) (int64, string, int) {
		out, stderr, code := runRunner(t, in, append([]string{"run", "-v", fixture(t, "work"), "--input", "-", "--json"}, args...)...)
		var rep map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out+stderr)
		n, _ := rep["work_units"].(float64)
		return int64(n), rep["outcome"].(string), code
	}
	need, outcome, code := work()
	require.Equal(t, 0, code)
	require.Equal(t, "succeeded", outcome)
	require.Positive(t, need)
	again, _, _ := work()
	require.Equal(t, need, again, "same module and input, same work")
	got, outcome, code := work("--work", fmt.Sprint(need+1))
	require.Equal(t, 0, code)
	require.Equal(t, "succeeded", outcome)
	require.Equal(t, need, got)

	stderr := runExits(t, 18, `"outcome":"work_limit"`, "run", "-v", fixture(t, "loop"), "--work", "3000000")
	require.Contains(t, stderr, `"work_units":`)
	require.Contains(t, stderr, "work limit of 3000000 units")

	_, stderr, code = runRunner(t, "", "run", "-v", fixture(t, "loop"), "--work", "3000000", "--sandbox-interrupt", "wazero")
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "needs sandbox.interrupt=checks")
	_, stderr, code = runRunner(t, "", "run", "-v", fixture(t, "noop"), "--limits-work", "1000", "--sandbox-interrupt", "wazero")
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "limits.work: a work budget needs sandbox.interrupt=checks")
}

// TestQueuedWork: a queued task's attempts keep their work units (`tasks
// show`, as text and JSON), and a task past its budget (--work) is dead
// after one attempt with outcome work_limit.
func TestQueuedWork(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	p := startServe(t, dir)
	done := runJSON[tasks.Task](t, 0, strings.Repeat("z", 40), "submit", fixture(t, "work"),
		"--data-dir", dir, "--json", "--wait", "--input", "-")
	require.Equal(t, tasks.StateSucceeded, done.State)

	dead := runJSON[tasks.Task](t, exitTaskDead, "", "submit", fixture(t, "loop"),
		"--data-dir", dir, "--json", "--wait", "--work", "3000000", "--max-attempts", "3")
	require.Equal(t, tasks.StateDead, dead.State)
	require.Equal(t, int64(3000000), dead.Limits.Work)
	p.stopCleanly(t)

	type taskShown struct {
		Attempts []tasks.Attempt `json:"attempts"`
	}
	shown := runJSON[taskShown](t, 0, "", "tasks", "show", fmt.Sprint(done.ID), "--data-dir", dir, "--json")
	require.Len(t, shown.Attempts, 1)
	require.Positive(t, shown.Attempts[0].Work)
	show, stderr, code := runRunner(t, "", "tasks", "show", fmt.Sprint(dead.ID), "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, show, "WORK")
	require.Contains(t, show, "work_limit")
	require.Contains(t, show, "work 3000000 units")
	require.Contains(t, show, "attempts:    1 (failures 1 of max 3)", "one attempt: not retried")
}
