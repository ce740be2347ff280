package main

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/sandbox"
)

// jobLogHeader is GNU parallel's --joblog header.
const jobLogHeader = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

// jobLog writes runner batch --joblog: a line per input that ran in this
// run, in GNU parallel's format, appended to the file (with the header
// when the file is new or empty), each line written as it ends.
type jobLog struct {
	mu     sync.Mutex
	f      *os.File
	module string
	err    error
}

// openJobLog opens (or creates) path for appending.
func openJobLog(path, module string) (*jobLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, usageErrorf("--joblog %s: %v", termSafe(path), err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() == 0 {
		_, err = f.WriteString(jobLogHeader)
	}
	if err != nil {
		_ = f.Close()
		return nil, usageErrorf("--joblog %s: %v", termSafe(path), err)
	}
	return &jobLog{f: f, module: module}, nil
}

// add logs r if it ran in this run: Seq is the input's {#}, Host ":"
// (this machine), Starttime the attempt's start in epoch seconds and
// JobRuntime its duration (3 decimals each, as parallel writes them),
// Send 0, Receive the output's bytes, Exitval and Signal what
// jobLogStatus says, Command the module, its arguments and "< input".
// An input whose attempt the batch's stop ended (r.Stopped) is logged
// too: it is not done, and a signal stopped it when one stopped the batch.
func (l *jobLog) add(r batch.Result) {
	if r.AlreadyDone || r.SkippedFailed {
		return
	}
	var start, runtime float64
	if a := r.Attempt; a != nil && !a.StartedAt.IsZero() {
		start = float64(a.StartedAt.UnixMilli()) / 1000
		runtime = a.Duration().Seconds()
	}
	exit, sig := jobLogStatus(r)
	cmd := shellQuote(append([]string{l.module}, r.Args...)) + " < " + shellQuote([]string{r.Input})
	// A tab or a newline in a name would break the line: written escaped.
	line := fmt.Sprintf("%d\t:\t%.3f\t%10.3f\t0\t%d\t%d\t%d\t%s\n", r.Seq, start, runtime, r.OutputBytes, exit, sig,
		strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(cmd))
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(line); err != nil && l.err == nil {
		l.err = err
	}
}

// jobLogStatus is the Exitval and Signal --joblog writes for r, what a
// parallel user reads there: 0 and 0 for a success, and only for one
// (parallel --resume-failed runs again what has another). Exitval is the
// guest's own code when it exited with one (as `runner run --exit-code
// guest` exits), else the code `runner run` exits with for the outcome
// (exitcodes.go: 11 trapped, 12 forced, 13 timed out, 14 memory limit,
// 15 output limit, 18 work limit, 21 an input that could not be read, 75
// interrupted), 1 for an output that could not be written, -1 for an input
// cancelled before it ran. Signal is the number of the signal (2 SIGINT,
// 15 SIGTERM) whose stop ended the attempt, else 0: the runner stops a
// guest by no signal of its own.
func jobLogStatus(r batch.Result) (exitval, sig int) {
	if r.Stopped {
		sig = r.Signal
	}
	a := r.Attempt
	switch {
	case r.Failure != nil && r.Failure.Outcome == "not_written":
		return exitInternal, sig
	case a == nil:
		if r.Failure == nil {
			return 0, sig
		}
		return -1, sig // cancelled (runner tasks cancel) before it ran
	case a.Outcome == "unreadable":
		return outcomeExitCode(sandbox.KindInputUnavailable), sig
	}
	k := sandbox.Kind(a.Outcome)
	code := outcomeExitCode(k)
	if k == sandbox.KindFailed || k == sandbox.KindInterrupted {
		code = guestExitCode(&sandbox.Outcome{Kind: k, ExitCode: uint32(a.ExitCode)}, code)
	}
	if code == 0 && r.Failure != nil {
		code = exitInternal // never 0 for an input without its output
	}
	return code, sig
}

// close closes the file and reports the first error.
func (l *jobLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = err
	}
	return l.err
}
