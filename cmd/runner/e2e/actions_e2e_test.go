package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestTasksActions: runner tasks retry, cancel and delete take many ids,
// or a filter that counts first and acts with --yes; pause and resume are
// stored and shown; tasks list shows the module's name and a scheduled
// task's time. A count creates nothing in the data directory.
func TestTasksActions(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	noop := filepath.Join(t.TempDir(), "my-job.wasm")
	require.NoError(t, os.WriteFile(noop, readFile(t, fixture(t, "noop")), 0o644))
	submit := func(args ...string) string {
		t.Helper()
		out, stderr, code := runRunner(t, "", append([]string{"submit", noop, "--data-dir", dir}, args...)...)
		require.Equal(t, 0, code, stderr)
		return strings.TrimSpace(out)
	}
	ids := []string{submit("--queue", "q", "--label", "src=api"), submit("--queue", "q", "--label", "src=cli"),
		submit("--queue", "other", "--label", "src=api")}
	later := submit("--run-at", "10m")

	// The list shows the module's name and the scheduled task's time.
	out, stderr, code := runRunner(t, "", "tasks", "list", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "my-job.wasm")
	var laterLine string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == later {
			laterLine = l
		}
	}
	require.Contains(t, laterLine, "scheduled "+time.Now().Add(10*time.Minute).Format("2006-01-02"), out)

	// Make the three tasks dead, in the store.
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{})
	require.NoError(t, err)
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "test", Max: 3, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 3)
	for _, c := range cl {
		_, err := s.Complete(ctx, []tasks.Completion{{Lease: c.Lease, State: tasks.StateDead,
			Attempt: tasks.Attempt{Outcome: "failed", Counted: true}}})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	// A filter counts, changes nothing, and writes nothing.
	before := treeOf(t, dir)
	out, stderr, code = runRunner(t, "", "tasks", "retry", "--state", "dead", "--label", "src=api", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "2 tasks to retry\n", out)
	require.Contains(t, stderr, "--yes")
	require.Equal(t, before, treeOf(t, dir), "a count changed the data directory")
	out, _, _ = runRunner(t, "", "tasks", "list", "--state", "dead", "--data-dir", dir)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 4, out)

	out, stderr, code = runRunner(t, "", "tasks", "retry", "--queue", "q", "--older-than", "1ns", "--yes", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "retried 2 tasks\n", out)

	// Many ids at once; one that cannot be retried is said and the exit
	// code is not 0, the others are done.
	out, stderr, code = runRunner(t, "", "tasks", "cancel", ids[0], ids[1], later, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "task "+ids[0]+": cancelled\ntask "+ids[1]+": cancelled\ntask "+later+": cancelled\n", out)
	out, stderr, code = runRunner(t, "", "tasks", "retry", ids[0], ids[2], "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "task "+ids[0]+": queued\ntask "+ids[2]+": queued\n", out)
	out, stderr, code = runRunner(t, "", "tasks", "retry", ids[0], ids[1], "--data-dir", dir)
	require.Equal(t, 1, code)
	require.Equal(t, "task "+ids[1]+": queued\n", out, "the others are done")
	require.Contains(t, stderr, "task "+ids[0]+" is queued: only a dead or cancelled task can be retried")
	out, stderr, code = runRunner(t, "", "tasks", "delete", "999", ids[2], "--data-dir", dir)
	require.Equal(t, 3, code, stderr)
	require.Contains(t, stderr, "no task with id 999")
	require.Equal(t, "task "+ids[2]+": deleted\n", out)

	// Usage: ids and a filter together, or neither.
	runExits(t, 2, "not both", "tasks", "retry", ids[0], "--state", "dead", "--data-dir", dir)
	runExits(t, 2, "give task ids", "tasks", "delete", "--data-dir", dir)
	runExits(t, 2, "--older-than", "tasks", "retry", "--older-than", "yesterday", "--data-dir", dir)

	// Pause and resume: stored, shown by stats, honoured by the store's claims.
	out, stderr, code = runRunner(t, "", "tasks", "pause", "q", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "queue q: paused\n", out)
	out, _, code = runRunner(t, "", "tasks", "stats", "--data-dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "PAUSED QUEUE")
	require.Contains(t, out, "(runner tasks resume q resumes them)")
	s, err = sqlite.Open(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{})
	require.NoError(t, err)
	cl, err = s.Claim(ctx, tasks.ClaimRequest{Owner: "test", Max: 10, Lease: time.Minute})
	require.NoError(t, err)
	for _, c := range cl {
		require.NotEqual(t, "q", c.Task.Queue, "a task of the paused queue was claimed")
	}
	require.NoError(t, s.Close())
	out, stderr, code = runRunner(t, "", "tasks", "resume", "q", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "queue q: resumed\n", out)
	out, _, _ = runRunner(t, "", "tasks", "stats", "--data-dir", dir)
	require.NotContains(t, out, "PAUSED")
}

// treeOf maps every path under dir to its size and modification time (a
// directory's time left out: a store opened and closed again makes and
// removes its -wal and -shm files, which leaves nothing).
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
		case fi.IsDir():
			out[p] = "dir"
		default:
			out[p] = fmt.Sprint(fi.ModTime(), " ", fi.Size())
		}
		return nil
	}))
	return out
}
