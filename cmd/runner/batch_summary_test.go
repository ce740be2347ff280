package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/batch"
)

// The resume line spells an argument with control characters as $'...'.
func TestShellQuoteEscapes(t *testing.T) {
	t.Parallel()
	got := shellQuote([]string{"runner", "batch", "up.wasm", "--in", "my dir", "--out", "o\x1b[2Jut's"})
	require.Equal(t, `runner batch up.wasm --in 'my dir' --out $'o\x1b[2Jut\'s'`, got)
	require.Equal(t, got, termSafe(got), "nothing left to escape")
}

// The human summary escapes names, reasons, file names and the guest's
// stderr; the JSON summary keeps them exact.
func TestPrintSummaryEscapes(t *testing.T) {
	t.Parallel()
	var w bytes.Buffer
	printBatchSummary(&w, batchSummary{Summary: batch.Summary{Total: 2, Succeeded: 1, Failed: 1, Failures: []batchFailure{{
		Input: "/in/a\x1b[1A\x1b[2K.txt", Outcome: "failed", ExitCode: 1, Reason: "exit code 1\r0 failed",
		StderrFile: "/out/a\x1b[1A\x1b[2K.txt.stderr",
		StderrTail: "first\n\x1b]0;title\x07second \x9b\n\x1b[2J\x1b[H2 inputs: 2 succeeded, 0 failed\n",
	}}}})
	out := w.String()
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\x07")
	require.NotContains(t, out, "\r")
	require.True(t, utf8.ValidString(out))
	require.Contains(t, out, `  /in/a\x1b[1A\x1b[2K.txt (failed: exit code 1\r0 failed)`)
	require.Contains(t, out, `    stderr (/out/a\x1b[1A\x1b[2K.txt.stderr):`)
	require.Contains(t, out, `      \x1b]0;title\x07second \x9b`)
	require.Contains(t, out, `      \x1b[2J\x1b[H2 inputs: 2 succeeded, 0 failed`)
	require.Equal(t, 2+1+1+3, strings.Count(out, "\n"), "one line each: summary, failed:, input, stderr file, 3 stderr lines")
}

// TestParseJobs: -j as GNU parallel spells it: N, N% of the CPUs (at
// least one), 0 for as many as may help; anything else is a usage error.
func TestParseJobs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "3": 3, "50%": 4, "100%": 8, "1%": 1, "200%": 16, "0": 32} {
		got, err := parseJobs(in, 8)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"-1", "x", "%", "-5%", "0%", "1.5"} {
		_, err := parseJobs(in, 8)
		require.Error(t, err, in)
		require.Equal(t, exitUsage, exitCode(err), in)
	}
}
