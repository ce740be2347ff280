package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// TestServeAnswersWhileGuestSpins: runner serve with a guest that spins
// for ever (a WAT loop without calls, a Go guest's busy loop, and issue
// 23's escape: nested loop functions, from _start and from the start
// section, which froze the runner for minutes before rewrite 21), under a
// timeout of 3 s and one attempt, while the runner collects garbage every
// 50 ms (STINT_TEST_GC_EVERY: a guest that Go's stop-the-world cannot
// stop would freeze it). The test asks GET /healthz about every 200 ms for
// as long as the task runs, and each answer must come within 1 s (the
// client's timeout); then the task ends as the ladder says: timed out at
// its timeout, dead (no attempt left), the runner still serving, and it
// stops cleanly on SIGTERM.
func TestServeAnswersWhileGuestSpins(t *testing.T) {
	t.Parallel()
	guests := map[string]func(t *testing.T) string{
		"wat_loop":           func(t *testing.T) string { return fixture(t, "loop") },
		"go_stuck":           func(t *testing.T) string { return testwasm.GoGuest(t, "stuck") },
		"nested_loops":       func(t *testing.T) string { return fixture(t, "nested_loops") },
		"nested_loops_start": func(t *testing.T) string { return fixture(t, "nested_loops_start") },
		// The red team's shapes of issue 37: under rewrite version 21 the
		// first froze the runner for good at its next garbage collection.
		"shape_arm_big":  func(t *testing.T) string { return fixture(t, "shape_arm_big") },
		"shape_leaf_run": func(t *testing.T) string { return fixture(t, "shape_leaf_run") },
	}
	for name, guest := range guests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const timeout = 3 * time.Second
			dir := dataDir(t)
			s := openTestStore(t, dir)
			id := queue(t, s, guest(t), tasks.Spec{MaxAttempts: 1, Limits: tasks.Limits{Timeout: timeout}})
			cmd := exec.Command(runnerBin, serveArgs(dir, "--http-addr", "127.0.0.1:0", "--workers", "1")...)
			cmd.Env = append(os.Environ(), "STINT_TEST_GC_EVERY=50ms") // testhooks_on.go
			p := startCmd(t, cmd, nil)
			httpAddr := p.apiAddr(t)
			p.waitLine(t, "runner ready")

			tr := &http.Transport{DisableKeepAlives: true} // a new connection each time: the accept loop answers too
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: time.Second}
			healthy := func() {
				t.Helper()
				resp, err := c.Get("http://" + httpAddr + "/healthz")
				require.NoError(t, err, "GET /healthz did not answer within 1s while the guest ran")
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			}
			state := func() tasks.Task {
				t.Helper()
				task, err := s.Get(context.Background(), id)
				require.NoError(t, err)
				return task
			}
			testutil.WaitFor(t, "the task to start", func() bool { return state().State == tasks.StateRunning })

			// Every ~200 ms while the task runs: /healthz answers.
			polls := 0
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			deadline := time.Now().Add(bound)
			for state().State == tasks.StateRunning {
				require.True(t, time.Now().Before(deadline), "the task still runs after %s", bound)
				healthy()
				polls++
				<-tick.C
			}
			require.GreaterOrEqual(t, polls, 5, "polled for a few seconds of the task running")

			// The ladder: timed out at its timeout, no attempt left: dead.
			done := state()
			require.Equal(t, tasks.StateDead, done.State)
			a := lastAttempt(t, s, id)
			require.Equal(t, "timed_out", a.Outcome, a.Reason)
			require.Contains(t, a.Reason, "attempt timeout of 3s reached")
			require.NotContains(t, a.Reason, "abandoned", "the forced stop ended it, not the watchdog")
			healthy()
			p.stopCleanly(t)
		})
	}
}
