package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchDryRunEscapesEveryColumn: a tab, a newline and an escape in a
// file name are printed escaped by --dry-run, in the input and the output
// columns and in an argument made from the name, so each input is one
// line of exactly three tab-separated columns.
func TestBatchDryRunEscapesEveryColumn(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in := t.TempDir()
	name := "a\tb\nc\x1bd.txt"
	require.NoError(t, os.WriteFile(filepath.Join(in, name), []byte("x\n"), 0o644))
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--dry-run", "--arg", "{/}")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 1, stdout)
	cols := strings.Split(lines[0], "\t")
	require.Len(t, cols, 3, lines[0])
	esc := `a\tb\nc\x1bd.txt`
	require.Equal(t, filepath.Join(in, esc), cols[0])
	require.True(t, strings.HasPrefix(cols[1], out+"/"), cols[1])
	require.Equal(t, esc, cols[2])
}

// TestBatchHaltHintSkipsFailed: a batch halted by --halt prints a resume
// command with --skip-failed (the same command would try its failure
// first and halt again); that command skips the input that failed and
// goes on with the next ones, and its own hint, if it halts again, is the
// same command.
func TestBatchHaltHintSkipsFailed(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "loop") // never ends: each input times out
	in, _ := batchInputs(t, 6)
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t),
		"-j", "1", "--timeout", "100ms", "--json", "--halt", "now,fail=1"}
	stdout, stderr, code := runRunner(t, "", args...)
	require.Equal(t, exitBatchFailed, code, stderr)
	first := batchSummaryOf(t, stdout)
	require.NotEmpty(t, first.Failures, stdout)
	require.Positive(t, first.Left, "halted before the end")
	require.Contains(t, stderr, "batch halted (--halt now,fail=1)")
	hint := resumeCommand(t, stderr)
	require.Equal(t, "--skip-failed", hint[len(hint)-1], stderr)
	failedBefore := map[string]bool{}
	for _, f := range first.Failures {
		failedBefore[f.Input] = true
	}

	stdout, stderr, code = runRunner(t, "", append(args, "--skip-failed")...)
	require.Equal(t, exitBatchFailed, code, stderr)
	var second struct {
		batchSummary
		SkippedFailed int `json:"skipped_failed"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &second), stdout)
	require.Equal(t, len(failedBefore), second.SkippedFailed, stdout)
	require.Positive(t, second.Failed, stdout)
	for _, f := range second.Failures {
		if strings.Contains(f.Reason, "--skip-failed") {
			require.True(t, failedBefore[f.Input], "skipped %s, which had not failed", f.Input)
		} else {
			require.False(t, failedBefore[f.Input], "%s, which failed before, ran again", f.Input)
		}
	}
	if strings.Contains(stderr, "batch halted") { // halted again, on another input: the same command
		again := resumeCommand(t, stderr)
		require.Equal(t, "--skip-failed", again[len(again)-1], stderr)
		require.NotContains(t, stderr, "--skip-failed --skip-failed")
	}
}

// resumeCommand is the arguments of the resume command a halted batch
// printed on stderr (the line after "To resume"), without the program.
func resumeCommand(t *testing.T, stderr string) []string {
	t.Helper()
	lines := strings.Split(stderr, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "To resume") && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			require.NotEmpty(t, f, stderr)
			return f[1:]
		}
	}
	t.Fatalf("no resume command in:\n%s", stderr)
	return nil
}

// TestScheduleAddTakenName: adding a schedule under a name taken exits 1
// (not 2, bad usage: the command was right) and says so in words of its
// own, not the store's.
func TestScheduleAddTakenName(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	noop := fixture(t, "noop")
	_, stderr, code := runRunner(t, "", "schedule", "add", "tick", noop, "--every", "1m", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	stderr = runExits(t, 1, "runner: a schedule named tick exists",
		"schedule", "add", "tick", noop, "--every", "1m", "--data-dir", dir)
	require.NotContains(t, stderr, "sqlite")
}
