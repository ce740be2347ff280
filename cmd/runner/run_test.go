package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// In-process tests of runner run and the commands next to it (the ones
// that run the binary are in e2e/run_e2e_test.go).

// TestRunGuestArgsAfterDash: what follows -- goes to the guest, flags
// included, after any --arg; extra arguments without -- are a usage error
// that says how.
func TestRunGuestArgsAfterDash(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	out, stderr, code := runInProcess(t, "run", fixture(t, "args_env"), "--data-dir", dir, "--arg", "a", "--", "b", "--flag2", "-x", "--")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "args_env.wasm\na\nb\n--flag2\n-x\n--\n", out)
	_, stderr, code = runInProcess(t, "run", fixture(t, "args_env"), "extra", "--data-dir", dir)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "-- extra")
	_, stderr, code = runInProcess(t, "run", "--data-dir", dir, "--", fixture(t, "args_env"))
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "MODULE.wasm before --")
	_, stderr, code = runInProcess(t, "submit", fixture(t, "args_env"), "x", "--data-dir", dir)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "runner submit MODULE.wasm -- x")
}

// TestReadOnlyCommandsCreateNothing: with no store, the commands that act
// on stored tasks say so (exit 3) and create nothing; config and version
// create nothing; runner run works without a data directory (no cache)
// and does not create one.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "stint-data")
	for _, args := range [][]string{{"tasks", "list"}, {"tasks", "show", "1"}, {"tasks", "result", "1"},
		{"tasks", "cancel", "1"}, {"tasks", "retry", "1"}, {"tasks", "prune", "--older-than", "0s"}} {
		_, stderr, code := runInProcess(t, append(args, "--data-dir", dir)...)
		require.Equal(t, 3, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "runner: no store at "+dir+"/stint.db (nothing submitted yet?", args)
		require.NoDirExists(t, dir, args)
	}
	for _, args := range [][]string{{"config"}, {"version"}, {"run", fixture(t, "noop")}} {
		_, stderr, code := runInProcess(t, append(args, "--data-dir", dir)...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
		require.NoDirExists(t, dir, args)
	}
	// Once something is submitted, the same commands work.
	_, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	out, stderr, code := runInProcess(t, "tasks", "list", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "queued")
}

// TestRunTrapShowsWhere: a trap in runner run prints where it was on
// stderr as wazero's CLI does (the message, then the wasm stack with the
// module's function names), keeps it in --json (stack, and the attempt's
// stderr tail), and a submitted task's attempt keeps it too, so that
// runner tasks show prints it (issue 42, item 4).
func TestRunTrapShowsWhere(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	const where = "wasm error: unreachable\nwasm stack trace:\n\t.crash()\n\t.start()\n"
	_, stderr, code := runInProcess(t, "run", fixture(t, "trap"), "--data-dir", dir)
	require.Equal(t, 11, code, stderr)
	require.Contains(t, stderr, where)
	out, stderr, code := runInProcess(t, "run", "--json", fixture(t, "trap"), "--data-dir", dir)
	require.Equal(t, 11, code, stderr)
	var rep struct{ Stack, Stderr string }
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, ".crash()\n\t.start()", rep.Stack)
	require.Equal(t, where, rep.Stderr)
}

// TestRunQuietByDefault: runner run prints the guest's output and nothing
// else when it succeeds; one line saying why when it does not (no JSON
// log line per run, even off a terminal: a batch under GNU parallel
// printed 3,000 of them); -v or --log-level gives the log line (issue
// 41, item 14).
func TestRunQuietByDefault(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	require.NoError(t, os.Chmod(dir, 0o700)) // else a warning says it is open to others
	out, stderr, code := runInProcess(t, "run", fixture(t, "echo"), "--input", "-", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, out)
	require.Empty(t, stderr)
	_, stderr, code = runInProcess(t, "run", fixture(t, "trap"), "--data-dir", dir)
	require.Equal(t, 11, code)
	require.True(t, strings.HasPrefix(stderr, "runner: trap.wasm: trapped: unreachable\nwasm error:"), stderr)
	require.NotContains(t, stderr, `"level"`)
	for _, flag := range [][]string{{"-v"}, {"--log-level", "info"}} {
		_, stderr, code = runInProcess(t, append([]string{"run", fixture(t, "echo"), "--data-dir", dir}, flag...)...)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stderr, `"outcome":"succeeded"`, flag)
	}
}

// TestParseMount: host:guest is read-only, :rw writable, :rw+snapshots
// writable and accepting snapshots; anything else is a usage error that
// names the forms.
func TestParseMount(t *testing.T) {
	for in, want := range map[string]tasks.Mount{
		"/srv/in:/in":              {HostPath: "/srv/in", GuestPath: "/in"},
		"/srv/in:/in:ro":           {HostPath: "/srv/in", GuestPath: "/in"},
		"/srv/in:/in:rw":           {HostPath: "/srv/in", GuestPath: "/in", Writable: true},
		"/srv/in:/in:rw+snapshots": {HostPath: "/srv/in", GuestPath: "/in", Writable: true, Snapshots: true},
	} {
		got, err := parseMount(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"/srv/in:/in:snapshots", "/srv/in", "/srv/in:in"} {
		_, err := parseMount(in)
		require.Error(t, err, in)
	}
	_, err := parseMount("/srv/in:/in:wr")
	require.ErrorContains(t, err, "host:guest:rw+snapshots")
}
