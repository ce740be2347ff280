package main

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/stint-run/stint/batch"
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
// Send 0, Receive the output's bytes, Exitval the guest's exit code (-1
// when it did not exit: a trap, a timeout, a limit, an unreadable input),
// Signal 0, Command the module, its arguments and "< input".
func (l *jobLog) add(r batch.Result) {
	if r.AlreadyDone || r.SkippedFailed {
		return
	}
	var start, runtime float64
	exit := -1
	if a := r.Attempt; a != nil {
		start = float64(a.StartedAt.UnixMilli()) / 1000
		runtime = a.Duration().Seconds()
		if a.Outcome == "succeeded" || a.Outcome == "failed" {
			exit = a.ExitCode
		}
	}
	cmd := shellQuote(append([]string{l.module}, r.Args...)) + " < " + shellQuote([]string{r.Input})
	// A tab or a newline in a name would break the line: written escaped.
	line := fmt.Sprintf("%d\t:\t%.3f\t%10.3f\t0\t%d\t%d\t0\t%s\n", r.Seq, start, runtime, r.OutputBytes, exit,
		strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(cmd))
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(line); err != nil && l.err == nil {
		l.err = err
	}
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
