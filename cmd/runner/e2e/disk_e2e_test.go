package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// prlimitPath returns the prlimit command (util-linux), or skips the test.
func prlimitPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not found")
	}
	return p
}

// storeFileLimit is a file-size limit that leaves the store's largest file
// room more bytes (and at least room).
func storeFileLimit(t *testing.T, dir string, room int64) int64 {
	t.Helper()
	limit := room
	for _, name := range []string{"stint.db", "stint.db-wal", "stint.db-shm"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			limit = max(limit, fi.Size()+room)
		}
	}
	return limit
}

// TestFullDisk: when the store's files cannot grow (a full disk, simulated
// with a file-size limit, RLIMIT_FSIZE, which also holds for root, unlike a
// read-only directory), submit fails with a clear error and no panic, and
// nothing stored before is lost: the queued task and its module are intact,
// and the store takes writes again once there is room.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	prlimit := prlimitPath(t)
	dir := dataDir(t)
	out, stderr, code := runRunner(t, "hi", "submit", fixture(t, "noop"), "--input", "-", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	id := mustID(t, out)

	// Room for what is there plus 64 KiB: a 2.6 MB Go module does not fit.
	limit := storeFileLimit(t, dir, 64<<10)
	big := testwasm.GoGuest(t, "hello")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, prlimit, "--fsize="+strconv.FormatInt(limit, 10), runnerBin,
		"submit", big, "--input", "-", "--data-dir", dir)
	cmd.Env = append(os.Environ(), "RUNNER_LOG_FORMAT=json")
	cmd.Stdin = strings.NewReader("hi")
	outb, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "submit should fail when the store cannot grow: %s", outb)
	require.Equal(t, 1, exitErr.ExitCode(), "%s", outb)
	require.NotContains(t, string(outb), "panic")
	require.Contains(t, string(outb), filepath.Join(dir, "stint.db"), "the error names the store")
	require.Contains(t, string(outb), "is its disk full")
	t.Logf("submit on a full disk: %s", outb)

	// Nothing lost: the first task is still queued with its input, and the
	// store works again without the limit.
	s := openTestStore(t, dir)
	task, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, task.State)
	require.Equal(t, "hi", string(task.Input))
	list, err := s.List(context.Background(), tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 1, "the failed submit left no task behind")
	require.NoError(t, s.Close())

	out, stderr, code = runRunner(t, "hi", "submit", big, "--input", "-", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.NotEqual(t, id, mustID(t, out))
}

// TestServeOnAFullDisk: a runner whose store cannot grow (a file-size
// limit) cannot record a task's 3 MB result; it says why, keeps retrying
// without crashing, gives the attempt up when it stops, and loses nothing:
// the next runner, with room, recovers the task and runs it to the right
// result.
func TestServeOnAFullDisk(t *testing.T) {
	t.Parallel()
	prlimit := prlimitPath(t)
	dir := dataDir(t)
	input := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	out, stderr, code := runRunner(t, string(input), "submit", fixture(t, "echo"), "--input", "-",
		"--stdout-cap", "8MiB", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	id := mustID(t, out)
	// No write may reach past 1 MiB into a file: the store's file, 3 MB
	// with the input, can be read and rewritten in place but cannot grow;
	// the write-ahead log, empty at the start, takes the claim (a few
	// pages: neither the input nor a temporary copy of it is written) but
	// not the 3 MB result.
	const limit = 1 << 20
	fi, err := os.Stat(filepath.Join(dir, "stint.db"))
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(limit), "the store holds the input")

	full := startCmd(t, exec.Command(prlimit, append([]string{"--fsize=" + strconv.FormatInt(limit, 10), runnerBin},
		serveArgs(dir)...)...), nil)
	full.waitLine(t, "recording attempts failed; retrying", "is its disk full")
	full.waitLine(t, "runner ready")
	// The pool keeps the result and retries while it runs; when it stops
	// it gives the attempt up after a few more tries, and the runner stops
	// cleanly, saying so in its exit code.
	full.signal(t, syscall.SIGTERM)
	require.Equal(t, 1, full.wait(t), "an attempt went unrecorded: the exit code says so")
	full.waitLine(t, "giving up recording attempts")
	full.waitLine(t, "the store could not record 1 attempts")
	require.NotContains(t, full.stderr(), "panic")

	p := startRunner(t, nil, serveArgs(dir)...)
	p.waitLine(t, "recovered tasks a previous runner left running")
	s := openTestStore(t, dir)
	testutil.WaitFor(t, "the task to succeed", func() bool {
		task, err := s.Get(context.Background(), id)
		require.NoError(t, err)
		return task.State == tasks.StateSucceeded
	})
	task, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, input, task.Result)
	p.stopCleanly(t)
}
