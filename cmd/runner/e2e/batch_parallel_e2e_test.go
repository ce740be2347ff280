package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// --dry-run prints input, output and arguments and writes nothing: no
// data dir, no output folder.
func TestBatchDryRun(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in, _ := batchInputs(t, 3)
	require.NoError(t, os.MkdirAll(filepath.Join(in, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(in, "sub", "x.txt"), []byte("x\n"), 0o644))
	dir := t.TempDir()
	out, data := filepath.Join(dir, "out"), filepath.Join(dir, "data")
	stdout, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", data,
		"--dry-run", "--output-name", "{//}/{/.}.up", "--arg", "{#}:{/}")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, filepath.Join(in, "sub", "x.txt")+"\t"+filepath.Join(out, "sub", "x.up")+"\t4:x.txt", lines[3])
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, ents, "no data dir, no output folder")
}

// --halt now,fail=1 stops the batch after its first failure (here a
// timeout), the inputs not done left for the next run; --joblog writes
// GNU parallel's format, with -1 for an attempt that did not exit.
func TestBatchHaltAndJobLog(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "loop") // never ends: each input times out
	in, _ := batchInputs(t, 20)
	out := filepath.Join(t.TempDir(), "out")
	joblog := filepath.Join(t.TempDir(), "joblog")
	for _, halt := range []string{"now,fail=1", "soon,fail=50%"} {
		stdout, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t),
			"-j", "1", "--timeout", "100ms", "--joblog", joblog, "--json", "--halt", halt)
		require.Equal(t, exitBatchFailed, code, stderr)
		var s struct {
			batchSummary
			Halted bool   `json:"halted"`
			Halt   string `json:"halt"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
		require.True(t, s.Halted, stdout)
		require.Equal(t, halt, s.Halt)
		require.Positive(t, s.Failed)
		require.Positive(t, s.Left, "halted before the end")
		require.Contains(t, stderr, "batch halted (--halt "+halt+")")
	}
	log := strings.Split(strings.TrimSpace(string(readFile(t, joblog))), "\n")
	require.Equal(t, "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand", log[0], "one header")
	require.Greater(t, len(log), 2)
	for _, l := range log[1:] {
		f := strings.Split(l, "\t")
		require.Len(t, f, 9, l)
		require.Equal(t, ":", f[1])
		require.Regexp(t, `^\d+\.\d{3}$`, f[2])
		require.Regexp(t, `^ *\d+\.\d{3}$`, f[3])
		rt, err := strconv.ParseFloat(strings.TrimSpace(f[3]), 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, rt, 0.09, "ran until its timeout")
		require.Equal(t, "-1", f[6], "a timeout did not exit")
		require.Contains(t, f[8], " < "+in+string(filepath.Separator)+"in-")
	}
}

// --files-from - with --null reads NUL-separated paths from stdin; the
// task carries its input's path as a label (tasks list); --skip-failed
// leaves the failed input alone where the default retries it.
func TestBatchParallelFlags(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in, files := batchInputs(t, 30)
	bad := filepath.Join(in, "in-0000.txt") // first in the list
	require.NoError(t, os.WriteFile(bad, []byte("bin\x00ary"), 0o644))
	delete(files, "in-0000.txt")
	var list []string
	for i := range 30 {
		list = append(list, filepath.Join(in, fmt.Sprintf("in-%04d.txt", i)))
	}
	stdin := strings.Join(list, "\x00") + "\x00"
	out := filepath.Join(t.TempDir(), "out")
	data := dataDir(t)
	args := []string{"batch", mod, "--files-from", "-", "--null", "--out", out, "--data-dir", data, "--json"}

	stdout, stderr, code := runRunner(t, stdin, args...)
	require.Equal(t, exitBatchFailed, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Equal(t, 1, s.Failed)
	require.Equal(t, 29, s.Succeeded)

	// The task of an input names it.
	show, stderr, code := runRunner(t, "", "tasks", "list", "--data-dir", data, "--state", "dead", "--json")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, show, `"batch.input": "`+bad+`"`)

	// Resumed, skipping the failed input: everything else is done.
	stdout, stderr, code = runRunner(t, stdin, append(args, "--skip-failed")...)
	require.Equal(t, exitBatchFailed, code, stderr)
	s2 := batchSummaryOf(t, stdout)
	require.Equal(t, 0, s2.Failed)
	require.Equal(t, 29, s2.Succeeded+s2.AlreadyDone)
	require.Contains(t, stdout, `"skipped_failed": 1`)
	require.Contains(t, stdout, `"files_from": "-"`)
	got := readOut(t, out)
	require.Contains(t, got, stderrPrefix+"in-0000.txt")
	delete(got, stderrPrefix+"in-0000.txt")
	require.Len(t, got, len(files))

	// By default the failed input is tried again.
	stdout, stderr, code = runRunner(t, stdin, args...)
	require.Equal(t, exitBatchFailed, code, stderr)
	require.Equal(t, 1, batchSummaryOf(t, stdout).Failed)
}
