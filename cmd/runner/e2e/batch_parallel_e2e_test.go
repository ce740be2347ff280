package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
// GNU parallel's format, with 13 (timed out) for an attempt that ran into
// its timeout and 12 for one --halt now forced.
func TestBatchHaltAndJobLog(t *testing.T) {
	t.Parallel()
	mod := fixtureFile(t, "loop") // never ends: each input times out
	in, _ := batchInputs(t, 20)
	out := filepath.Join(t.TempDir(), "out")
	joblog := filepath.Join(t.TempDir(), "joblog")
	halts := "now,fail=1 soon,fail=50%"
	for _, halt := range strings.Fields(halts) {
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
		switch f[6] {
		case "13": // timed_out's exit code
			require.GreaterOrEqual(t, rt, 0.09, "ran until its timeout")
		case "12": // forced by --halt now: not done, no signal
			require.Contains(t, halts, "now")
		default:
			t.Fatalf("Exitval %s: want 13 (timed out) or 12 (forced by --halt now): %s", f[6], l)
		}
		require.Equal(t, "0", f[7], "no signal stopped it")
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

// jobLogLines reads a --joblog file: its fields by the input each line
// names (the Command after " < ").
func jobLogLines(t *testing.T, path string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(readFile(t, path))), "\n")
	require.Equal(t, "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand", lines[0])
	got := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		require.Len(t, f, 9, l)
		_, in, ok := strings.Cut(f[8], " < ")
		require.True(t, ok, l)
		got[filepath.Base(in)] = f
	}
	return got
}

// --joblog's Exitval and Signal for each way an input can end, with real
// guests: the guest's own exit code, else runner run's exit code for the
// outcome (exitcodes.go), and Signal only when a signal stopped the batch.
func TestBatchJobLogOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, fixture string
		flags         []string
		exitval       string
	}{
		{"succeeded", "upper", nil, "0"},
		{"exit 3", "exit3", nil, "3"},
		{"trapped", "trap", nil, "11"},
		{"timed out", "loop", []string{"--timeout", "200ms"}, "13"},
		{"work limit", "work", []string{"--limits-work", "1000"}, "18"},
		{"memory limit", "memgrow", []string{"--memory", "2MiB"}, "14"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(in, "a.txt"), []byte("some text\n"), 0o644))
			// A link is never followed: the input cannot be read.
			require.NoError(t, os.Symlink("a.txt", filepath.Join(in, "link.txt")))
			joblog := filepath.Join(t.TempDir(), "joblog")
			_, stderr, code := runRunner(t, "", append([]string{"batch", fixtureFile(t, c.fixture), "--in", in,
				"--out", filepath.Join(t.TempDir(), "out"), "--data-dir", dataDir(t), "--joblog", joblog}, c.flags...)...)
			require.Equal(t, exitBatchFailed, code, stderr) // the link fails in every case
			got := jobLogLines(t, joblog)
			require.Len(t, got, 2)
			require.Equal(t, c.exitval, got["a.txt"][6], "Exitval of %s", c.name)
			require.Equal(t, "0", got["a.txt"][7], "no signal")
			require.Equal(t, "21", got["link.txt"][6], "an input that could not be read: input_unavailable's code")
			require.Equal(t, "0", got["link.txt"][7])
		})
	}

	// Stopped by a signal: the input is not done (the next run runs it),
	// and its line says which signal stopped it.
	signalled := []struct {
		name, fixture string
		signals       []syscall.Signal
		exitval, sig  string
	}{
		// Ctrl-C: the guest is asked to stop and exits 75 (interrupted).
		{"SIGINT, interrupted", "stop_aware", []syscall.Signal{syscall.SIGINT}, "75", "2"},
		// A guest that ignores the request is forced by the second signal.
		{"SIGTERM twice, forced", "stop_ignore", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, "12", "15"},
	}
	for _, c := range signalled {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in, files := batchInputs(t, 2)
			joblog := filepath.Join(t.TempDir(), "joblog")
			p := startRunner(t, nil, "batch", fixtureFile(t, c.fixture), "--in", in, "--out", filepath.Join(t.TempDir(), "out"),
				"--data-dir", dataDir(t), "--joblog", joblog, "-j", "2", "--log-level", "debug", "--shutdown-drain", "100ms")
			// Every input's guest is running (waitLine would find the
			// first such line again: count distinct lines).
			started := 0
			p.waitMatch(t, "an attempt started for every input", func(l string) bool {
				if strings.Contains(l, "attempt started") {
					started++
				}
				return started == len(files)
			})
			for i, sig := range c.signals {
				p.signal(t, sig)
				if i == 0 && len(c.signals) > 1 {
					p.waitLine(t, "stopping:")
				}
			}
			require.Equal(t, exitBatchStopped, p.wait(t), p.stderr())
			got := jobLogLines(t, joblog)
			require.Len(t, got, len(files), p.stderr())
			for name := range files {
				require.Equal(t, c.exitval, got[name][6], "Exitval of %s", name)
				require.Equal(t, c.sig, got[name][7], "Signal of %s", name)
			}
		})
	}
}

// A tool that reads GNU parallel's job log reads runner batch's: given
// the job log of a batch where some inputs failed, `parallel
// --resume-failed` over the same input list runs exactly those again,
// and `parallel --resume` runs none.
func TestBatchJobLogParallelResume(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("parallel"); err != nil {
		t.Skip("GNU parallel is not installed (apt-get install parallel; .ci/run installs it)")
	}
	mod := fixtureFile(t, "upper") // fails on an input with a NUL byte
	const n = 40
	in, _ := batchInputs(t, n)
	var list []string
	failed := map[string]bool{}
	for i := range n {
		p := filepath.Join(in, fmt.Sprintf("in-%04d.txt", i))
		list = append(list, p)
		if rand.IntN(4) == 0 || len(failed) == 0 && i == n-1 {
			require.NoError(t, os.WriteFile(p, []byte("bin\x00ary"), 0o644))
			failed[p] = true
		}
	}
	rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	dir := t.TempDir()
	listFile := filepath.Join(dir, "list")
	require.NoError(t, os.WriteFile(listFile, []byte(strings.Join(list, "\n")+"\n"), 0o644))
	joblog := filepath.Join(dir, "joblog")
	_, stderr, code := runRunner(t, "", "batch", mod, "--files-from", listFile, "--out", filepath.Join(dir, "out"),
		"--data-dir", dataDir(t), "--joblog", joblog)
	require.Equal(t, exitBatchFailed, code, stderr)
	require.Len(t, jobLogLines(t, joblog), n)
	resumeLog := filepath.Join(dir, "joblog-resume")
	require.NoError(t, os.WriteFile(resumeLog, readFile(t, joblog), 0o644))

	// parallel runs a command that records the input it is given.
	ran := func(mode, log string) []string {
		rec := filepath.Join(dir, "ran-"+mode)
		require.NoError(t, os.WriteFile(rec, nil, 0o644))
		cmd := exec.Command("parallel", "--will-cite", "-j", "2", mode, "--joblog", log,
			"echo {} >> "+rec, "::::", listFile)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "parallel %s: %s", mode, b)
		got := strings.Fields(string(readFile(t, rec)))
		sort.Strings(got)
		return got
	}
	var want []string
	for p := range failed {
		want = append(want, p)
	}
	sort.Strings(want)
	require.Equal(t, want, ran("--resume-failed", joblog), "parallel --resume-failed runs again exactly the inputs that failed")
	require.Empty(t, ran("--resume", resumeLog), "parallel --resume runs none: every input has a line")
}
