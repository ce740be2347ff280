package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// shapeFixtures lists the committed shape_* fixtures (issue 9): guests that
// never end on their own, one per loop shape, loop-free recursion (direct,
// indirect, mutual), a start function that never returns and a huge body.
// Each writes its own name to stderr once it runs.
func shapeFixtures(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testwasm.RepoRoot(t), "internal", "testwasm", "wat", "shape_*.wasm"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), 10, "the shape fixtures are built (internal/testwasm/wat/build.sh)")
	var names []string
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".wasm")
		if name == "shape_bench" { // the benchmarks' shapes, called by export: its _start ends
			continue
		}
		names = append(names, name)
	}
	return names
}

// waitExactLine waits for a stderr line that is exactly line (a guest's own
// output, not a log line that merely mentions it, such as a path).
func waitExactLine(t *testing.T, p *proc, line string) {
	t.Helper()
	p.waitMatch(t, fmt.Sprintf("the line %q", line), func(l string) bool { return l == line })
}

// eachShapeAndMode runs f, in parallel, in a subtest for each shape
// fixture in each interrupt mode.
func eachShapeAndMode(t *testing.T, f func(t *testing.T, name string, mode sandbox.InterruptMode)) {
	for _, name := range shapeFixtures(t) {
		for _, mode := range sandbox.InterruptModes() {
			t.Run(fmt.Sprintf("%s/%s", name, mode), func(t *testing.T) {
				t.Parallel()
				f(t, name, mode)
			})
		}
	}
}

// TestRunShapesTimeOut: every shape, in both interrupt modes, is ended by
// `runner run --timeout 1s` (exit 13, timed_out), by Stint's stop checks or
// close-on-context-done, not by the watchdog abandoning it.
func TestRunShapesTimeOut(t *testing.T) {
	t.Parallel()
	eachShapeAndMode(t, func(t *testing.T, name string, mode sandbox.InterruptMode) {
		stderr := requireTimesOut(t, "", "run", "-v", fixture(t, name), "--timeout", "1s",
			"--sandbox-interrupt", string(mode), "--data-dir", dataDir(t))
		require.Contains(t, stderr, name+"\n", "the guest ran")
		require.NotContains(t, stderr, "abandoned", "the forced stop ended the guest, not the watchdog")
	})
}

// TestRunShapesSecondSignal: every shape, in both modes, runs with no
// timeout; the first SIGINT asks it to stop (these guests do not listen),
// the second forces it: exit 12, forced, not abandoned.
func TestRunShapesSecondSignal(t *testing.T) {
	t.Parallel()
	eachShapeAndMode(t, func(t *testing.T, name string, mode sandbox.InterruptMode) {
		p := startRunner(t, nil, "run", "-v", fixture(t, name), "--timeout", "1h",
			"--sandbox-interrupt", string(mode), "--data-dir", dataDir(t))
		waitExactLine(t, p, name) // the guest's own line on stderr: it runs
		p.signal(t, syscall.SIGINT)
		p.waitLine(t, "stop requested")
		p.signal(t, syscall.SIGINT)
		require.Equal(t, 12, p.wait(t), p.stderr())
		p.waitLine(t, `"outcome":"forced"`)
		require.NotContains(t, p.stderr(), "abandoned", "the forced stop ended the guest, not the watchdog")
	})
}

// TestServeShapesSIGTERM: `runner serve` running a shape, for every shape
// in each mode; SIGTERM with short drain and cancel phases forces it: the
// report says forced 1 and not_ended 0, the runner exits 0, and the task is
// back in the queue, its forced attempt not counted. One runner per shape,
// one worker each: a guest spinning in wasm holds its Go P (see
// TestServeSpinningGuestsStarveTheRunner), so a runner gets fewer spinning
// guests than GOMAXPROCS.
func TestServeShapesSIGTERM(t *testing.T) {
	t.Parallel()
	eachShapeAndMode(t, func(t *testing.T, name string, mode sandbox.InterruptMode) {
		dir := dataDir(t)
		s := openTestStore(t, dir)
		id := queue(t, s, fixture(t, name), tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour}})
		p := startRunner(t, nil, serveArgs(dir, "--workers", "1", "--log-level", "debug",
			"--sandbox-interrupt", string(mode), "--shutdown-drain", "200ms", "--shutdown-cancel", "200ms")...)
		p.waitLine(t, "runner ready") // the signal handler is in place
		p.waitLine(t, "attempt started", fmt.Sprintf(`"task":%d,`, id))
		p.stopCleanly(t)
		rep := parseReport(t, p.waitLine(t, "shutdown finished"))
		require.Equal(t, 1, rep.Forced)
		require.Zero(t, rep.NotEnded)
		require.NotContains(t, p.stderr(), "run abandoned", "the forced stop ended the guest, not the watchdog")
		requireForcedUncounted(t, s, id)
	})
}

// TestServeSpinningGuestsStarveTheRunner guards against a bug found and
// fixed in this wave: compiled wasm is not preemptible by the Go scheduler (its PC is outside Go
// code, so async preemption never lands), and a guest that spins without a
// host call holds its P. With as many such guests as GOMAXPROCS (2 here, and
// the default workers = number of CPUs), nothing else in the runner runs:
// not the signal handler, not the attempt timers. Measured: 10 shape tasks,
// --workers 10, 2 cores: 9 attempts started, SIGTERM not handled 15 s later.
// The fix (sandbox/interrupt.go): Stint's checks call out to Go every ~30 µs
// of work, and while n guests run GOMAXPROCS is at least n+1.
func TestServeSpinningGuestsStarveTheRunner(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	s := openTestStore(t, dir)
	var ids []int64
	for range 2 {
		ids = append(ids, queue(t, s, fixture(t, "shape_loop_br"), tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour}}))
	}
	p := startRunner(t, nil, serveArgs(dir, "--workers", "2", "--log-level", "debug",
		"--sandbox-interrupt", "checks", "--shutdown-drain", "200ms", "--shutdown-cancel", "200ms")...)
	for _, id := range ids {
		p.waitLine(t, "attempt started", fmt.Sprintf(`"task":%d,`, id))
	}
	p.stopCleanly(t)
	rep := parseReport(t, p.waitLine(t, "shutdown finished"))
	require.Equal(t, 2, rep.Forced)
}

// TestCallArmBigTimesOut: the red team's never-stopped shape of issue 37
// (a loop calling a function over 2 KiB whose only call is in an arm not
// taken), as a plugin's export through `runner call --timeout 1s`: it ends
// timed_out (exit 13) in both interrupt modes; under rewrite version 21
// the call never returned.
func TestCallArmBigTimesOut(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			stderr := requireTimesOut(t, "", "call", fixture(t, "shape_arm_big"), "spin", "--timeout", "1s", "--grant", "wasi_snapshot_preview1",
				"--sandbox-interrupt", string(mode), "--data-dir", dataDir(t), "--log-level", "info")
			require.NotContains(t, stderr, "abandoned", "the forced stop ended the guest, not the watchdog")
		})
	}
}
