package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/wat"
)

// fixtureFile writes a wat fixture to a file for the runner to read.
func fixtureFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".wasm")
	require.NoError(t, os.WriteFile(p, wat.MustLoad(name), 0o644))
	return p
}

// napInputs is the nap fixture (it checkpoints at its start, then sleeps
// 1 s), a folder in of two inputs, a ("first") and b ("second"), and an
// output folder out (not made).
func napInputs(t *testing.T) (mod, in, a, b, out string) {
	t.Helper()
	mod = fixtureFile(t, "nap")
	in = t.TempDir()
	a, b = filepath.Join(in, "a.txt"), filepath.Join(in, "b.txt")
	require.NoError(t, os.WriteFile(a, []byte("first\n"), 0o644))
	require.NoError(t, os.WriteFile(b, []byte("second\n"), 0o644))
	return mod, in, a, b, filepath.Join(t.TempDir(), "out")
}

// batchInputs writes n small text files to a fresh folder and returns it
// and their contents by name.
func batchInputs(t *testing.T, n int) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("in-%04d.txt", i)
		content := fmt.Sprintf("input %d: the quick brown fox %s\n", i, strings.Repeat("z", i%37))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
		files[name] = content
	}
	return dir, files
}

// outFile is what a test knows of one file of the output folder.
type outFile struct {
	data  string
	ino   uint64
	mtime int64
}

// readOut reads every file of the output folder's tree, by its path
// below it (a failed input's stderr is stderrPrefix+NAME).
func readOut(t *testing.T, dir string) map[string]outFile {
	t.Helper()
	got := map[string]outFile{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(p, &st))
		got[rel] = outFile{data: string(readFile(t, p)), ino: st.Ino, mtime: st.Mtim.Nano()}
		return nil
	})
	if os.IsNotExist(err) {
		return map[string]outFile{}
	}
	require.NoError(t, err)
	return got
}

// requireOutputs checks that out holds exactly one complete, correct
// output per input (upper-cased) and nothing else: no temporary files.
func requireOutputs(t *testing.T, out string, files map[string]string) map[string]outFile {
	t.Helper()
	got := readOut(t, out)
	for name := range got {
		_, ok := files[name]
		require.True(t, ok, "unexpected file %s in the output folder", name)
	}
	for name, content := range files {
		f, ok := got[name]
		require.True(t, ok, "no output for %s", name)
		require.Equal(t, strings.ToUpper(content), f.data, "output of %s", name)
	}
	return got
}

// partialOutputs checks the outputs a stopped batch wrote: each complete
// and correct; temporary files (tempPrefix) only if allowTemp; failures'
// stderr (stderrPrefix) left out.
func partialOutputs(t *testing.T, out string, files map[string]string, allowTemp bool) map[string]outFile {
	t.Helper()
	got := readOut(t, out)
	done := map[string]outFile{}
	for name, f := range got {
		if strings.HasPrefix(name, tempPrefix) {
			require.True(t, allowTemp, "temporary file %s left after a graceful stop", name)
			continue
		}
		if strings.HasPrefix(name, stderrPrefix) {
			continue // a failed input's stderr
		}
		content, ok := files[name]
		require.True(t, ok, "unexpected file %s", name)
		require.Equal(t, strings.ToUpper(content), f.data, "output of %s", name)
		done[name] = f
	}
	return done
}

func batchSummaryOf(t *testing.T, stdout string) batchSummary {
	t.Helper()
	var s batchSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	return s
}

// waitOutputs waits until out holds at least n outputs (or the batch
// exits).
func waitOutputs(t *testing.T, p *proc, out string, n int) {
	t.Helper()
	testutil.WaitFor(t, fmt.Sprintf("%d outputs in %s (or the batch to exit)", n, out), func() bool {
		ents, _ := os.ReadDir(out)
		count := 0
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				count++
			}
		}
		if count >= n {
			return true
		}
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	})
}

func TestBatchEveryInputAndAFailure(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in, files := batchInputs(t, 20)
	require.NoError(t, os.WriteFile(filepath.Join(in, "binary.bin"), []byte("not\x00text"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(in, ".hidden"), []byte("skipped"), 0o644))
	out := filepath.Join(t.TempDir(), "out")
	data := dataDir(t)

	stdout, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", data, "--json")
	require.Equal(t, exitBatchFailed, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Equal(t, 21, s.Total)
	require.Equal(t, 20, s.Succeeded)
	require.Equal(t, 1, s.Failed)
	require.Len(t, s.Failures, 1)
	f := s.Failures[0]
	require.Equal(t, filepath.Join(in, "binary.bin"), f.Input)
	require.Equal(t, "failed", f.Outcome)
	require.Equal(t, 1, f.ExitCode)
	require.Contains(t, f.StderrTail, "not text")
	first := readOut(t, out)
	require.Contains(t, first[stderrPrefix+"binary.bin"].data, "upper: the input is not text")
	require.Len(t, first, 21, "20 outputs and binary.bin's stderr")
	for name, content := range files {
		require.Equal(t, strings.ToUpper(content), first[name].data, name)
	}

	// Again: the succeeded inputs are skipped, the failed one retried.
	stdout, stderr, code = runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", data, "--json")
	require.Equal(t, exitBatchFailed, code, stderr)
	s = batchSummaryOf(t, stdout)
	require.Equal(t, 20, s.AlreadyDone)
	require.Equal(t, 0, s.Succeeded)
	require.Equal(t, 1, s.Failed)
	again := readOut(t, out)
	for name, f := range first {
		if name != stderrPrefix+"binary.bin" {
			require.Equal(t, f, again[name], "%s was written again", name)
		}
	}

	// A fixed input runs again and gets its output; a stale stderr goes.
	require.NoError(t, os.WriteFile(filepath.Join(in, "binary.bin"), []byte("now text"), 0o644))
	stdout, stderr, code = runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", data)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "21 inputs: 1 succeeded, 20 already done, 0 failed")
	files["binary.bin"] = "now text"
	requireOutputs(t, out, files)
}

// testBatchStopResume runs n inputs, stops the batch (stop) once after
// outputs exist (or, with after 0, once the first chunk of inputs is
// submitted), and runs it again: every output present once, correct and
// complete, no temporary file left, and the outputs written before the
// stop untouched.
func testBatchStopResume(t *testing.T, n, after int, stop func(*proc), wantCodes []int, allowTemp bool) {
	mod := fixtureFile(t, "upper")
	in, files := batchInputs(t, n)
	out := filepath.Join(t.TempDir(), "out")
	data := dataDir(t)
	args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data, "-j", "2", "--json"}

	var p *proc
	if after > 0 {
		p = startRunner(t, nil, args...)
		waitOutputs(t, p, out, after)
	} else {
		p = startRunner(t, nil, append(args, "--log-level", "debug")...)
		p.waitLine(t, "batch inputs submitted", `"submitted":500,`)
	}
	stop(p)
	code := p.wait(t)
	require.Contains(t, wantCodes, code, p.stderr())
	before := partialOutputs(t, out, files, allowTemp)
	t.Logf("stopped after %d outputs, exit %d", len(before), code)
	if code == exitBatchStopped {
		s := batchSummaryOf(t, p.stdout.String())
		require.True(t, s.Stopped)
		require.Equal(t, n, s.Succeeded+s.Left)
		if strings.Contains(p.stderr(), "submission stopped") {
			t.Logf("the stop came while the batch was submitting")
		}
		require.Contains(t, p.stderr(), "To resume, run the same command again")
	}

	stdout, stderr, code := runRunner(t, "", args...)
	require.Equal(t, 0, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Equal(t, n, s.Succeeded+s.AlreadyDone)
	require.GreaterOrEqual(t, s.AlreadyDone, len(before))
	final := requireOutputs(t, out, files)
	for name, f := range before {
		require.Equal(t, f, final[name], "%s, written before the stop, was written again", name)
	}
}

func TestBatchSIGTERMThenResume(t *testing.T) {
	t.Parallel()
	testBatchStopResume(t, 500, 1+rand.IntN(400), func(p *proc) { p.signal(t, syscall.SIGTERM) }, []int{exitBatchStopped, 0}, false)
}

func TestBatchKill9ThenResume(t *testing.T) {
	t.Parallel()
	testBatchStopResume(t, 500, 1+rand.IntN(400), func(p *proc) { p.signal(t, syscall.SIGKILL) }, []int{-1, 0}, true)
}

// A first run submits its inputs while its pool runs (batch_submit.go):
// 2,000 inputs are four chunks, and the batch is stopped once the first
// is stored, most likely while the others are. A stop then ends the
// submission between chunks and loses nothing; a kill leaves what was
// stored for the next run, which resumes it (submitting it all first).
func TestBatchStopWhileSubmittingThenResume(t *testing.T) {
	t.Parallel()
	t.Run("SIGTERM", func(t *testing.T) {
		t.Parallel()
		testBatchStopResume(t, 2000, 0, func(p *proc) { p.signal(t, syscall.SIGTERM) }, []int{exitBatchStopped, 0}, false)
	})
	t.Run("SIGKILL", func(t *testing.T) {
		t.Parallel()
		testBatchStopResume(t, 2000, 0, func(p *proc) { p.signal(t, syscall.SIGKILL) }, []int{-1, 0}, true)
	})
}

// Interrupted inputs continue from their checkpoints at the next run.
func TestBatchResumesFromCheckpoints(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "resume")
	in, files := batchInputs(t, 2)
	out := filepath.Join(t.TempDir(), "out")
	data := dataDir(t)
	args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data, "-j", "2", "--json"}

	p := startRunner(t, nil, append(args, "--log-level", "debug", "--shutdown-drain", "100ms")...)
	for name := range files {
		p.waitLine(t, "input checkpointed", name)
	}
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, exitBatchStopped, p.wait(t), p.stderr())
	s := batchSummaryOf(t, p.stdout.String())
	require.Equal(t, 2, s.Left)
	require.Equal(t, 2, s.Interrupted)
	require.Empty(t, readOut(t, out))

	stdout, stderr, code := runRunner(t, "", args...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 2, batchSummaryOf(t, stdout).Succeeded)
	got := readOut(t, out)
	require.Len(t, got, 2)
	for name := range files {
		require.Equal(t, "resumed from cp", got[name].data)
	}
}

// The checks before any work: a clear error, exit 2, nothing written.
func TestBatchChecksBeforeAnyWork(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in, _ := batchInputs(t, 3)
	empty := t.TempDir()
	aFile := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(aFile, []byte("x"), 0o644))
	bad := filepath.Join(t.TempDir(), "bad.wasm")
	require.NoError(t, os.WriteFile(bad, []byte("\x00asm\x01\x00\x00\x00garbage"), 0o644))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"input folder missing", []string{mod, "--in", filepath.Join(empty, "nope")}, "no such folder"},
		{"input folder empty", []string{mod, "--in", empty}, "no input files"},
		{"glob matches nothing", []string{mod, "--in", filepath.Join(in, "*.none")}, "no input files"},
		{"output is a file", []string{mod, "--in", in, "--out", aFile}, "is not a folder"},
		{"output under a file", []string{mod, "--in", in, "--out", filepath.Join(aFile, "out")}, "is not a folder"},
		{"output is the input folder", []string{mod, "--in", in, "--out", in}, "would overwrite them"},
		{"input over limits.max_input", []string{mod, "--in", in, "--limits-max-input", "16B"}, "larger than limits.max_input"},
		{"module does not compile", []string{bad, "--in", in}, "does not compile"},
		{"module missing", []string{filepath.Join(empty, "none.wasm"), "--in", in}, "module"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"batch"}, c.args...)
			if !containsArg(args, "--out") {
				args = append(args, "--out", out)
			}
			args = append(args, "--data-dir", dataDir(t))
			_, stderr, code := runRunner(t, "", args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, c.want)
			_, err := os.Stat(out)
			require.True(t, os.IsNotExist(err), "the output folder was created")
			require.NoFileExists(t, filepath.Join(aFile, "out"))
		})
	}
	// A read-only output folder (not for root, who may write anyway).
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		require.NoError(t, os.Chmod(ro, 0o500))
		_, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", ro, "--data-dir", dataDir(t))
		require.Equal(t, exitUsage, code, stderr)
		require.Contains(t, stderr, "not writable")
		ents, err := os.ReadDir(ro)
		require.NoError(t, err)
		require.Empty(t, ents)
	}
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// The progress: a log line every few seconds when stderr is not a
// terminal, and the help documents the exit codes.
func TestBatchHelpAndExitCodes(t *testing.T) {
	t.Parallel()
	stdout, _, code := runRunner(t, "", "batch", "--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"75  stopped by a signal", "7  some inputs failed", "--in", "--out", "-j, --jobs"} {
		require.Contains(t, stdout, want)
	}
	var buf bytes.Buffer
	buf.WriteString(stdout)
	require.NotContains(t, buf.String(), "--http-addr")
	// A batch user's flags first; the runner's operational keys after,
	// under a heading of their own.
	ops := strings.Index(stdout, "Runner configuration (operational keys")
	require.Positive(t, ops)
	for _, own := range []string{"--files-from", "--output-name", "--halt", "--dry-run", "--joblog", "--skip-failed", "--timeout"} {
		require.Less(t, strings.Index(stdout, own), ops, own)
	}
	for _, key := range []string{"--lease", "--owner", "--shutdown-hooks", "--limits-max-timeout", "--sandbox-interrupt"} {
		require.Greater(t, strings.Index(stdout, key), ops, key)
	}
}

// A queued task of the batch's queue that is none of its inputs now (a
// file changed or removed since an earlier run) is cancelled, not run;
// with no such task the batch counts instead of listing, and cancels
// nothing.
func TestBatchCancelsStrays(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in, files := batchInputs(t, 3)
	out := filepath.Join(t.TempDir(), "out")
	data := dataDir(t)
	outAbs, err := filepath.Abs(out)
	require.NoError(t, err)
	stray, stderr, code := runRunner(t, "", "submit", mod, "--data-dir", data, "--queue", batchQueue(outAbs),
		"--input", filepath.Join(in, "in-0000.txt"))
	require.Equal(t, 0, code, stderr)
	stray = strings.TrimSpace(stray)

	args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data, "--json"}
	stdout, stderr, code := runRunner(t, "", args...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 3, batchSummaryOf(t, stdout).Succeeded)
	require.Contains(t, stderr, "cancelled the queued tasks of files changed or removed since the last run")
	requireOutputs(t, out, files)
	show, stderr, code := runRunner(t, "", "tasks", "show", stray, "--data-dir", data, "--json")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, show, `"state": "cancelled"`)

	// A changed file: its earlier task has succeeded (not a stray); the
	// new one runs.
	require.NoError(t, os.WriteFile(filepath.Join(in, "in-0001.txt"), []byte("changed\n"), 0o644))
	files["in-0001.txt"] = "changed\n"
	stdout, stderr, code = runRunner(t, "", args...)
	require.Equal(t, 0, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Equal(t, 1, s.Succeeded)
	require.Equal(t, 2, s.AlreadyDone)
	require.NotContains(t, stderr, "cancelled the queued tasks")
	requireOutputs(t, out, files)
}

// An input changed between submit and its attempt: an input the batch
// holds in memory runs with the content the batch read, the content its
// task is keyed by; one it does not hold (over its budget, here 0) is read
// again and refused (input_unavailable, the reason says why). Either way
// the next run processes the new content.
func TestBatchInputChangedBeforeItsAttempt(t *testing.T) {
	t.Parallel()
	for _, held := range []bool{true, false} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			t.Parallel()
			mod, in, a, b, out := napInputs(t)
			data := dataDir(t)
			args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data, "-j", "1", "--json"}

			cmd := exec.Command(runnerBin, append(args, "--log-level", "debug")...)
			if !held {
				cmd.Env = append(os.Environ(), "STINT_TEST_BATCH_HOLD=0")
			}
			p := startCmd(t, cmd, nil)
			p.waitLine(t, "input checkpointed", a) // a runs (one worker): b has not started
			require.NoError(t, os.WriteFile(b, []byte("second, changed\n"), 0o644))
			code := p.wait(t)
			s := batchSummaryOf(t, p.stdout.String())
			require.Equal(t, "nap\n", readOut(t, out)["a.txt"].data)
			if held {
				require.Equal(t, 0, code, p.stderr())
				require.Equal(t, 2, s.Succeeded)
				require.Equal(t, "nap\n", readOut(t, out)["b.txt"].data)
			} else {
				require.Equal(t, exitBatchFailed, code, p.stderr())
				require.Equal(t, 1, s.Succeeded)
				require.Len(t, s.Failures, 1)
				require.Equal(t, b, s.Failures[0].Input)
				require.Equal(t, "input_unavailable", s.Failures[0].Outcome)
				require.Contains(t, s.Failures[0].Reason, "changed since the batch read it")
			}

			stdout, stderr, code := runRunner(t, "", args...)
			require.Equal(t, 0, code, stderr)
			s = batchSummaryOf(t, stdout)
			require.Equal(t, 1, s.Succeeded, "b's new content is a new task")
			require.Equal(t, 1, s.AlreadyDone)
			got := readOut(t, out)
			require.Equal(t, "nap\n", got["b.txt"].data)
			require.NotContains(t, got, stderrPrefix+"b.txt", "the stale stderr file is removed")
		})
	}
}
