package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// termSafe escapes every control character but the tab, the marks that
// reorder text, and bytes that are not UTF-8; printable text (any
// script) is kept as it is.
func TestTermSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain name.txt":                   "plain name.txt",
		"tab\tkept":                        "tab\tkept",
		"héllo, 世界":                        "héllo, 世界",
		"evil\x1b[2J\x1b]0;pwned\x07.txt":  `evil\x1b[2J\x1b]0;pwned\x07.txt`,
		"line\nforged: 0 failed\r":         `line\nforged: 0 failed\r`,
		"del\x7f nul\x00":                  `del\x7f nul\x00`,
		"c1 csi \u009b31m":                 `c1 csi \u009b31m`,
		"bidi \u202eexe.txt":               `bidi \u202eexe.txt`,
		"isolate \u2066x\u2069":            `isolate \u2066x\u2069`,
		"not utf-8 \xff\xfe, cut \xe4\xb8": `not utf-8 \xff\xfe, cut \xe4\xb8`,
		"":                                 "",
	} {
		require.Equal(t, want, termSafe(in), "%q", in)
	}
	// Whatever the bytes, the result is UTF-8 without a control character
	// but the tab.
	var all bytes.Buffer
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	all.WriteString("\u0085\u009b\u200e\u2028")
	got := termSafe(all.String())
	require.True(t, utf8.ValidString(got))
	for _, r := range got {
		require.False(t, unicode.IsControl(r) && r != '\t', "%U left in %q", r, got)
		require.False(t, reordersText(r), "%U left", r)
	}
}

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
	b := &batchRun{}
	var w bytes.Buffer
	b.printSummary(&w, batchSummary{Total: 2, Succeeded: 1, Failed: 1, Failures: []batchFailure{{
		Input: "/in/a\x1b[1A\x1b[2K.txt", Outcome: "failed", ExitCode: 1, Reason: "exit code 1\r0 failed",
		StderrFile: "/out/a\x1b[1A\x1b[2K.txt.stderr",
		StderrTail: "first\n\x1b]0;title\x07second \x9b\n\x1b[2J\x1b[H2 inputs: 2 succeeded, 0 failed\n",
	}}})
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
