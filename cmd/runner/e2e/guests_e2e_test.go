package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// TestRunMisbehavingGoGuests: real Go guests that grow memory without end,
// flood stdout or sleep for an hour get their outcome and exit code.
func TestRunMisbehavingGoGuests(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	cases := []struct {
		guest   string
		args    []string
		code    int
		outcome string
	}{
		{"memhog", []string{"--memory", "32MiB"}, 14, "memory_limit"},
		{"flood", []string{"--limits-stdout", "64KiB"}, 15, "output_limit"},
		{"sleeper", []string{"--timeout", "1s"}, 13, "timed_out"},
	}
	for _, c := range cases {
		t.Run(c.guest, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"run", "-v", testwasm.GoGuest(t, c.guest), "--data-dir", dir}, c.args...)
			_, stderr, code := runRunner(t, "", args...)
			require.Equal(t, c.code, code, stderr)
			require.Contains(t, stderr, `"outcome":"`+c.outcome+`"`)
		})
	}
}

// TestServeTimeSlicedAndFlaky: a long primes task with a short attempt
// timeout runs as a series of attempts, each stopped at its deadline after
// a checkpoint and not counted; flaky fails twice, then succeeds using its
// checkpoint as the attempt counter.
func TestServeTimeSlicedAndFlaky(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	s := openTestStore(t, dir)
	sliced := queue(t, s, testwasm.GoGuest(t, "primes"), tasks.Spec{
		Input: []byte("6000000 20000"), MaxAttempts: 1, // about 8 s of work: several attempts even on a much faster machine
		// 1.5 s per attempt, asked to stop 1 s before: a loaded machine
		// (CI runs every package at once, with -race) may take a while to
		// reach the guest's next stop check.
		Limits: tasks.Limits{Timeout: 1_500_000_000},
	})
	flaky := queue(t, s, testwasm.GoGuest(t, "flaky"), tasks.Spec{Input: []byte("3"), MaxAttempts: 3})
	p := startServe(t, dir, "--limits-grace", "1s")
	ctx := context.Background()
	testutil.WaitFor(t, "both tasks to end", func() bool {
		a, err := s.Get(ctx, sliced)
		require.NoError(t, err)
		b, err := s.Get(ctx, flaky)
		require.NoError(t, err)
		return a.State.Terminal() && b.State.Terminal()
	})
	p.stopCleanly(t)

	task, err := s.Get(ctx, sliced)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, task.State, task.LastError)
	require.Equal(t, "primes below 6000000: 412849\n", string(task.Result))
	atts, err := s.Attempts(ctx, sliced)
	require.NoError(t, err)
	require.Greater(t, len(atts), 1, "the task ran as several attempts")
	for _, a := range atts[:len(atts)-1] {
		// An attempt's timeout counts its module's compilation: under load
		// the first attempts may time out while the Go guest compiles,
		// which is not counted either (the guest never ran).
		if a.Outcome == "timed_out" {
			require.Contains(t, a.Reason, "while compiling")
		} else {
			require.Equal(t, "interrupted", a.Outcome)
		}
		require.False(t, a.Counted, "a deadline stop after a checkpoint, or while compiling, is not counted")
	}
	require.True(t, atts[len(atts)-1].Resumed)

	task, err = s.Get(ctx, flaky)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, task.State)
	require.Equal(t, "ok after 3 attempts\n", string(task.Result))
	require.Equal(t, 2, task.Failures)
}

// TestCorruptStore: a data directory whose database is garbage gives a
// clear error, no panic, and the file is left as it was.
func TestCorruptStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "stint.db")
	garbage := []byte("this is not a sqlite database, and it must survive untouched......")
	require.NoError(t, os.WriteFile(db, garbage, 0o644))
	for _, args := range [][]string{
		{"tasks", "list", "--data-dir", dir},
		{"submit", fixture(t, "noop"), "--data-dir", dir},
		serveArgs(dir),
	} {
		_, stderr, code := runRunner(t, "", args...)
		require.Equal(t, 1, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, db)
		require.NotContains(t, stderr, "panic")
	}
	after, err := os.ReadFile(db)
	require.NoError(t, err)
	require.Equal(t, garbage, after)
}
