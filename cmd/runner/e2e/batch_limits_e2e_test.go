package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// limitHints are what every refusal over a limit names: the flag and the
// configuration key that raise it (issue 41, item 11).
var limitHints = map[string]string{
	"stdout": "raise it with --stdout-cap or limits.stdout",
	"stderr": "raise it with --stderr-cap or limits.stderr",
	"memory": "raise it with --memory or limits.memory",
	"time":   "raise it with --timeout or limits.timeout",
	"work":   "raise it with --work or limits.work",
}

// limitInputs writes n text inputs to a fresh folder, every third 3000
// bytes long, the others 100, and returns it, their contents by name and
// the names of the long ones.
func limitInputs(t *testing.T, n int) (string, map[string]string, map[string]bool) {
	t.Helper()
	in := t.TempDir()
	files := map[string]string{}
	big := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("in-%04d.txt", i)
		size := 100
		if i%3 == 0 {
			size, big[name] = 3000, true
		}
		files[name] = strings.Repeat(string(rune('a'+i%26)), size) + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(in, name), []byte(files[name]), 0o644))
	}
	return in, files, big
}

// A rerun's limits apply to the inputs it tries again: inputs over a
// 1 KiB --stdout-cap fail (output_limit, the reason naming the flag and
// the key), and the same command with --stdout-cap 8KiB runs them again
// under 8 KiB, where they succeed, the others left as they were; so do
// the inputs a halted run left queued, never run (issue 41, item 10).
func TestBatchRerunAppliesNewLimits(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		in, files, big := limitInputs(t, 30)
		out := filepath.Join(t.TempDir(), "out")
		args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t), "--json", "-j", "2"}
		stdout, stderr, code := runRunner(t, "", append(args, "--stdout-cap", "1KiB")...)
		require.Equal(t, exitBatchFailed, code, stderr)
		s := batchSummaryOf(t, stdout)
		require.Equal(t, len(big), s.Failed)
		for _, f := range s.Failures {
			require.True(t, big[filepath.Base(f.Input)], f.Input)
			require.Equal(t, "output_limit", f.Outcome)
			require.Contains(t, f.Reason, "stdout over its limit of 1024 bytes; "+limitHints["stdout"]+" (at most limits.max_stdout)")
		}

		stdout, stderr, code = runRunner(t, "", append(args, "--stdout-cap", "8KiB")...)
		require.Equal(t, 0, code, "the failed inputs run again under 8 KiB: %s", stderr)
		s = batchSummaryOf(t, stdout)
		require.Equal(t, len(big), s.Succeeded, "the inputs that failed")
		require.Equal(t, len(files)-len(big), s.AlreadyDone)
		require.Contains(t, stderr, "inputs of an earlier run run with this run's limits")
		requireOutputs(t, out, files)
	})
	t.Run("left queued", func(t *testing.T) {
		t.Parallel()
		// A first run that stores every input's task, queued, and runs
		// none: its queue is paused (and holds a stray task, so that the
		// batch stores its tasks queued before its pool starts, instead of
		// claimed), and it is stopped once it runs. The tasks wait
		// queued, stored with its limits.
		in, files, _ := limitInputs(t, 60)
		out := filepath.Join(t.TempDir(), "out")
		data := dataDir(t)
		queue := batchQueue(out)
		_, stderr, code := runRunner(t, "", "submit", mod, "--queue", queue, "--data-dir", data)
		require.Equal(t, 0, code, stderr)
		_, stderr, code = runRunner(t, "", "tasks", "pause", queue, "--data-dir", data)
		require.Equal(t, 0, code, stderr)
		args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data, "--json", "-j", "2"}
		p := startRunner(t, nil, append(args, "--stdout-cap", "1KiB")...)
		p.waitLine(t, "batch progress") // logged once it runs, and handles signals (5 s)
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, exitBatchStopped, p.wait(t), p.stderr())
		require.Equal(t, len(files), batchSummaryOf(t, p.stdout.String()).Left)
		s := openTestStore(t, data)
		queued, err := s.List(context.Background(), tasks.ListFilter{State: tasks.StateQueued, Queue: queue, Limit: 1000})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.Len(t, queued, len(files))
		for _, tk := range queued {
			require.Equal(t, int64(1<<10), tk.Limits.Stdout)
		}
		_, stderr, code = runRunner(t, "", "tasks", "resume", queue, "--data-dir", data)
		require.Equal(t, 0, code, stderr)

		stdout, stderr, code := runRunner(t, "", append(args, "--stdout-cap", "8KiB")...)
		require.Equal(t, 0, code, "every input runs under 8 KiB: %s\n%s", stdout, stderr)
		require.Equal(t, len(files), batchSummaryOf(t, stdout).Succeeded)
		requireOutputs(t, out, files)
	})
}

// A batch's outputs are files: by default a batch's stdout cap is
// limits.max_stdout (64 MiB), not limits.stdout's 1 MiB, so a 2 MiB
// output is written; a limits.stdout set explicitly still applies, and
// its refusal names the flag and the key (issue 41, item 11).
func TestBatchDefaultOutputCapFitsFiles(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in := t.TempDir()
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20) + "\n"
	files := map[string]string{
		"big.txt":   strings.Repeat(line, (2<<20)/len(line)+1),
		"small.txt": line,
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(in, name), []byte(content), 0o644))
	}
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t), "--json")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	requireOutputs(t, out, files)

	out = filepath.Join(t.TempDir(), "out")
	stdout, stderr, code = runRunner(t, "", "batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t), "--json",
		"--limits-stdout", "1MiB")
	require.Equal(t, exitBatchFailed, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Len(t, s.Failures, 1)
	require.Equal(t, "output_limit", s.Failures[0].Outcome)
	require.Contains(t, s.Failures[0].Reason, "stdout over its limit of 1048576 bytes; "+limitHints["stdout"])
}

// Every refusal over a limit, in runner run, runner batch and a task run
// by runner serve (runner submit --wait), names the flag and the
// configuration key that raise it (issue 41, item 11).
func TestBatchLimitRefusalsNameFlagAndKey(t *testing.T) {
	t.Parallel()
	text := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(text, []byte("some text to work on\n"), 0o644))
	cases := []struct {
		name, fixture, outcome string
		flags                  []string
	}{
		{"stdout", "flood", "output_limit", []string{"--stdout-cap", "8KiB"}},
		{"stderr", "flood_stderr", "output_limit", []string{"--stderr-cap", "8KiB"}},
		{"memory", "memgrow", "memory_limit", []string{"--memory", "2MiB"}},
		{"time", "loop", "timed_out", []string{"--timeout", "200ms"}},
		{"work", "work", "work_limit", []string{"--work", "1000"}},
	}
	serveDir := dataDir(t)
	startServe(t, serveDir)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			mod := fixtureFile(t, c.fixture)
			hint := limitHints[c.name]

			_, stderr, code := runRunner(t, "", append([]string{"run", "-v", mod, "--input", text, "--data-dir", dataDir(t)}, c.flags...)...)
			require.NotEqual(t, 0, code)
			require.Contains(t, stderr, `"outcome":"`+c.outcome+`"`)
			require.Contains(t, stderr, hint, "runner run")

			in := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(in, "a.txt"), []byte("some text to work on\n"), 0o644))
			stdout, stderr, code := runRunner(t, "", append([]string{"batch", mod, "--in", in, "--out", filepath.Join(t.TempDir(), "out"),
				"--data-dir", dataDir(t), "--json"}, c.flags...)...)
			require.Equal(t, exitBatchFailed, code, stderr)
			s := batchSummaryOf(t, stdout)
			require.Len(t, s.Failures, 1)
			require.Equal(t, c.outcome, s.Failures[0].Outcome)
			require.Contains(t, s.Failures[0].Reason, hint, "runner batch")

			_, stderr, code = runRunner(t, "", append([]string{"submit", mod, "--input", text, "--data-dir", serveDir,
				"--max-attempts", "1", "--wait"}, c.flags...)...)
			require.Equal(t, exitTaskDead, code, stderr)
			require.Contains(t, stderr, hint, "runner submit --wait, run by runner serve")
		})
	}
}

// jobLogSuccesses is, for each input of a --joblog file, how many success
// lines (Exitval 0, Signal 0) it has.
func jobLogSuccesses(t *testing.T, path string) map[string]int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(readFile(t, path))), "\n")
	require.Equal(t, "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand", lines[0])
	got := map[string]int{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		require.Len(t, f, 9, "%q", l)
		_, in, ok := strings.Cut(f[8], " < ")
		require.True(t, ok, l)
		if f[6] == "0" && f[7] == "0" {
			got[filepath.Base(in)]++
		}
	}
	return got
}

// Every input done, in this run or an earlier one, has its --joblog line
// (issue 41, item 12): lines lost between an input's end and its line
// (here removed from the file, its last line cut short as a write cut by
// a kill would leave it) are written by the next run, once each, and so
// are the lines of a first run made without --joblog; after a kill -9,
// the resumed run leaves a success line for every input, so `parallel
// --resume` would run none again.
func TestBatchJobLogEveryInputDone(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "upper")
	in, files := batchInputs(t, 40)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	t.Run("lines lost", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "out")
		data := dataDir(t)
		joblog := filepath.Join(t.TempDir(), "joblog")
		args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data, "--joblog", joblog}
		_, stderr, code := runRunner(t, "", args...)
		require.Equal(t, 0, code, stderr)
		lines := strings.Split(strings.TrimSpace(string(readFile(t, joblog))), "\n")
		require.Len(t, lines, 1+len(files))
		// Keep the header and 25 lines; cut the last short.
		kept := append([]string{lines[0]}, lines[1:26]...)
		last := kept[len(kept)-1]
		kept[len(kept)-1] = last[:len(last)/2]
		require.NoError(t, os.WriteFile(joblog, []byte(strings.Join(kept, "\n")), 0o644))

		_, stderr, code = runRunner(t, "", args...)
		require.Equal(t, 0, code, stderr)
		got := jobLogSuccesses(t, joblog)
		for _, name := range names {
			require.Equal(t, 1, got[name], "success lines of %s:\n%s", name, readFile(t, joblog))
		}
		_, stderr, code = runRunner(t, "", args...)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, got, jobLogSuccesses(t, joblog), "a third run adds no line")
	})
	t.Run("first run without --joblog", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "out")
		data := dataDir(t)
		args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data}
		_, stderr, code := runRunner(t, "", args...)
		require.Equal(t, 0, code, stderr)
		joblog := filepath.Join(t.TempDir(), "joblog")
		_, stderr, code = runRunner(t, "", append(args, "--joblog", joblog)...)
		require.Equal(t, 0, code, stderr)
		got := jobLogSuccesses(t, joblog)
		require.Len(t, got, len(files))
		for _, f := range strings.Split(strings.TrimSpace(string(readFile(t, joblog))), "\n")[1:] {
			col := strings.Split(f, "\t")
			require.NotEqual(t, "0.000", col[2], "the Starttime of its earlier attempt: %s", f)
			require.NotEqual(t, "0", col[5], "the bytes of its output: %s", f)
		}
	})
	t.Run("kill -9", func(t *testing.T) {
		t.Parallel()
		in, files := batchInputs(t, 500)
		out := filepath.Join(t.TempDir(), "out")
		data := dataDir(t)
		joblog := filepath.Join(t.TempDir(), "joblog")
		args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", data, "--joblog", joblog, "-j", "2"}
		p := startRunner(t, nil, args...)
		waitOutputs(t, p, out, 1+rand.IntN(400))
		p.kill(t)
		_, stderr, code := runRunner(t, "", args...)
		require.Equal(t, 0, code, stderr)
		got := jobLogSuccesses(t, joblog)
		for name := range files {
			require.Equal(t, 1, got[name], "success lines of %s", name)
		}
	})
}
