package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchChecksBeforeWork: a batch whose spec is over the runner's
// maxima, or whose --sync is unknown, is a usage error (exit 2) from
// batch's one check, dry run or not, and writes nothing: no output
// folder, no data directory.
func TestBatchChecksBeforeWork(t *testing.T) {
	t.Parallel()
	root, in := inputFolder(t, "a.txt")
	out, data := filepath.Join(root, "out"), filepath.Join(root, "data")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--stdout-cap", "1GiB"}, "stdout 1GiB is over the runner's maximum 64MiB\n(the maxima are the limits.max_* keys"},
		{[]string{"--stdout-cap", "1GiB", "--dry-run"}, "stdout 1GiB is over the runner's maximum 64MiB"},
		{[]string{"--sync", "often"}, `sync "often" (--sync, Config.Sync): want auto or file`},
	} {
		args := append([]string{"batch", fixture(t, "echo"), "--in", in, "--out", out, "--data-dir", data}, c.args...)
		_, stderr, code := runInProcess(t, args...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, c.args)
		require.NoDirExists(t, out)
		require.NoDirExists(t, data)
	}
}

// TestBatchQuietOnATerminal: on a terminal runner batch logs only
// warnings and errors (the bar and the summary show the run: no start,
// migration or shutdown lines), unless -v or log.level asks; off a
// terminal its log is its progress, as before (issue 41, item 14).
func TestBatchQuietOnATerminal(t *testing.T) {
	t.Parallel()
	require.True(t, batchQuiet(false, false, true))
	require.False(t, batchQuiet(true, false, true), "-v")
	require.False(t, batchQuiet(false, true, true), "--log-level")
	require.False(t, batchQuiet(false, false, false), "off a terminal")
}
