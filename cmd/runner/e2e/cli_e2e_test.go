package e2e

// These tests run the real binary one process at a time and are not
// parallel: they run before the package's long parallel e2e tests
// (shutdown, SIGKILL), which time their guests against a loaded machine,
// instead of adding to their load.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// TestRunJSON: `runner run --json` prints the outcome as `tasks show
// --json` prints an attempt, with the guest's stdout in it (and not raw),
// and exits with the outcome's code as without --json.
func TestRunJSON(t *testing.T) {
	t.Parallel()
	rep := runJSON[map[string]any](t, 0, "hi there", "run", "-v", fixture(t, "echo"), "--input", "-", "--json")
	require.Equal(t, "succeeded", rep["outcome"])
	require.Equal(t, "hi there", rep["stdout"])
	require.EqualValues(t, 8, rep["stdout_bytes"])
	require.EqualValues(t, 1, rep["number"])
	require.Contains(t, rep, "started_at")
	require.Contains(t, rep, "ended_at")
	require.NotContains(t, rep, "task_id", "a direct run has no task")

	type moduleAttempt struct {
		tasks.Attempt
		Module string `json:"module"`
	}
	att := runJSON[moduleAttempt](t, 10, "", "run", "-v", fixture(t, "exit3"), "--json")
	require.Equal(t, "failed", att.Outcome)
	require.Equal(t, 3, att.ExitCode)
	require.Equal(t, fixture(t, "exit3"), att.Module)
	require.False(t, att.EndedAt.Before(att.StartedAt))
}

// TestRunGuestExitCode: with --exit-code guest, runner exits as the guest
// did whenever it exited; the outcome's code otherwise. The default is the
// outcome's code.
func TestRunGuestExitCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fixture string
		args    []string
		want    int
	}{
		{"exit3", nil, 10},
		{"exit3", []string{"--exit-code", "runner"}, 10},
		{"exit3", []string{"--exit-code", "guest"}, 3},
		{"noop", []string{"--exit-code", "guest"}, 0},
		{"trap", []string{"--exit-code", "guest"}, 11},
		{"noop", []string{"--exit-code", "mine"}, 2},
	} {
		_, stderr, code := runRunner(t, "", append([]string{"run", "-v", fixture(t, c.fixture)}, c.args...)...)
		require.Equal(t, c.want, code, "%s %v: %s", c.fixture, c.args, stderr)
	}
	_, stderr, _ := runRunner(t, "", "run", "-v", fixture(t, "noop"), "--exit-code", "mine")
	require.Contains(t, stderr, "want runner (the default) or guest")
	out, _, code := runRunner(t, "", "run", "-v", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "--exit-code guest")
}

// TestSubmitJSON: `runner submit --json` prints the task as `tasks show
// --json` does, at once or, with --wait, once it has ended; the exit code
// still says how it ended.
func TestSubmitJSON(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	queued := runJSON[tasks.Task](t, 0, "in", "submit", fixture(t, "echo"), "--data-dir", dir, "--json", "--input", "-", "--label", "job=a")
	require.Equal(t, tasks.StateQueued, queued.State)
	require.Positive(t, queued.ID)
	require.Equal(t, 2, queued.InputSize)
	require.Equal(t, "a", queued.Labels["job"])
	require.Empty(t, queued.Input, "the input bytes are left out")

	p := startServe(t, dir)
	done := runJSON[tasks.Task](t, 0, "abc", "submit", fixture(t, "echo"), "--data-dir", dir, "--json", "--wait", "--input", "-")
	require.Equal(t, tasks.StateSucceeded, done.State)
	require.Equal(t, 3, done.ResultSize)

	dead := runJSON[tasks.Task](t, exitTaskDead, "", "submit", fixture(t, "exit3"),
		"--data-dir", dir, "--json", "--wait", "--max-attempts", "1")
	require.Equal(t, tasks.StateDead, dead.State)
	p.stopCleanly(t)
}

// complete asks the real binary for the completions of args (cobra's
// __complete, what the shell scripts call) and returns the words offered.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, stderr, code := runRunner(t, "", append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, code, stderr)
	var words []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue // the directive
		}
		words = append(words, strings.SplitN(l, "\t", 2)[0])
	}
	return words
}

// TestCompletion: task ids (of the tasks each command applies to), states
// and queues are completed from the store, read only; without a store
// nothing is offered and nothing is created.
func TestCompletion(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	s := openTestStore(t, dir)
	ctx := context.Background()
	sha, err := s.PutModule(ctx, readFile(t, fixture(t, "noop")))
	require.NoError(t, err)
	var ids []string
	for _, q := range []string{"", "batch", "batch"} {
		task, _, err := s.Submit(ctx, tasks.Spec{Module: sha, Queue: q})
		require.NoError(t, err)
		ids = append(ids, fmt.Sprint(task.ID))
	}
	_, err = s.Cancel(ctx, mustID(t, ids[2]))
	require.NoError(t, err)

	require.Equal(t, ids, complete(t, "tasks", "show", "--data-dir", dir, ""))
	require.Equal(t, ids[:2], complete(t, "tasks", "cancel", "--data-dir", dir, ""), "only tasks that can be cancelled")
	require.Equal(t, ids[2:], complete(t, "tasks", "retry", "--data-dir", dir, ""), "only tasks that can be retried")
	require.Empty(t, complete(t, "tasks", "result", "--data-dir", dir, ""))
	require.Empty(t, complete(t, "tasks", "show", "--data-dir", dir, ids[0], ""), "one id only")
	require.Equal(t, []string{"queued", "claimed", "running", "succeeded", "dead", "cancelled"}, complete(t, "tasks", "list", "--state", ""))
	require.Equal(t, []string{"default", "batch"}, complete(t, "tasks", "list", "--data-dir", dir, "--queue", ""))
	require.Equal(t, []string{"default", "batch"}, complete(t, "submit", "x.wasm", "--data-dir", dir, "--queue", ""))

	empty := t.TempDir()
	missing := filepath.Join(empty, "stint-data")
	require.Empty(t, complete(t, "tasks", "show", "--data-dir", missing, ""))
	require.Equal(t, []string{"default"}, complete(t, "tasks", "list", "--data-dir", missing, "--queue", ""))
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries, "completion creates nothing")
}

// TestConfigInit: `runner config init` writes every key at its default, in
// a file that loads back as exactly the defaults (every value from the
// file), refuses to overwrite a file without --force, and prints to stdout
// without a path.
func TestConfigInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "runner.yaml")
	_, stderr, code := runRunner(t, "", "config", "init", path)
	require.Equal(t, 0, code, stderr)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	written := readFile(t, path)

	type setting struct {
		Value  any
		Source string
	}
	fromFile := runJSON[map[string]setting](t, 0, "", "config", "--config", path, "--json")
	every := runJSON[map[string]any](t, 0, "", "config", "--json") // every key (TestConfigJSON)
	require.Len(t, fromFile, len(every))
	for k, e := range fromFile {
		if k == "log.format" {
			continue // runRunner sets RUNNER_LOG_FORMAT
		}
		require.Equal(t, "file "+path, e.Source, "%s is in the file", k)
	}

	_, stderr, code = runRunner(t, "", "config", "init", path)
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "already exists")
	require.Contains(t, stderr, "--force")
	require.NoError(t, os.WriteFile(path, []byte("workers: 3\n"), 0o600))
	_, stderr, code = runRunner(t, "", "config", "init", path)
	require.Equal(t, exitUsage, code, stderr)
	require.Equal(t, "workers: 3\n", string(readFile(t, path)), "left as it was")
	_, stderr, code = runRunner(t, "", "config", "init", path, "--force")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, written, readFile(t, path))

	out, stderr, code := runRunner(t, "", "config", "init")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, string(written), out)
}
