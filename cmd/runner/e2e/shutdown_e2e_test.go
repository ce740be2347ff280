package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

func lastAttempt(t *testing.T, s *sqlite.Store, id int64) tasks.Attempt {
	t.Helper()
	atts, err := s.Attempts(context.Background(), id)
	require.NoError(t, err)
	require.NotEmpty(t, atts, "task %d has no attempts", id)
	return atts[len(atts)-1]
}

// requireForcedUncounted checks task id after a forced stop that was not
// the guest's fault: the task is queued again with no failure counted,
// and its last attempt's outcome is forced, not counted.
func requireForcedUncounted(t *testing.T, s *sqlite.Store, id int64) {
	t.Helper()
	task, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, task.State)
	require.Zero(t, task.Failures)
	a := lastAttempt(t, s, id)
	require.Equal(t, "forced", a.Outcome)
	require.False(t, a.Counted, "a stop that is not the guest's fault is not counted")
}

// shutdownReport is the JSON line the coordinator logs at the end.
type shutdownReport struct {
	Finished    int  `json:"finished"`
	Cooperative int  `json:"cooperative"`
	Forced      int  `json:"forced"`
	NotEnded    int  `json:"not_ended"`
	Escalated   bool `json:"escalated"`
}

func parseReport(t *testing.T, line string) shutdownReport {
	t.Helper()
	var r shutdownReport
	require.NoError(t, json.Unmarshal([]byte(line), &r), line)
	return r
}

// TestServeGracefulShutdownMixedBatch: SIGTERM in the middle of a mixed
// batch. A short task running at the signal finishes in the drain, primes
// stops cooperatively with a checkpoint, stuck and sleeper are forced; the
// runner exits 0 within its budget; nothing is left running; after a
// restart everything ends and primes resumes from its checkpoint.
func TestServeGracefulShutdownMixedBatch(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	s := openTestStore(t, dir)
	primes, stuck, sleeper, reader, hello := testwasm.GoGuest(t, "primes"), testwasm.GoGuest(t, "stuck"),
		testwasm.GoGuest(t, "sleeper"), testwasm.GoGuest(t, "reader"), testwasm.GoGuest(t, "hello")

	// primes must still be running when the drain ends: 16M takes about
	// 16 s on the AMD EPYC VM of 2026-12 (5M, 3.5 s, finished in the drain
	// once the stop checks cost 1.1x instead of 1.7x), and SIGTERM comes
	// about a second after it starts (once the short tasks below have
	// ended), with a 3 s drain, so a machine three times faster still
	// cannot finish it in the drain.
	const n, want = "16000000", "primes below 16000000: 1031130\n"
	primesID := queue(t, s, primes, tasks.Spec{Input: []byte(n), Priority: 10})
	// stuck and sleeper never end by themselves: after the restart their
	// attempt timeout makes them dead, so that the batch ends. Before the
	// signal it must not: the timeout counts from the claim, compiling
	// included, and it leaves the short tasks and primes' first checkpoint
	// 40 s on a loaded machine (CI runs every package at once).
	const stuckTimeout = 40 * time.Second
	stuckID := queue(t, s, stuck, tasks.Spec{MaxAttempts: 1, Limits: tasks.Limits{Timeout: stuckTimeout}, Priority: 10})
	sleeperID := queue(t, s, sleeper, tasks.Spec{MaxAttempts: 1, Limits: tasks.Limits{Timeout: stuckTimeout}, Priority: 10})
	// In the queue a task's stdin is its stored input, which always ends:
	// reader finishes (the never-ending stdin is covered by runner run).
	readerID := queue(t, s, reader, tasks.Spec{Input: []byte("finite input")})
	// Short Go tasks end before the signal: on a loaded machine compiling
	// hello alone can outlast any drain a test can afford.
	var short []int64
	for range 4 {
		short = append(short, queue(t, s, hello, tasks.Spec{Input: []byte("short")}))
	}

	const budget = 10 * time.Second
	args := serveArgs(dir, "--workers", "8", "--shutdown-budget", budget.String(),
		"--shutdown-drain", "3s", "--shutdown-cancel", "3s")
	p := startRunner(t, nil, args...)
	p.waitLine(t, "runner ready")
	ctx := context.Background()
	state := func(id int64) tasks.State {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		return task.State
	}
	testutil.WaitFor(t, "the short tasks to end, primes to checkpoint and stuck and sleeper to run", func() bool {
		for _, id := range append(short, readerID) {
			if state(id) != tasks.StateSucceeded {
				return false
			}
		}
		pr, err := s.Get(ctx, primesID)
		require.NoError(t, err)
		return pr.CheckpointSize > 0 && pr.State == tasks.StateRunning &&
			state(stuckID) == tasks.StateRunning && state(sleeperID) == tasks.StateRunning
	})
	// The short task that runs across the signal and must finish in the
	// drain: nap saves a checkpoint, then sleeps one second, which a loaded
	// machine does not stretch. The signal comes once the checkpoint is
	// stored: the guest is running then, not only claimed (a task claimed
	// but not started when intake stops is given back to the queue).
	napID := queue(t, s, fixture(t, "nap"), tasks.Spec{})
	testutil.WaitFor(t, "nap to start", func() bool {
		nap, err := s.Get(ctx, napID)
		require.NoError(t, err)
		return nap.CheckpointSize > 0
	})
	start := time.Now()
	p.stopCleanly(t, "runner exits 0 after a graceful stop")
	elapsed := time.Since(start)
	// The one timing check here is the contract with the orchestrator: the
	// process must be gone before its grace period (budget + margin).
	require.Less(t, elapsed, budget+3*time.Second, "exit within the budget")
	rep := parseReport(t, p.waitLine(t, "shutdown finished"))
	require.GreaterOrEqual(t, rep.Cooperative, 1, "primes stopped cooperatively")
	require.GreaterOrEqual(t, rep.Forced, 2, "stuck and sleeper were forced")
	require.Zero(t, rep.NotEnded)

	running, err := s.List(ctx, tasks.ListFilter{State: tasks.StateRunning})
	require.NoError(t, err)
	require.Empty(t, running, "nothing is left running in the store")
	nap, err := s.Get(ctx, napID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, nap.State, "the short task running at the signal finished in the drain")
	require.Equal(t, "nap\n", string(nap.Result))
	require.GreaterOrEqual(t, rep.Finished, 1, "nap finished in the drain")
	pr, err := s.Get(ctx, primesID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, pr.State)
	require.Positive(t, pr.CheckpointSize)
	require.Zero(t, pr.Failures, "an interrupted attempt is not counted")
	require.Equal(t, "interrupted", lastAttempt(t, s, primesID).Outcome)
	for _, id := range []int64{stuckID, sleeperID} {
		requireForcedUncounted(t, s, id)
	}

	// Restart: everything ends; primes resumes from its checkpoint.
	p2 := startRunner(t, nil, args...)
	p2.waitLine(t, "runner ready")
	testutil.WaitFor(t, "every task to end", func() bool {
		all, err := s.List(ctx, tasks.ListFilter{Limit: 100})
		require.NoError(t, err)
		for _, task := range all {
			if !task.State.Terminal() {
				return false
			}
		}
		return true
	})
	p2.stopCleanly(t)
	pr, err = s.Get(ctx, primesID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, pr.State)
	require.Equal(t, want, string(pr.Result))
	final := lastAttempt(t, s, primesID)
	require.True(t, final.Resumed, "primes resumed from its checkpoint")
	for _, id := range []int64{stuckID, sleeperID} {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tasks.StateDead, task.State)
		require.Equal(t, "timed_out", lastAttempt(t, s, id).Outcome)
	}
}

// TestServeSecondSignalForces: a second SIGTERM during the drain skips
// straight to the forced stop.
func TestServeSecondSignalForces(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	s := openTestStore(t, dir)
	id := queue(t, s, testwasm.GoGuest(t, "sleeper"), tasks.Spec{})
	p := startRunner(t, nil, serveArgs(dir, "--log-level", "debug",
		"--shutdown-budget", "60s", "--shutdown-drain", "40s", "--shutdown-cancel", "15s")...)
	p.waitLine(t, "runner ready")
	// Started, not only claimed: a task claimed but not started when
	// intake stops goes back to the queue and is never forced.
	p.waitLine(t, "attempt started", fmt.Sprintf(`"task":%d,`, id))
	p.signal(t, syscall.SIGTERM)
	p.waitLine(t, "shutdown started")
	p.signal(t, syscall.SIGTERM)
	p.waitLine(t, "skipping to the forced stop")
	require.Equal(t, 0, p.wait(t))
	rep := parseReport(t, p.waitLine(t, "shutdown finished"))
	require.True(t, rep.Escalated)
	require.Equal(t, 1, rep.Forced)
	require.Equal(t, "forced", lastAttempt(t, s, id).Outcome)
}

// TestServeRefusesBudgetOverrun: phases that cannot fit in the budget are
// refused before anything starts.
func TestServeRefusesBudgetOverrun(t *testing.T) {
	t.Parallel()
	runExits(t, 2, "exceeds budget 10s",
		serveArgs(dataDir(t), "--shutdown-budget", "10s", "--shutdown-drain", "8s", "--shutdown-cancel", "8s")...)
}

// TestRunReaderForcedBySecondSignal: a guest blocked reading a stdin that
// never ends ignores the first signal's stop request and is forced by the
// second.
func TestRunReaderForcedBySecondSignal(t *testing.T) {
	t.Parallel()
	reader := testwasm.GoGuest(t, "reader")
	pr, pw := ioPipe(t)
	p := startRunner(t, pr, "run", "-v", reader, "--input", "-", "--data-dir", dataDir(t))
	p.waitLine(t, "reader: reading")
	p.signal(t, syscall.SIGINT)
	p.waitLine(t, "stop requested")
	p.signal(t, syscall.SIGINT)
	require.Equal(t, 12, p.wait(t))
	require.True(t, strings.Contains(p.stderr(), `"outcome":"forced"`))
	_ = pw.Close()
}

// TestServeHooksRunInOrderAndAHungOneIsCutOff: the cleanup hooks run in
// priority order (http, workers, sandbox, store, logs); the http hook, held
// up by a client whose request body never comes, is cut off by its own
// timeout, and the hooks after it still run: the store is closed cleanly and
// the runner exits 0.
func TestServeHooksRunInOrderAndAHungOneIsCutOff(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	p := startRunner(t, nil, "serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--workers", "1",
		"--shutdown-budget", "20s", "--shutdown-drain", "1s", "--shutdown-cancel", "1s", "--shutdown-hooks", "http=1s")
	httpAddr := p.apiAddr(t)
	p.waitLine(t, "runner ready") // signals are handled from here on
	conn, err := net.Dial("tcp", httpAddr)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	// A request whose body never comes. With "Expect: 100-continue" the
	// server answers "100 Continue" when the handler starts reading the
	// body: from then on the request is in progress, and a graceful
	// http.Server.Shutdown waits for it.
	_, err = io.WriteString(conn, "POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(bound)))
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, status, "100 Continue")
	_, err = io.WriteString(conn, "{")
	require.NoError(t, err)

	p.stopCleanly(t)
	summary := p.waitLine(t, "shutdown finished")
	var rep struct {
		HookRuns []struct {
			Hook     string `json:"hook"`
			TimedOut bool   `json:"timed_out"`
			Error    string `json:"error"`
		} `json:"hook_runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(summary), &rep), summary)
	var order []string
	for _, h := range rep.HookRuns {
		order = append(order, h.Hook)
		if h.Hook == "http" {
			require.True(t, h.TimedOut, summary)
			require.Contains(t, h.Error, "hook timed out after 1s")
		} else {
			require.False(t, h.TimedOut, summary)
			require.Empty(t, h.Error, summary)
		}
	}
	require.Equal(t, []string{"http", "workers", "sandbox", "store", "logs"}, order)
	p.waitLine(t, "shutdown hook failed", `"hook":"http"`)

	// The store was closed: a new runner takes the data directory at once.
	openTestStore(t, dir)
}
