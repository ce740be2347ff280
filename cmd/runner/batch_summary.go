package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/shutdown"
)

// batchSummary is what a batch did (--json prints it).
type batchSummary struct {
	Module string `json:"module"`
	In     string `json:"in"`
	Out    string `json:"out"`
	// Total is the number of inputs.
	Total int `json:"total"`
	// Succeeded ran in this run; AlreadyDone had succeeded in an earlier
	// one (its output kept, or written from the store if missing).
	Succeeded   int `json:"succeeded"`
	AlreadyDone int `json:"already_done"`
	Failed      int `json:"failed"`
	// Left were not done when a signal stopped the batch; Interrupted of
	// them were running (they resume from their checkpoints).
	Left        int            `json:"left"`
	Interrupted int            `json:"interrupted"`
	Stopped     bool           `json:"stopped"`
	Seconds     float64        `json:"seconds"`
	Rate        float64        `json:"files_per_second"`
	Failures    []batchFailure `json:"failures"`
	ExitCode    int            `json:"exit_code"`
}

// finish prints the summary and returns the batch's exit.
func (b *batchRun) finish(f batchFlags, modPath string, rep shutdown.Report, st pool.Stats) error {
	c := b.counts()
	b.mu.Lock()
	failures := append([]batchFailure{}, b.failures...)
	b.mu.Unlock()
	el := time.Since(b.start)
	s := batchSummary{Module: modPath, In: f.in, Out: f.out, Total: c.total, Succeeded: c.succeeded,
		AlreadyDone: c.already, Failed: c.failed, Left: c.left, Interrupted: rep.Cooperative + rep.Forced,
		Stopped: c.left > 0, Seconds: el.Seconds(), Failures: failures}
	if s.Failures == nil {
		s.Failures = []batchFailure{}
	}
	if el > 0 {
		s.Rate = float64(c.succeeded+c.failed) / el.Seconds()
	}
	var err error
	switch {
	case s.Stopped:
		s.ExitCode = exitBatchStopped
		err = &exitError{code: exitBatchStopped, err: errOutcomeLogged}
	case s.Failed > 0:
		s.ExitCode = exitBatchFailed
		err = &exitError{code: exitBatchFailed, err: errOutcomeLogged}
	}
	if st.Unrecorded > 0 && s.ExitCode == 0 {
		s.ExitCode = exitInternal
		err = &exitError{code: exitInternal, err: fmt.Errorf("the store could not record %d attempts; they run again at the next run", st.Unrecorded)}
	}
	if f.asJSON {
		if jerr := b.a.printJSON(s); jerr != nil {
			return jerr
		}
	} else {
		b.printSummary(b.a.stdout, s)
	}
	if s.Stopped {
		fmt.Fprintf(b.a.stderr, "batch stopped: %d of %d inputs done, %d left (%d interrupted resume from their checkpoints).\n"+
			"To resume, run the same command again:\n  %s\n", s.Total-s.Left, s.Total, s.Left, s.Interrupted, termSafe(shellQuote(os.Args)))
	}
	return err
}

// printSummary prints the summary for a person: every name, reason and
// line of guest stderr through termSafe.
func (b *batchRun) printSummary(w io.Writer, s batchSummary) {
	fmt.Fprintf(w, "%d inputs: %d succeeded, %d already done, %d failed", s.Total, s.Succeeded, s.AlreadyDone, s.Failed)
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
			b.WriteString(`\x` + hex2(c))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
