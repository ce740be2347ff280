package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/tasks"
)

// TestBatchOnRetry: runner batch --on-retry restart queues every input's
// task with OnRetry restart (none given: "", which resumes), and any
// other value is a usage error naming the flag, before anything is
// written (no output folder, no data directory).
func TestBatchOnRetry(t *testing.T) {
	t.Parallel()
	root, in := inputFolder(t, "a.txt", "b.txt")
	batch := func(out, data string, args ...string) (string, int) {
		_, stderr, code := runInProcess(t, append([]string{"batch", fixture(t, "echo"), "--in", in, "--out", out, "--data-dir", data}, args...)...)
		return stderr, code
	}

	out, data := filepath.Join(root, "out-bad"), filepath.Join(root, "data-bad")
	stderr, code := batch(out, data, "--on-retry", "never")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, `--on-retry "never": want resume`)
	require.NoDirExists(t, out)
	require.NoDirExists(t, data)

	for _, v := range []string{tasks.OnRetryRestart, tasks.OnRetryResume, ""} {
		out, data := filepath.Join(root, "out-"+v), filepath.Join(root, "data-"+v)
		args := []string{}
		if v != "" {
			args = append(args, "--on-retry", v)
		}
		stderr, code := batch(out, data, args...)
		require.Equal(t, 0, code, "--on-retry %q: %s", v, stderr)
		got, err := os.ReadFile(filepath.Join(out, "a.txt"))
		require.NoError(t, err)
		require.Equal(t, "a.txt", string(got))
		all, err := teststore.Open(t, data).List(context.Background(), tasks.ListFilter{Limit: 10})
		require.NoError(t, err)
		require.Len(t, all, 2)
		for _, task := range all {
			require.Equal(t, v, task.OnRetry, "--on-retry %q: task %d", v, task.ID)
		}
	}
}
