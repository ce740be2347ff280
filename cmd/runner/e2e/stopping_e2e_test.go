package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// writeWasm writes a generated module to a file of its own.
func writeWasm(t *testing.T, wasm []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "module.wasm")
	require.NoError(t, os.WriteFile(p, wasm, 0o600))
	return p
}

// blockFifo is a named pipe nobody writes: the stopping_block fixture,
// given its path on stdin, blocks on it in a host function that ignores
// every stop (blockhost, in the tests' build of the runner: testhooks_on.go).
// Mounts never block: the sandbox refuses FIFOs in them.
func blockFifo(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	return fifo
}

// liftBrTableLimits lets the br_table compile bombs of these tests through
// the module limits that refuse them by default (TestRunModuleLimits).
const liftBrTableLimits = "--sandbox-module-limits=max_br_table_targets=200000,max_branches_to_label=200000"

// TestRunModuleLimits: by default a compile bomb is refused before it is
// compiled, with the limit's name; a bad limit name is a usage error.
func TestRunModuleLimits(t *testing.T) {
	t.Parallel()
	slow := writeWasm(t, testwasm.BrTableModule(100000, t.Name()))
	stderr := runExits(t, 16, `"outcome":"invalid_module"`, "run", "-v", slow, "--data-dir", t.TempDir())
	require.Contains(t, stderr, "sandbox module limit max_br_table_targets")

	runExits(t, 2, "max_br_table_targets",
		"run", "-v", slow, "--data-dir", t.TempDir(), "--sandbox-module-limits", "max_bananas=3")
}

// TestRunCompileNotChargedToTimeout: compiling is not the attempt: a
// module that takes a second or more to compile, under --timeout 500ms,
// compiles and runs to its end (the compile budget bounds the compile;
// issue 42, item 2).
func TestRunCompileNotChargedToTimeout(t *testing.T) {
	t.Parallel()
	slow := writeWasm(t, testwasm.BrTableModule(40000, t.Name())) // about 1.5 s (the runner is never built with -race)
	// A data directory of its own: the module must not come from a cache.
	runExits(t, 0, `"outcome":"succeeded"`,
		"run", "-v", slow, "--timeout", "500ms", "--data-dir", t.TempDir(), liftBrTableLimits)
}

// TestRunCompileBudget: a compilation past sandbox.compile_timeout makes
// the module invalid.
func TestRunCompileBudget(t *testing.T) {
	t.Parallel()
	slow := writeWasm(t, testwasm.BrTableModule(40000, t.Name())) // about 1.5 s
	stderr := runExits(t, 16, `"outcome":"invalid_module"`,
		"run", "-v", slow, "--sandbox-compile-timeout", "100ms", "--data-dir", t.TempDir(), liftBrTableLimits)
	require.Contains(t, stderr, "compiling took longer than the compile budget of 100ms (sandbox.compile_timeout)")
}

// TestRunUnstoppableGuestTimesOut: a guest blocked where no forced stop
// reaches is abandoned by the watchdog; runner run exits as timed out.
func TestRunUnstoppableGuestTimesOut(t *testing.T) {
	t.Parallel()
	stderr := requireTimesOut(t, blockFifo(t), "run", "-v", fixture(t, "stopping_block"), "--input", "-", "--timeout", "1s",
		"--data-dir", dataDir(t))
	require.Contains(t, stderr, "the guest did not end within 500ms of its forced stop; abandoned")
	require.Contains(t, stderr, "run abandoned")
}

// TestRunUnstoppableGuestSecondSignal: the second signal forces the guest;
// one that does not end is abandoned and runner run exits as forced.
func TestRunUnstoppableGuestSecondSignal(t *testing.T) {
	t.Parallel()
	p := startRunner(t, strings.NewReader(blockFifo(t)), "run", "-v", fixture(t, "stopping_block"), "--input", "-", "--timeout", "1h",
		"--data-dir", dataDir(t))
	p.waitLine(t, "opening fifo")
	p.signal(t, syscall.SIGINT)
	p.waitLine(t, "stop requested")
	p.signal(t, syscall.SIGINT)
	require.Equal(t, 12, p.wait(t), p.stderr())
	p.waitLine(t, `"outcome":"forced"`, "second signal (interrupt)", "abandoned")
}

// TestRunRecursionWithoutLoopsTimesOut: 2^60 calls and no loop header,
// which wazero's close-on-context-done never checks: runner run still
// exits at its timeout (the watchdog, or Stint's own stop checks).
func TestRunRecursionWithoutLoopsTimesOut(t *testing.T) {
	t.Parallel()
	rec := writeWasm(t, testwasm.DoubleRecursionModule(60))
	requireTimesOut(t, "", "run", "-v", rec, "--timeout", "1s", "--data-dir", dataDir(t))
}

// TestServeForcedStopAbandonsUnstoppable: SIGTERM with a guest that no
// forced stop can end: the watchdog abandons it within the force wait, the
// attempt is recorded (forced, counted, with the reason), the report says
// nothing was left running, and the runner exits 0 within its budget.
func TestServeForcedStopAbandonsUnstoppable(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	s := openTestStore(t, dir)
	id := queue(t, s, fixture(t, "stopping_block"), tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour},
		Input: []byte(blockFifo(t))})
	// The default watchdog (500ms) fires within the default force wait
	// (1s); the test gives the record 3s, for a loaded machine.
	const budget = 8 * time.Second
	p := startRunner(t, nil, serveArgs(dir, "--shutdown-budget", budget.String(),
		"--shutdown-drain", "1s", "--shutdown-cancel", "1s", "--shutdown-force-wait", "3s")...)
	p.waitLine(t, "runner ready")
	ctx := context.Background()
	testutil.WaitFor(t, "the guest to report progress (it then blocks)", func() bool {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		return task.ProgressDone > 0
	})
	start := time.Now()
	p.stopCleanly(t, "runner exits 0: the abandoned attempt was recorded")
	require.Less(t, time.Since(start), budget+3*time.Second, "exit within the budget")
	rep := parseReport(t, p.waitLine(t, "shutdown finished"))
	require.Equal(t, 1, rep.Forced)
	require.Zero(t, rep.NotEnded)
	p.waitLine(t, "run abandoned")

	a := lastAttempt(t, s, id)
	require.Equal(t, "forced", a.Outcome)
	require.True(t, a.Counted, "a guest that cannot be stopped is its own fault")
	require.Contains(t, a.Reason, "abandoned (its goroutine still runs)")
	task, err := s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, task.State)
	require.Equal(t, 1, task.Failures)
}

// TestStopWatchdogUnderForceWait: a watchdog that cannot fire within the
// shutdown's force wait is refused.
func TestStopWatchdogUnderForceWait(t *testing.T) {
	t.Parallel()
	runExits(t, 2, fmt.Sprintf("sandbox.stop_watchdog (1s) must be shorter than shutdown.force_wait (%s)", time.Second),
		"config", "--sandbox-stop-watchdog", "1s", "--data-dir", t.TempDir())
}
