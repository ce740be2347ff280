package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// The shutdown configuration under test.
const (
	shutdownBudget = 6 * time.Second
	shutdownDrain  = time.Second
	shutdownCancel = 2 * time.Second
	stuckTasks     = 50 // started_loop: only a forced stop ends it
	coopTasks      = 50 // started_stop_aware: exits 75 on stop_requested
)

// Shutdown measures `runner serve` (the real binary, as a child process)
// stopping on SIGTERM with 100 running tasks, 50 stuck and 50
// cooperative: SIGTERM to process exit, against the configured budget, and
// the phases of the runner's own shutdown report.
func Shutdown(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "shutdown"}
	if _, err := os.Stat(o.Runner); err != nil {
		return nil, fmt.Errorf("shutdown: runner binary %s: %w (run make build, or pass -runner)", o.Runner, err)
	}
	runs := o.pick(10, 3)
	exit := res.NewSeries("shutdown/sigterm-to-exit", "ns")
	report := res.NewSeries("shutdown/report-total", "ns")
	sig := res.NewSeries("shutdown/sigterm-to-shutdown-started", "ns")
	after := res.NewSeries("shutdown/report-end-to-exit", "ns")
	coop := res.NewSeries("shutdown/stop-request-to-last-cooperative-return", "ns")
	forced := res.NewSeries("shutdown/forced-stop-to-last-forced-return", "ns")
	phases := map[string]*Series{}
	phaseOrder := []string{"intake", "drain", "cancel", "force", "hooks"}
	for _, p := range phaseOrder {
		phases[p] = res.NewSeries("shutdown/phase/"+p, "ns")
	}
	var details []string
	var failed int
	for i := 0; i < runs; i++ {
		r, err := shutdownOnce(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("shutdown run %d: %w", i+1, err)
		}
		o.logf("shutdown: run %d: SIGTERM to exit %s (report total %s, force phase %s, exit code %d)",
			i+1, r.exit.Round(time.Millisecond), r.total.Round(time.Millisecond),
			r.phases["force"].Round(time.Microsecond), r.exitCode)
		exit.AddDuration(r.exit)
		report.AddDuration(r.total)
		sig.AddDuration(r.signalDelay)
		after.AddDuration(r.exit - r.signalDelay - r.total)
		coop.AddDuration(r.coopLast)
		forced.AddDuration(r.forcedLast)
		for _, p := range phaseOrder {
			if d, ok := r.phases[p]; ok {
				phases[p].AddDuration(d)
			}
		}
		d := fmt.Sprintf("%d/%d/%d/%d", r.finished, r.cooperative, r.forced, r.notEnded)
		if r.exitCode != 0 {
			failed++
			d += fmt.Sprintf(" (exit %d: %s)", r.exitCode, r.exitMsg)
		}
		if r.requeued != stuckTasks+coopTasks || r.notRecorded > 0 {
			d += fmt.Sprintf(" (%d queued again, %d with no attempt recorded)", r.requeued, r.notRecorded)
		}
		details = append(details, d)
	}
	limit := float64(shutdownBudget + 100*time.Millisecond)
	t := res.NewTable(fmt.Sprintf("Shutdown: SIGTERM to exit, %d stuck + %d cooperative tasks running, budget %s",
		stuckTasks, coopTasks, shutdownBudget), "measure", "median ms", "max ms", "within budget + 100 ms", "runs")
	verdict := func(s *Series) string {
		if s.Max() <= limit {
			return "yes"
		}
		return "NO"
	}
	t.AddRow("SIGTERM → process exit", ms(exit.Median()), ms(exit.Max()), verdict(exit), fmt.Sprint(exit.N()))
	t.AddRow("SIGTERM → \"shutdown started\" logged (ms precision)", msFine(sig.Median()), msFine(sig.Max()), "", fmt.Sprint(sig.N()))
	t.AddRow("runner's report: total", ms(report.Median()), ms(report.Max()), verdict(report), fmt.Sprint(report.N()))
	for _, p := range phaseOrder {
		s := phases[p]
		if s.N() == 0 {
			continue
		}
		label := "phase " + p
		if p == "force" {
			label = "phase force: forced stop → every task recorded (or force wait over)"
		}
		t.AddRow(label, msFine(s.Median()), msFine(s.Max()), "", fmt.Sprint(s.N()))
	}
	t.AddRow("end of the report → process exit", msFine(after.Median()), msFine(after.Max()), "", fmt.Sprint(after.N()))
	t.AddRow("stop request → last cooperative guest returned (store)", msFine(coop.Median()), msFine(coop.Max()), "", fmt.Sprint(coop.N()))
	t.AddRow("forced stop → last forced guest returned (store)", msFine(forced.Median()), msFine(forced.Max()), "", fmt.Sprint(forced.N()))
	t.AddRow("runs where the runner exited non-zero", fmt.Sprint(failed), "", "", fmt.Sprint(runs))
	t.Notes = append(t.Notes, fmt.Sprintf("`runner serve --workers 100 --shutdown-budget %s --shutdown-drain %s "+
		"--shutdown-cancel %s --http-addr \"\" --log-format json` (force wait and hook timeout at their defaults, "+
		"1s and 2s), a fresh data directory per run; 50 stuck and 50 cooperative tasks (internal/bench/testdata/started_loop.wat "+
		"and started_stop_aware.wat: the loop and stop_aware fixtures, each saving a checkpoint first) submitted through the "+
		"SQLite store file while it runs, SIGTERM once all 100 guests have saved their checkpoint (so all have started). Phases come from the runner's "+
		"\"shutdown finished\" log line; the two \"(store)\" rows from the attempts' end times in the store "+
		"(set when Run returned, before the write), measured from the start of phase 3 and of phase 4 as the "+
		"report places them after the \"shutdown started\" line. Finished/cooperative/forced/not ended per run: %s.",
		shutdownBudget, shutdownDrain, shutdownCancel, strings.Join(details, "; ")))
	return res, nil
}

// shutdownRun is what one shutdown measurement saw.
type shutdownRun struct {
	exit, total time.Duration
	// started is when the runner logged "shutdown started" (millisecond
	// precision); signalDelay is SIGTERM to then.
	started     time.Time
	signalDelay time.Duration
	phases      map[string]time.Duration
	// From the runner's report: tasks that finished, stopped
	// cooperatively, were forced, or had not ended when phase 4 ended.
	finished, cooperative, forced, notEnded int
	exitCode                                int
	exitMsg                                 string
	// From the store: the last cooperative attempt's end after the stop
	// request, the last forced one's after the forced stop; tasks queued
	// again, tasks with no attempt recorded.
	coopLast, forcedLast  time.Duration
	requeued, notRecorded int
}

// shutdownOnce starts runner serve on a fresh data directory, submits the
// tasks, waits until all run, sends SIGTERM and waits for the exit.
func shutdownOnce(ctx context.Context, o Options) (*shutdownRun, error) {
	dir, err := os.MkdirTemp("", "stintbench-shutdown-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(o.Runner, "serve", "--data-dir", dir, "--http-addr", "",
		"--workers", fmt.Sprint(stuckTasks+coopTasks),
		"--shutdown-budget", shutdownBudget.String(), "--shutdown-drain", shutdownDrain.String(),
		"--shutdown-cancel", shutdownCancel.String(), "--log-format", "json", "--log-level", "info")
	cmd.Env = append(os.Environ(), "RUNNER_CONFIG=")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{}) // closed once the runner exited, after end and waitErr are set
	var end time.Time
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		end = time.Now()
		close(exited)
	}()
	kill := func(err error) (*shutdownRun, error) {
		_ = cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("%w\nrunner stderr:\n%s", err, tail(stderr.String(), 2000))
	}

	// Wait for the runner to be ready (it creates the store), then submit.
	if err := waitFor(ctx, 30*time.Second, exited, func() bool { return strings.Contains(stderr.String(), "runner ready") }); err != nil {
		return kill(fmt.Errorf("runner not ready: %w", err))
	}
	store, err := sqlite.Open(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{})
	if err != nil {
		return kill(err)
	}
	defer store.Close()
	var ids []int64
	for _, f := range []struct {
		fixture string
		n       int
	}{{"started_loop", stuckTasks}, {"started_stop_aware", coopTasks}} {
		sha, err := store.PutModule(ctx, benchModule(f.fixture))
		if err != nil {
			return kill(err)
		}
		for i := 0; i < f.n; i++ {
			t, _, err := store.Submit(ctx, tasks.Spec{Module: sha})
			if err != nil {
				return kill(err)
			}
			ids = append(ids, t.ID)
		}
	}
	// A claimed task is "running" in the store before a worker starts its
	// guest; each guest saves a checkpoint first, so wait for all of those.
	want := stuckTasks + coopTasks
	err = waitFor(ctx, 60*time.Second, exited, func() bool {
		running, err := store.List(ctx, tasks.ListFilter{State: tasks.StateRunning, Limit: 2 * want})
		if err != nil || len(running) < want {
			return false
		}
		for _, t := range running {
			if t.CheckpointSize == 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		return kill(fmt.Errorf("waiting for %d started guests: %w", want, err))
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return kill(err)
	}
	select {
	case <-exited:
	case <-time.After(3 * shutdownBudget):
		return kill(fmt.Errorf("runner still running %s after SIGTERM", 3*shutdownBudget))
	}
	r, err := parseShutdownReport(stderr.String())
	if err != nil {
		return nil, fmt.Errorf("%w (runner exit: %v)", err, waitErr)
	}
	r.exit = end.Sub(start)
	r.signalDelay = r.started.Sub(start)
	r.exitCode = cmd.ProcessState.ExitCode()
	if r.exitCode != 0 {
		r.exitMsg = lastLine(stderr.String())
	}
	// When each attempt ended (the pool's clock, when Run returned), from
	// the store: the guests' own stop latency, without the store writes.
	askedAt := r.started.Add(r.phases["intake"] + r.phases["drain"])
	forcedAt := askedAt.Add(r.phases["cancel"])
	for _, id := range ids {
		atts, err := store.Attempts(ctx, id)
		if err != nil {
			return nil, err
		}
		if len(atts) == 0 {
			r.notRecorded++
			continue
		}
		a := atts[len(atts)-1]
		switch a.Outcome {
		case "interrupted":
			r.coopLast = max(r.coopLast, a.EndedAt.Sub(askedAt))
		case "forced":
			r.forcedLast = max(r.forcedLast, a.EndedAt.Sub(forcedAt))
		}
	}
	queued, err := store.List(ctx, tasks.ListFilter{State: tasks.StateQueued, Limit: 2 * want})
	if err != nil {
		return nil, err
	}
	r.requeued = len(queued)
	return r, nil
}
