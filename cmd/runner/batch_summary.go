package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/internal/termsafe"
)

// batchSummary is what runner batch --json prints: the batch's Summary
// and the exit code.
type batchSummary struct {
	batch.Summary
	ExitCode int `json:"exit_code"`
}

// batchFailure is one failed input in the summary.
type batchFailure = batch.Failure

// finishBatch prints the summary of a batch that ran (err is batch.Run's:
// nil, a *batch.StoppedError or ErrUnrecorded) and returns its exit.
func (a *app) finishBatch(f batchFlags, sum batch.Summary, runErr error) error {
	s := batchSummary{Summary: sum}
	var err error
	switch {
	case s.Halted:
		s.ExitCode = exitBatchFailed
		err = &exitError{code: exitBatchFailed, err: errOutcomeLogged}
	case s.Stopped:
		s.ExitCode = exitBatchStopped
		err = &exitError{code: exitBatchStopped, err: errOutcomeLogged}
	case s.Failed > 0 || s.SkippedFailed > 0:
		s.ExitCode = exitBatchFailed
		err = &exitError{code: exitBatchFailed, err: errOutcomeLogged}
	case runErr != nil: // attempts the store could not record
		s.ExitCode = exitInternal
		err = &exitError{code: exitInternal, err: runErr}
	}
	if f.asJSON {
		if jerr := a.printJSON(s); jerr != nil {
			return jerr
		}
	} else {
		printBatchSummary(a.stdout, s)
	}
	if s.Halted {
		fmt.Fprintf(a.stderr, "batch halted (--halt %s): %d failed, %d of %d inputs done, %d left.\n%s", s.Halt, s.Failed,
			s.Total-s.Left, s.Total, s.Left, haltResumeHint(os.Args, f.skipFailed || !f.retryFailed))
	} else if s.Stopped {
		fmt.Fprintf(a.stderr, "batch stopped: %d of %d inputs done, %d left (%d interrupted resume from their checkpoints).\n"+
			"To resume, run the same command again:\n  %s\n", s.Total-s.Left, s.Total, s.Left, s.Interrupted, termSafe(shellQuote(os.Args)))
	}
	return err
}

// printSummary prints the summary for a person: every name, reason and
// line of guest stderr through termSafe.
func printBatchSummary(w io.Writer, s batchSummary) {
	fmt.Fprintf(w, "%d inputs: %d succeeded, %d already done, %d failed", s.Total, s.Succeeded, s.AlreadyDone, s.Failed)
	if s.SkippedFailed > 0 {
		fmt.Fprintf(w, ", %d failed before (skipped)", s.SkippedFailed)
	}
	if s.Left > 0 {
		fmt.Fprintf(w, ", %d left (stopped)", s.Left)
	}
	fmt.Fprintf(w, "; %s, %.1f files/s\n", time.Duration(s.Seconds*float64(time.Second)).Round(time.Millisecond), s.Rate)
	if len(s.Failures) == 0 {
		return
	}
	fmt.Fprintln(w, "failed:")
	for _, f := range s.Failures {
		what := f.Outcome
		if f.Reason != "" {
			what += ": " + f.Reason
		}
		fmt.Fprintf(w, "  %s (%s)\n", termSafe(f.Input), termSafe(what))
		if f.StderrFile != "" {
			fmt.Fprintf(w, "    stderr (%s):\n", termSafe(f.StderrFile))
		}
		tail := strings.TrimRight(f.StderrTail, "\n")
		if lines := strings.Split(tail, "\n"); tail != "" {
			if len(lines) > 5 {
				lines = lines[len(lines)-5:]
			}
			for _, l := range lines {
				fmt.Fprintf(w, "      %s\n", termSafe(l))
			}
		}
	}
}

// shellQuote spells args as a shell command line. An argument holding
// what termSafe would escape is spelled $'...' (bash, zsh, ksh), with
// those bytes as \xNN: the line is safe to show and to paste.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		switch {
		case termSafe(a) != a:
			q[i] = ansiCQuote(a)
		case a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;!#~"):
			q[i] = a
		default:
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// ansiCQuote spells a as $'...', every byte that is not printable ASCII
// as \xNN.
func ansiCQuote(a string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(a); i++ {
		switch c := a[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			b.WriteString(`\x` + termsafe.Hex2(c))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// haltResumeHint is what a halted batch says to resume it. The same
// command would try the inputs that failed again, first, and a
// deterministic failure would halt it again: the command printed adds
// --skip-failed (unless args skip them already), and the hint says how
// to try them again instead.
func haltResumeHint(args []string, skipping bool) string {
	if skipping {
		return "To resume (the inputs that failed stay skipped), run the same command again:\n  " + termSafe(shellQuote(args)) + "\n"
	}
	resume := append(append([]string(nil), args...), "--skip-failed")
	return "To resume without the inputs that failed (run again, they would be tried first and halt the batch again), run:\n  " +
		termSafe(shellQuote(resume)) + "\n" +
		"To try them again instead, fix them or raise --halt's threshold and run the same command.\n"
}
