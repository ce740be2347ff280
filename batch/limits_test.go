package batch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/tasks"
)

// bigInputs makes every third of c's inputs size bytes long.
func bigInputs(t *testing.T, c batch.Config, n, size int) map[string]bool {
	t.Helper()
	big := map[string]bool{}
	for i := 0; i < n; i += 3 {
		name := fmt.Sprintf("f%03d.txt", i)
		require.NoError(t, os.WriteFile(filepath.Join(c.In, name), []byte(strings.Repeat("x", size)), 0o644))
		big[name] = true
	}
	return big
}

// batchTasks lists the tasks of c's queue (after its run: the store is
// free).
func batchTasks(t *testing.T, c batch.Config) []tasks.Task {
	t.Helper()
	ctx := context.Background()
	r, err := stint.Open(ctx, c.Runner)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	ts, err := r.Store().List(ctx, tasks.ListFilter{Queue: batch.Queue(c.Out), Limit: 1000})
	require.NoError(t, err)
	return ts
}

// A rerun whose limits differ applies them to the inputs it tries again:
// their tasks carry the new limits (issue 41, item 10).
func TestRerunAppliesItsLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := config(t, "upper", 12)
	big := bigInputs(t, c, 12, 3000)
	c.Spec.Limits.Stdout = 1 << 10
	sum, err := batch.Run(ctx, c)
	require.NoError(t, err)
	require.Equal(t, len(big), sum.Failed)
	for _, f := range sum.Failures {
		require.Equal(t, "output_limit", f.Outcome)
		require.Contains(t, f.Reason, "raise it with --stdout-cap or limits.stdout")
	}

	c.Spec.Limits.Stdout, c.Spec.MaxAttempts = 8<<10, 2
	sum, err = batch.Run(ctx, c)
	require.NoError(t, err)
	require.Equal(t, len(big), sum.Succeeded, "%+v", sum.Failures)
	require.Equal(t, 12-len(big), sum.AlreadyDone)
	ts := batchTasks(t, c)
	require.Len(t, ts, 12, "one task per input: the failed ones replaced")
	for _, tk := range ts {
		require.Equal(t, tasks.StateSucceeded, tk.State)
		if big[filepath.Base(tk.Labels[batch.LabelInput])] {
			require.Equal(t, int64(8<<10), tk.Limits.Stdout)
			require.Equal(t, 2, tk.MaxAttempts)
		} else {
			require.Equal(t, int64(1<<10), tk.Limits.Stdout, "a success is not run again")
		}
	}

	// --skip-failed: no input tried again, no task replaced.
	c2 := config(t, "upper", 6)
	bigInputs(t, c2, 6, 3000)
	c2.Spec.Limits.Stdout = 1 << 10
	_, err = batch.Run(ctx, c2)
	require.NoError(t, err)
	before := batchTasks(t, c2)
	c2.Spec.Limits.Stdout, c2.SkipFailed = 8<<10, true
	sum, err = batch.Run(ctx, c2)
	require.NoError(t, err)
	require.Equal(t, 2, sum.SkippedFailed)
	require.Equal(t, before, batchTasks(t, c2))
}

// An output is a file: a batch's default stdout cap is the runner's
// maximum (Pool.Policy.Max.Stdout), else DefaultStdout, not the runner's
// default for a stored result (issue 41, item 11).
func TestDefaultStdoutFitsFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := config(t, "upper", 3)
	require.NoError(t, os.WriteFile(filepath.Join(c.In, "big.txt"), []byte(strings.Repeat("y", 3<<20)), 0o644))
	sum, err := batch.Run(ctx, c)
	require.NoError(t, err, "%+v", sum.Failures)
	require.Equal(t, 4, sum.Succeeded)
	got, err := os.ReadFile(filepath.Join(c.Out, "big.txt"))
	require.NoError(t, err)
	require.Len(t, got, 3<<20)
	for _, tk := range batchTasks(t, c) {
		require.Equal(t, int64(batch.DefaultStdout), tk.Limits.Stdout)
	}

	c = config(t, "upper", 2)
	c.Runner.Pool.Policy.Max.Stdout = 5 << 20
	_, err = batch.Run(ctx, c)
	require.NoError(t, err)
	for _, tk := range batchTasks(t, c) {
		require.Equal(t, int64(5<<20), tk.Limits.Stdout)
	}
}

// WantAttempt gets an input done in an earlier run its task's last
// attempt, its output's size and its task (runner batch --joblog writes
// the line an earlier run did not; issue 41, item 12).
func TestWantAttemptOfInputsDoneBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := config(t, "upper", 4)
	_, err := batch.Run(ctx, c)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(c.Out, "f001.txt"))) // written again, from the store

	var mu sync.Mutex
	got := map[string]batch.Result{}
	c.WantAttempt = func(r batch.Result) bool { return r.Name != "f003.txt" }
	c.OnDone = func(r batch.Result) {
		mu.Lock()
		defer mu.Unlock()
		got[r.Name] = r
	}
	sum, err := batch.Run(ctx, c)
	require.NoError(t, err)
	require.Equal(t, 4, sum.AlreadyDone)
	require.Len(t, got, 4)
	for name, r := range got {
		require.True(t, r.AlreadyDone, name)
		require.NotZero(t, r.TaskID, name)
		require.Equal(t, len("INPUT 1\n"), r.OutputBytes, name)
		if name == "f003.txt" {
			require.Nil(t, r.Attempt, "not asked for")
			continue
		}
		require.NotNil(t, r.Attempt, name)
		require.Equal(t, "succeeded", r.Attempt.Outcome)
		require.False(t, r.Attempt.StartedAt.IsZero())
	}
}
