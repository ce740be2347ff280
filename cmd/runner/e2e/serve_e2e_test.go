package e2e

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

func submitN(t *testing.T, dir, module, input string, n int, extra ...string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		out, stderr, code := runRunner(t, input, append([]string{"submit", module, "--input", "-", "--data-dir", dir}, extra...)...)
		require.Equal(t, 0, code, stderr)
		ids[i] = strings.TrimSpace(out)
	}
	return ids
}

// serveArgs is the command line of runner serve on the data directory dir
// with two workers and no HTTP API, then extra.
func serveArgs(dir string, extra ...string) []string {
	return append([]string{"serve", "--data-dir", dir, "--http-addr", "", "--workers", "2"}, extra...)
}

// startServe starts runner serve on the data directory dir with the flags
// of serveArgs and extra, and waits until it is ready.
func startServe(t testing.TB, dir string, extra ...string) *proc {
	t.Helper()
	p := startRunner(t, nil, serveArgs(dir, extra...)...)
	p.waitLine(t, "runner ready")
	return p
}

// TestServeSurvivesSIGKILL: 200 primes tasks, the runner is killed with
// SIGKILL mid-run, restarted, and every task ends succeeded exactly once with
// the right answer; at least one resumed from a checkpoint.
func TestServeSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	primes := testwasm.GoGuest(t, "primes")
	dir := dataDir(t)
	const n, want = "100000 5000", "primes below 100000: 9592\n"
	// Store the module once and queue 200 tasks through the store directly
	// (submitting through the CLI 200 times would only test process start).
	s := openTestStore(t, dir)
	ctx := context.Background()
	out, stderr, code := runRunner(t, n, "submit", primes, "--input", "-", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	first, err := s.Get(ctx, mustID(t, out))
	require.NoError(t, err)
	for range 199 {
		_, _, err := s.Submit(ctx, first.Spec)
		require.NoError(t, err)
	}

	p := startServe(t, dir)
	// Kill once some tasks are done and a running one has a checkpoint from
	// its first half: the rest of its work (the costlier half) leaves ample
	// time for the kill to land before it finishes, even on a loaded machine.
	testutil.WaitFor(t, "a running task with an early checkpoint", func() bool {
		done, err := s.List(ctx, tasks.ListFilter{State: tasks.StateSucceeded, Limit: 1})
		require.NoError(t, err)
		if len(done) == 0 {
			return false
		}
		running, err := s.List(ctx, tasks.ListFilter{State: tasks.StateRunning})
		require.NoError(t, err)
		for _, r := range running {
			if r.CheckpointSize == 0 {
				continue
			}
			cp, err := s.Checkpoint(ctx, r.ID)
			require.NoError(t, err)
			// primes' checkpoint: N, next number to test, count (uint64 LE).
			if len(cp) == 24 && binary.LittleEndian.Uint64(cp[8:]) <= 50000 {
				return true
			}
		}
		return false
	})
	p.kill(t)

	p2 := startRunner(t, nil, serveArgs(dir)...)
	p2.waitLine(t, "recovered tasks a previous runner left running")
	testutil.WaitFor(t, "all 200 tasks to succeed", func() bool {
		done, err := s.List(ctx, tasks.ListFilter{State: tasks.StateSucceeded, Limit: 1000})
		require.NoError(t, err)
		return len(done) == 200
	})
	p2.stopCleanly(t)

	all, err := s.List(ctx, tasks.ListFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, all, 200)
	resumed := 0
	for _, task := range all {
		require.Equal(t, tasks.StateSucceeded, task.State)
		got, err := s.Get(ctx, task.ID) // List leaves results out
		require.NoError(t, err)
		require.Equal(t, want, string(got.Result), "task %d", task.ID)
		atts, err := s.Attempts(ctx, task.ID)
		require.NoError(t, err)
		succeeded := 0
		for _, a := range atts {
			if a.Outcome == "succeeded" {
				succeeded++
				if a.Resumed {
					resumed++
				}
			}
		}
		require.Equal(t, 1, succeeded, "task %d succeeded exactly once: %+v", task.ID, atts)
	}
	require.GreaterOrEqual(t, resumed, 1, "at least one task resumed from its checkpoint")
}

func TestServeRefusesASecondRunner(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	p := startServe(t, dir)
	runExits(t, 1, "another `runner serve` running", serveArgs(dir)...)
	p.stopCleanly(t)
}

func TestTasksCommands(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	noop, exit3 := fixture(t, "noop"), fixture(t, "exit3")
	id := submitN(t, dir, noop, "", 1, "--run-at", "1h")[0]
	out, stderr, code := runRunner(t, "", "tasks", "list", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "scheduled", "a queued task whose run_at is to come")
	out, _, code = runRunner(t, "", "tasks", "cancel", id, "--data-dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "cancelled")
	out, _, code = runRunner(t, "", "tasks", "retry", id, "--data-dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "queued")

	// Idempotency key: the same key gives the same id.
	a := submitN(t, dir, noop, "", 1, "--key", "k1")[0]
	b := submitN(t, dir, noop, "", 1, "--key", "k1")[0]
	require.Equal(t, a, b)

	// A failing task ends dead; show lists its attempts.
	p := startServe(t, dir)
	out, stderr, code = runRunner(t, "", "submit", exit3, "--max-attempts", "1", "--wait", "--data-dir", dir)
	require.Equal(t, 4, code, out)
	require.Contains(t, stderr, "ended dead: exit code 3")
	out, stderr, code = runRunner(t, "", "submit", fixture(t, "seams_stderr_fail"), "--max-attempts", "1",
		"--label", "team=data", "--label", "job=nightly", "--wait", "--data-dir", dir)
	require.Equal(t, 4, code, out)
	require.Contains(t, stderr, "ended dead: exit code 1")
	failed, _, _ := runRunner(t, "", "tasks", "list", "--state", "dead", "--data-dir", dir)
	failedID := strings.Fields(strings.Split(strings.TrimSpace(failed), "\n")[2])[0]
	out, _, code = runRunner(t, "", "tasks", "show", failedID, "--data-dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "job=nightly team=data", "labels, sorted")
	require.Contains(t, out, "stderr of attempt 1")
	require.Contains(t, out, "  boom: the last line\n", "the tail of the attempt's stderr")
	runExits(t, 2, "--label", "submit", noop, "--label", "novalue", "--data-dir", dir)
	out, stderr, code = runRunner(t, "hi", "submit", fixture(t, "echo"), "--input", "-", "--wait", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "hi", out)
	// A command the task's state does not allow says so, without the
	// store's internal prefixes.
	done, _, _ := runRunner(t, "", "tasks", "list", "--state", "succeeded", "--data-dir", dir)
	doneID := strings.Fields(strings.Split(strings.TrimSpace(done), "\n")[1])[0]
	stderr = runExits(t, 1, "\nrunner: task "+doneID+" has already succeeded\n",
		"tasks", "cancel", doneID, "--data-dir", dir)
	require.NotContains(t, stderr, "sqlite")
	runExits(t, 1, "\nrunner: task "+doneID+" is succeeded: only a dead or cancelled task can be retried\n",
		"tasks", "retry", doneID, "--data-dir", dir)
	p.stopCleanly(t)

	all, _, _ := runRunner(t, "", "tasks", "list", "--state", "dead", "--data-dir", dir) // the exit3 task first
	deadID := strings.Fields(strings.Split(all, "\n")[1])[0]
	out, _, code = runRunner(t, "", "tasks", "show", deadID, "--data-dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "dead")
	require.Contains(t, out, "failed")
	require.Contains(t, out, "exit code 3")
	runExits(t, 1, "has no result", "tasks", "result", deadID, "--data-dir", dir)

	// Bad input: unknown id, bad id, bad state.
	runExits(t, 3, "no task with id 999999", "tasks", "show", "999999", "--data-dir", dir)
	runExits(t, 2, "want a positive number", "tasks", "show", "abc", "--data-dir", dir)
	runExits(t, 2, "--state", "tasks", "list", "--state", "bogus", "--data-dir", dir)
}
