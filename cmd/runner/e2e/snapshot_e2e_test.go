package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

// TestRunSnapshotSuspendsAndResumes: `runner run --snapshot FILE` of a
// guest that knows nothing of Stint. SIGINT suspends it (exit 22, FILE
// written, mode 0600); the same command resumes it and prints only what
// the guest writes from then on: the two stdouts together are the
// uninterrupted run's, byte for byte, and FILE is gone. With wazero's
// interrupt mode, a warning says what --snapshot cannot do there.
func TestRunSnapshotSuspendsAndResumes(t *testing.T) {
	t.Parallel()
	counter := fixture(t, "counter")
	dir := dataDir(t)
	want, stderr, code := runRunner(t, "", "run", "-v", counter, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 24, strings.Count(want, "\n"))

	snap := filepath.Join(t.TempDir(), "counter.snap")
	p := startRunner(t, nil, "run", "-v", counter, "--snapshot", snap, "--data-dir", dir)
	p.waitLine(t, "round")
	suspendWithSIGINT(t, p)
	fi, err := os.Stat(snap)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	first := p.stdout.String()
	require.Less(t, strings.Count(first, "\n"), 24, "the guest ended before the signal")

	rest, stderr, code := runRunner(t, "", "run", "-v", counter, "--snapshot", snap, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, want, first+rest, "the outputs of the suspended run and of its resumption are the uninterrupted run's")
	_, err = os.Stat(snap)
	require.ErrorIs(t, err, os.ErrNotExist, "the snapshot is removed once the task ends")

	// A file that is not a snapshot is refused before anything runs.
	require.NoError(t, os.WriteFile(snap, []byte("not a snapshot"), 0o600))
	runExits(t, 2, "not a Stint snapshot", "run", "-v", counter, "--snapshot", snap, "--data-dir", dir)

	// In wazero's interrupt mode a loop that calls nothing never calls the
	// interrupt function, so it is never asked to suspend: said at the start.
	require.NoError(t, os.Remove(snap))
	runExits(t, 0, "a loop that calls nothing is never asked to suspend",
		"run", "-v", fixture(t, "noop"), "--snapshot", snap, "--sandbox-interrupt", "wazero", "--data-dir", dir)
}

// TestRunSnapshotSuspendsASleeper: `runner run --snapshot FILE` of the Go
// sleeper (an hour's time.Sleep): SIGINT suspends it in its sleep (exit
// 22, FILE written), not at the end of the stop time's force.
func TestRunSnapshotSuspendsASleeper(t *testing.T) {
	t.Parallel()
	snap := filepath.Join(t.TempDir(), "sleeper.snap")
	p := startRunner(t, nil, "run", "-v", testwasm.GoGuest(t, "sleeper"), "--snapshot", snap, "--data-dir", dataDir(t))
	p.waitLine(t, "sleeper: sleeping")
	suspendWithSIGINT(t, p)
	_, err := os.Stat(snap)
	require.NoError(t, err)
}

// TestRunSnapshotSuspendsAReader: `runner run --snapshot FILE --input -`
// of the Go reader (reads stdin to its end) waiting on a pipe: SIGINT
// suspends it inside its read (exit 22), not never; the same command
// given the same stdin resumes it and reads on from where it was.
func TestRunSnapshotSuspendsAReader(t *testing.T) {
	t.Parallel()
	snap := filepath.Join(t.TempDir(), "reader.snap")
	reader, dir := testwasm.GoGuest(t, "reader"), dataDir(t)
	pr, pw, err := os.Pipe() // a file: exec's Wait would wait for the copy of any other reader
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	p := startRunner(t, pr, "run", "-v", reader, "--input", "-", "--snapshot", snap, "--data-dir", dir)
	p.waitLine(t, "reader: reading")
	_, err = pw.Write([]byte("hello "))
	require.NoError(t, err)
	suspendWithSIGINT(t, p)
	stdout, stderr, code := runRunner(t, "hello world", "run", "-v", reader, "--input", "-", "--snapshot", snap, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "11\n", stdout, "it read every byte once")
	_, err = os.Stat(snap)
	require.ErrorIs(t, err, os.ErrNotExist, "the snapshot is removed once the task ends")
}

// TestRunSnapshotAcrossArchitectures: a snapshot taken by this runner
// (linux/amd64 here) resumes in the linux/arm64 runner under qemu-user
// (Debian's qemu-user-static; .ci/run installs it): the outputs together
// are the uninterrupted run's.
func TestRunSnapshotAcrossArchitectures(t *testing.T) {
	t.Parallel()
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		t.Skip("qemu-aarch64-static is not installed (apt-get install qemu-user-static): the cross-architecture resume is not tested")
	}
	if runtime.GOARCH == "arm64" {
		t.Skip("this runner is arm64 already")
	}
	arm := filepath.Join(t.TempDir(), "runner-arm64")
	out, err := buildRunner(arm, "GOOS=linux", "GOARCH=arm64")
	require.NoError(t, err, string(out))

	counter := fixture(t, "counter")
	dir := dataDir(t)
	want, stderr, code := runRunner(t, "", "run", "-v", counter, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)

	snap := filepath.Join(t.TempDir(), "counter.snap")
	p := startRunner(t, nil, "run", "-v", counter, "--snapshot", snap, "--data-dir", dir)
	rounds := 0
	p.waitMatch(t, "the 20th round", func(l string) bool { // what is left runs emulated: a few rounds
		if l == "round" {
			rounds++
		}
		return rounds == 20
	})
	p.signal(t, syscall.SIGINT)
	require.Equal(t, 22, p.wait(t), p.stderr())
	first := p.stdout.String()

	resume := exec.Command(qemu, arm, "run", "-v", counter, "--snapshot", snap, "--data-dir", t.TempDir())
	resume.Env = append(os.Environ(), "RUNNER_LOG_FORMAT=json")
	var stdout, errOut strings.Builder
	resume.Stdout, resume.Stderr = &stdout, &errOut
	require.NoError(t, resume.Run(), errOut.String())
	require.Equal(t, want, first+stdout.String(), "resumed on arm64, the outputs are the uninterrupted run's")
}

// suspendWithSIGINT sends p (a runner run --snapshot) SIGINT and checks
// that the run ends suspended: exit 22, and its log says so.
func suspendWithSIGINT(t *testing.T, p *proc) {
	t.Helper()
	p.signal(t, syscall.SIGINT)
	require.Equal(t, 22, p.wait(t), p.stderr())
	p.waitLine(t, `"outcome":"suspended"`)
}
