package main

import (
	"bufio"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/sandbox"
)

// jobLogHeader is GNU parallel's --joblog header.
const jobLogHeader = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

// jobLog writes runner batch --joblog: a line per input that ran in this
// run, in GNU parallel's format, appended to the file (with the header
// when the file is new or empty), each line written as it ends; and a
// line for each input done in an earlier run that the file does not
// account for yet (one killed between an input's end and its line, or
// run without --joblog): every input done has its line.
type jobLog struct {
	mu     sync.Mutex
	f      *os.File
	module string
	err    error
	// lines holds, for each (Seq, Command) the file has a line for, true
	// when one of them is a success (Exitval and Signal 0); by hash.
	lines map[uint64]bool
	seed  maphash.Seed
}

// openJobLog opens (or creates) path for appending, and reads the lines
// it holds.
func openJobLog(path, module string) (*jobLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, usageErrorf("--joblog %s: %v", termSafe(path), err)
	}
	l := &jobLog{f: f, module: module, lines: map[uint64]bool{}, seed: maphash.MakeSeed()}
	size, err := l.read()
	if err == nil && size == 0 {
		_, err = f.WriteString(jobLogHeader)
	}
	if err != nil {
		_ = f.Close()
		return nil, usageErrorf("--joblog %s: %v", termSafe(path), err)
	}
	return l, nil
}

// read reads the lines the file holds (l.lines). A last line without its
// end, a write cut short, is cut off: a reader of the log would take its
// Seq for a job that ran. It returns the size of the file then (the
// file is read from its start: it was just opened).
func (l *jobLog) read() (int64, error) {
	r := bufio.NewReaderSize(l.f, 64<<10)
	var whole int64 // the bytes of the whole lines
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			if line == "" {
				return whole, nil
			}
			return whole, l.f.Truncate(whole)
		}
		if err != nil {
			return 0, err
		}
		whole += int64(len(line))
		l.note(strings.TrimSuffix(line, "\n"))
	}
}

// note records one line of the file: its Seq and Command, and whether it
// is a success. The header, and lines not in the format, are left out.
func (l *jobLog) note(line string) {
	f := strings.SplitN(line, "\t", 9)
	if len(f) != 9 {
		return
	}
	if _, err := strconv.Atoi(f[0]); err != nil {
		return
	}
	k := l.key(f[0], f[8])
	l.lines[k] = l.lines[k] || f[6] == "0" && f[7] == "0"
}

func (l *jobLog) key(seq, command string) uint64 {
	return maphash.String(l.seed, seq+"\t"+command)
}

// command is the Command column of r's line.
func (l *jobLog) command(r batch.Result) string {
	cmd := shellQuote(append([]string{l.module}, r.Args...)) + " < " + shellQuote([]string{r.Input})
	// A tab or a newline in a name would break the line: written escaped.
	return strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(cmd)
}

// missing reports whether r, an input done in an earlier run, needs a
// line: one that succeeded has no success line for its Seq and Command
// (parallel --resume-failed would run it again), one that failed has no
// line at all (parallel --resume would).
func (l *jobLog) missing(r batch.Result) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok, seen := l.lines[l.key(strconv.Itoa(r.Seq), l.command(r))]
	if r.AlreadyDone {
		return !ok
	}
	return !seen
}

// add logs r if it ran in this run, or if it was done in an earlier one
// and the file has no line for it yet (missing): Seq is the input's {#},
// Host ":" (this machine), Starttime the attempt's start in epoch seconds
// and JobRuntime its duration (3 decimals each, as parallel writes them;
// for an input done before, its task's last attempt's), Send 0, Receive
// the output's bytes, Exitval and Signal what jobLogStatus says, Command
// the module, its arguments and "< input". An input whose attempt the
// batch's stop ended (r.Stopped) is logged too: it is not done, and a
// signal stopped it when one stopped the batch.
func (l *jobLog) add(r batch.Result) {
	if (r.AlreadyDone || r.SkippedFailed) && !l.missing(r) {
		return
	}
	var start, runtime float64
	if a := r.Attempt; a != nil && !a.StartedAt.IsZero() {
		start = float64(a.StartedAt.UnixMilli()) / 1000
		runtime = a.Duration().Seconds()
	}
	exit, sig := jobLogStatus(r)
	cmd := l.command(r)
	line := fmt.Sprintf("%d\t:\t%.3f\t%10.3f\t0\t%d\t%d\t%d\t%s\n", r.Seq, start, runtime, r.OutputBytes, exit, sig, cmd)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(line); err != nil && l.err == nil {
		l.err = err
	}
	k := l.key(strconv.Itoa(r.Seq), cmd)
	l.lines[k] = l.lines[k] || exit == 0 && sig == 0
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
