package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// failureOf is the summary's failure of the input path.
func failureOf(t *testing.T, s batchSummary, path string) batchFailure {
	t.Helper()
	for _, f := range s.Failures {
		if f.Input == path {
			return f
		}
	}
	t.Fatalf("no failure for %s in %+v", path, s.Failures)
	return batchFailure{}
}

// permOf is the permission bits of the file at path.
func permOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "%s: %v", path, fi.Mode())
	return fi.Mode().Perm()
}

// runner batch follows no link in --in: a link to a secret outside it,
// and one to a file inside it, each fail saying why, and nothing of the
// secret reaches the output folder; a link to a folder is skipped, as a
// folder is. The other inputs run, and each output's mode is never wider
// than its input's.
func TestBatchFollowsNoLinks(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	secret := filepath.Join(t.TempDir(), "shadow")
	require.NoError(t, os.WriteFile(secret, []byte("root:secret-hash\n"), 0o600))
	in := t.TempDir()
	a, pub := filepath.Join(in, "a.txt"), filepath.Join(in, "pub.txt")
	require.NoError(t, os.WriteFile(a, []byte("private\n"), 0o600))
	require.NoError(t, os.WriteFile(pub, []byte("public\n"), 0o644))
	require.NoError(t, os.Chmod(pub, 0o644)) // whatever the umask
	require.NoError(t, os.Symlink(secret, filepath.Join(in, "shadow.txt")))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(in, "inside.txt")))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(in, "folder")))
	out := filepath.Join(t.TempDir(), "out")

	stdout, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t), "--json")
	require.Equal(t, exitBatchFailed, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Equal(t, 4, s.Total, "a.txt, pub.txt and the two links to files")
	require.Equal(t, 2, s.Succeeded)
	require.Equal(t, 2, s.Failed)
	for _, name := range []string{"shadow.txt", "inside.txt"} {
		f := failureOf(t, s, filepath.Join(in, name))
		require.Equal(t, "unreadable", f.Outcome)
		require.Contains(t, f.Reason, "a symbolic link: runner batch follows no links")
	}
	got := readOut(t, out)
	require.Len(t, got, 4, "a.txt, pub.txt and the two links' stderr: %v", got)
	require.Equal(t, "PRIVATE\n", got["a.txt"].data)
	require.Equal(t, "PUBLIC\n", got["pub.txt"].data)
	for name, f := range got {
		require.NotContains(t, strings.ToLower(f.data), "secret", name)
	}
	require.Zero(t, permOf(t, filepath.Join(out, "a.txt"))&0o077, "a private input's output is private")
	require.Zero(t, permOf(t, filepath.Join(out, "pub.txt"))&^0o644, "never wider than the input's 0644")
	require.Zero(t, permOf(t, filepath.Join(out, stderrPrefix+"shadow.txt"))&0o077, "a link's stderr file: 0600")

	// A glob: a folder it matches below its fixed part that is a link is
	// not followed either.
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "ok"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "ok", "b.txt"), []byte("bee\n"), 0o644))
	elsewhere := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "c.txt"), []byte("secret\n"), 0o600))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, "evil")))
	out2 := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code = runRunner(t, "", "batch", mod, "--in", filepath.Join(root, "*", "*.txt"), "--out", out2, "--data-dir", dataDir(t), "--json")
	require.Equal(t, exitBatchFailed, code, stderr)
	s = batchSummaryOf(t, stdout)
	require.Equal(t, 1, s.Succeeded)
	f := failureOf(t, s, filepath.Join(root, "evil", "c.txt"))
	require.Contains(t, f.Reason, "a symbolic link: runner batch follows no links")
	// A glob's outputs mirror the tree below its fixed part.
	require.Equal(t, "BEE\n", readOut(t, out2)["ok/b.txt"].data)
	require.Contains(t, readOut(t, out2), stderrPrefix+"evil/c.txt")
	require.Empty(t, readOut(t, out2)[stderrPrefix+"evil/c.txt"].data)
}

// An --out that is a link to --in is the folder of the inputs, whatever
// its path: refused before any work, the inputs untouched.
func TestBatchOutLinkedToIn(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in, files := batchInputs(t, 3)
	link := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Symlink(in, link))
	for _, args := range [][]string{
		{"--in", in, "--out", link},
		{"--in", filepath.Join(in, "*.txt"), "--out", link},
		{"--in", filepath.Join(in, "in-0001.txt"), "--out", link},
		{"--in", link, "--out", in},
	} {
		_, stderr, code := runRunner(t, "", append(append([]string{"batch", mod}, args...), "--data-dir", dataDir(t))...)
		require.Equal(t, exitUsage, code, stderr)
		require.Contains(t, stderr, "is the folder of the inputs", args)
		got := readOut(t, in)
		require.Len(t, got, len(files))
		for name, content := range files {
			require.Equal(t, content, got[name].data, "%s was overwritten", name)
		}
	}
}

// fifoFailure puts a FIFO in the place of the input at path while the
// batch p runs, waits for p to end failed with succeeded inputs done, and
// returns path's failure, whose reason says it is not a regular file.
func fifoFailure(t *testing.T, p *proc, path string, succeeded int) batchFailure {
	t.Helper()
	require.NoError(t, os.Remove(path))
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	require.Equal(t, exitBatchFailed, p.wait(t), p.stderr())
	s := batchSummaryOf(t, p.stdout.String())
	require.Equal(t, succeeded, s.Succeeded)
	f := failureOf(t, s, path)
	require.Contains(t, f.Reason, "not a regular file")
	return f
}

// A FIFO put in the place of an input after the batch listed it fails
// that input at once, saying why; the batch does not hang on it. First
// between the listing and the read that hashes it (2,500 inputs: the
// last chunk of 500 is read only after the second is stored), then
// between that read and its attempt's (no input held in memory, so each
// attempt reads its file again).
func TestBatchFIFOInPlaceOfAnInput(t *testing.T) {
	t.Parallel()
	t.Run("before it is read", func(t *testing.T) {
		t.Parallel()
		mod := fixtureFile(t, "upper")
		in, files := batchInputs(t, 2500)
		last := filepath.Join(in, "in-2499.txt")
		out := filepath.Join(t.TempDir(), "out")
		p := startRunner(t, nil, "batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t), "--json", "--log-level", "debug")
		p.waitLine(t, "batch inputs submitted", `"submitted":500,`)
		f := fifoFailure(t, p, last, 2499)
		require.Equal(t, "unreadable", f.Outcome)
		delete(files, "in-2499.txt")
		got := readOut(t, out)
		require.Contains(t, got, stderrPrefix+"in-2499.txt")
		require.NotContains(t, got, "in-2499.txt")
		require.Len(t, got, len(files)+1)
	})
	t.Run("before its attempt reads it again", func(t *testing.T) {
		t.Parallel()
		mod, in, a, b, out := napInputs(t)
		cmd := exec.Command(runnerBin, "batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t), "-j", "1", "--json", "--log-level", "debug")
		cmd.Env = append(os.Environ(), "STINT_TEST_BATCH_HOLD=0")
		p := startCmd(t, cmd, nil)
		p.waitLine(t, "input checkpointed", a) // a runs (one worker): b has not started
		f := fifoFailure(t, p, b, 1)
		require.Equal(t, "input_unavailable", f.Outcome)
	})
}

// A file name with escape sequences is shown escaped in the human
// summary (it cannot clear the screen or forge a line), and exactly in
// the JSON one.
func TestBatchEscapesFileNames(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in := t.TempDir()
	evil := "evil\x1b[2J\x1b]0;pwned\x07\rok.bin"
	require.NoError(t, os.WriteFile(filepath.Join(in, evil), []byte("not\x00text"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(in, "good.txt"), []byte("good\n"), 0o644))
	out := filepath.Join(t.TempDir(), "out")
	data := dataDir(t)

	stdout, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", data)
	require.Equal(t, exitBatchFailed, code, stderr)
	require.NotContains(t, stdout, "\x1b")
	require.NotContains(t, stdout, "\x07")
	require.NotContains(t, stdout, "\r")
	require.Contains(t, stdout, `evil\x1b[2J\x1b]0;pwned\x07\rok.bin (failed: exit code 1)`)
	require.Contains(t, stdout, `.stint-batch/stderr/evil\x1b[2J\x1b]0;pwned\x07\rok.bin):`)
	require.Contains(t, stdout, "upper: the input is not text")

	stdout, stderr, code = runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", data, "--json")
	require.Equal(t, exitBatchFailed, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Equal(t, filepath.Join(in, evil), failureOf(t, s, filepath.Join(in, evil)).Input, "exact in JSON")
}
