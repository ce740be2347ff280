package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestRunnersDrainStopsIntake: runner runners drain OWNER, from another
// process, makes a running runner serve stop claiming at its next
// heartbeat (its log says so, runner runners shows it draining); a task
// submitted after stays queued; the runner still stops cleanly on
// SIGTERM; an unknown owner is a usage error (issue 41, item 17).
func TestRunnersDrainStopsIntake(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	p := startServe(t, dir, "--owner", "e2e-drain", "--lease", "3s")
	runExits(t, 2, "no runner nobody works this store", "runners", "drain", "nobody", "--data-dir", dir)

	out, stderr, code := runRunner(t, "", "runners", "drain", "e2e-drain", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "runner e2e-drain asked to stop claiming")
	p.waitLine(t, "a drain was asked of this runner")
	out, stderr, code = runRunner(t, "", "runners", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `e2e-drain\s.*\sdraining\s`, out)

	out, stderr, code = runRunner(t, "", "submit", fixture(t, "noop"), "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	id := mustID(t, strings.TrimSpace(out))
	s := openTestStore(t, dir)
	// The runner claims nothing: after two more of its heartbeats (each
	// records it again, LastSeen moving on), the task is still queued.
	lastSeen := func() time.Time {
		list, err := s.Runners(t.Context())
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.True(t, list[0].Draining)
		return list[0].LastSeen
	}
	for range 2 {
		before := lastSeen()
		testutil.WaitFor(t, "a heartbeat of the draining runner", func() bool { return lastSeen().After(before) })
	}
	task, err := s.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, task.State)
	p.stopCleanly(t)
}
