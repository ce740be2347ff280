package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
)

// Batch measures `runner batch` (the upper fixture over many small files):
// files/s against the way a user does it without it, `xargs -P N` over one
// `runner run` per file, and against the pool's own noop tasks/s in the
// same run (rounds interleaved). N is the number of CPUs, for all three.
// With Options.BaseRunner it also runs `runner batch` of that binary (an
// earlier build) in the same rounds. Each variant reports its CPU time
// (user + system) per file as well: the number the machine's other work
// disturbs least.
func Batch(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "batch"}
	if _, err := os.Stat(o.Runner); err != nil {
		return nil, fmt.Errorf("batch: runner binary %s: %w (run make build, or pass -runner)", o.Runner, err)
	}
	if _, err := exec.LookPath("xargs"); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	files := o.pick(10000, 500)
	xfiles := o.pick(400, 40) // one process per file: a sample gives its rate
	rounds := o.pick(3, 1)
	workers := runtime.NumCPU()

	tmp, err := os.MkdirTemp("", "stintbench-batch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	mod := filepath.Join(tmp, "upper.wasm")
	if err := os.WriteFile(mod, wat.MustLoad("upper"), 0o644); err != nil {
		return nil, err
	}
	in := filepath.Join(tmp, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		return nil, err
	}
	o.logf("batch: writing %d small input files", files)
	for i := range files {
		line := fmt.Sprintf("file %d: the quick brown fox jumps over the lazy dog\n", i)
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("f%05d.txt", i)), []byte(line), 0o644); err != nil {
			return nil, err
		}
	}
	xin := filepath.Join(tmp, "xin") // the first xfiles inputs, for xargs
	if err := os.MkdirAll(xin, 0o755); err != nil {
		return nil, err
	}
	for i := range xfiles {
		name := fmt.Sprintf("f%05d.txt", i)
		if err := os.Link(filepath.Join(in, name), filepath.Join(xin, name)); err != nil {
			return nil, err
		}
	}

	// The pool's own noop tasks/s: a template store of `files` noop tasks,
	// drained by a pool of `workers`, as in the durable benchmark.
	rt, noop, err := noopRuntime(ctx, sandbox.Config{})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	template := filepath.Join(tmp, "template", "stint.db")
	if _, err := enqueue(ctx, template, noop, nil, files); err != nil {
		return nil, err
	}

	type variant struct {
		label string
		run   func(dir string) (rate float64, cpuPerFile time.Duration, err error)
	}
	onShm := func(runner string) func(string) (float64, time.Duration, error) {
		return func(string) (float64, time.Duration, error) {
			dir, err := os.MkdirTemp("/dev/shm", "stintbench-batch-")
			if err != nil {
				return 0, 0, err
			}
			defer os.RemoveAll(dir)
			return runBatch(ctx, runner, mod, in, dir, workers, files)
		}
	}
	_, shmErr := os.Stat("/dev/shm")
	vs := []variant{
		{fmt.Sprintf("runner batch upper.wasm, -j %d, %d files", workers, files), func(dir string) (float64, time.Duration, error) {
			return runBatch(ctx, o.Runner, mod, in, dir, workers, files)
		}},
		{fmt.Sprintf("xargs -P %d over runner run upper.wasm, %d files", workers, xfiles), func(dir string) (float64, time.Duration, error) {
			return runXargs(ctx, o.Runner, mod, xin, dir, workers, xfiles)
		}},
		{fmt.Sprintf("pool noop tasks (tasks.Pool, %d workers, SQLite), %d tasks", workers, files), func(dir string) (float64, time.Duration, error) {
			path, err := copyStore(template, dir)
			if err != nil {
				return 0, 0, err
			}
			c0 := processCPU()
			d, _, err := drain(ctx, path, rt, pool.Config{Workers: workers}, files)
			if err != nil {
				return 0, 0, err
			}
			return float64(files) / d.Seconds(), (processCPU() - c0) / time.Duration(files), nil
		}},
	}
	if shmErr == nil {
		vs = append(vs, variant{fmt.Sprintf("runner batch, -j %d, --out and data_dir on tmpfs (/dev/shm)", workers), onShm(o.Runner)})
	}
	// GNU parallel, where it is installed (apt-get install parallel): the
	// same transform as a native tr per file, and as a runner run per file.
	_, parErr := exec.LookPath("parallel")
	if parErr == nil {
		vs = append(vs,
			variant{fmt.Sprintf("GNU parallel -j %d, native tr a-z A-Z per file, %d files", workers, files), func(dir string) (float64, time.Duration, error) {
				return runParallel(ctx, in, dir, workers, files, `tr a-z A-Z < {} > %q/{}`)
			}},
			variant{fmt.Sprintf("GNU parallel -j %d over runner run upper.wasm, %d files", workers, xfiles), func(dir string) (float64, time.Duration, error) {
				return runParallel(ctx, xin, dir, workers, xfiles, fmt.Sprintf(`%q run %q --input {} > %%q/{}`, o.Runner, mod))
			}})
	}
	if o.BaseRunner != "" {
		vs = append(vs, variant{fmt.Sprintf("base binary's runner batch (%s), -j %d", o.BaseRunner, workers), func(dir string) (float64, time.Duration, error) {
			return runBatch(ctx, o.BaseRunner, mod, in, dir, workers, files)
		}})
		if shmErr == nil {
			vs = append(vs, variant{"base binary's runner batch, on tmpfs (/dev/shm)", onShm(o.BaseRunner)})
		}
	}
	series := make([]*Series, len(vs))
	cpus := make([]*Series, len(vs))
	idx := make([]int, len(vs))
	for i := range vs {
		idx[i] = i
		series[i] = res.NewSeries(fmt.Sprintf("batch/%d", i), "files/s")
		cpus[i] = res.NewSeries(fmt.Sprintf("batch/%d/cpu", i), "ns")
	}
	for r := 0; r < rounds; r++ {
		for _, i := range rotate(idx, r) {
			dir := filepath.Join(tmp, fmt.Sprintf("r%d-v%d", r, i))
			rate, cpu, err := vs[i].run(dir)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", vs[i].label, err)
			}
			o.logf("batch: round %d, %s: %.0f files/s, CPU %s µs/file, load %s", r+1, vs[i].label, rate, us(float64(cpu)), LoadAvg())
			series[i].Values = append(series[i].Values, rate)
			cpus[i].AddDuration(cpu)
			// The round's files stay until the end. On ext4 without a
			// journal, the inode allocator passes over recently freed
			// inodes (recently_deleted), reading each one's inode table
			// block: deleting 10,000 outputs here made the next rounds'
			// file creations scan past them (perf: recently_deleted,
			// find_get_block_common and filemap_get_entry, about 30% of
			// an ext4 round's CPU, and its system time several times a
			// first round's: docs/design/batch.md, "ext4 without a journal").
		}
	}
	t := res.NewTable(fmt.Sprintf("runner batch: a small text transform over %d small files", files),
		"variant", "median files/s", "min", "max", "batch / this", "CPU µs/file", "CPU / batch's", "rounds")
	for i, v := range vs {
		s := series[i]
		t.AddRow(v.label, num(s.Median()), num(s.Quantile(0)), num(s.Max()),
			ratio(series[0].Median(), s.Median()), us(cpus[i].Median()), ratio(cpus[i].Median(), cpus[0].Median()), fmt.Sprint(s.N()))
	}
	t.Notes = append(t.Notes, fmt.Sprintf(
		"Wall time of the whole command (process start to exit: opening the store, reading and hashing the inputs, "+
			"submitting them in bulk (on a fresh queue while the pool runs), running, writing each output atomically "+
			"(made durable with one syncfs per group where the file system honours it, else an fsync each; then "+
			"linkat and an fsync of the folder), closing), a fresh "+
			"data_dir and --out each round. xargs: `ls | xargs -P %d -I{} sh -c 'runner run upper.wasm --input IN/{} > OUT/{}'` "+
			"over the first %d files (one process per file: its rate does not depend on the count). Pool noop: "+
			"pre-enqueued noop tasks drained from a fresh copy of one store, from Pool.Start to the last finished, no "+
			"files. CPU: user + system time per file of the runner processes (xargs: of every process it starts), "+
			"or of this process around the pool's drain (median of rounds). Rounds rotate the variants.", workers, xfiles))
	if parErr != nil {
		t.Notes = append(t.Notes, "GNU parallel is not installed (apt-get install parallel): its variants were not run.")
	} else {
		t.Notes = append(t.Notes, fmt.Sprintf("GNU parallel: `ls | parallel -j %d 'tr a-z A-Z < {} > OUT/{}'` in the input folder over every file, "+
			"and `ls | parallel -j %d 'runner run upper.wasm --input {} > OUT/{}'` over the first %d (CPU: of every process it starts); "+
			"its per-job temporary files in /dev/shm (--tmpdir) where there is one, so that their deletion does not slow the ext4 rounds after it.", workers, workers, xfiles))
	}
	return res, nil
}

// runParallel runs GNU parallel in the folder in over its files, cmd
// (with one %q for the output folder) per file, and returns its files/s
// and the CPU time per file of every process it started.
func runParallel(ctx context.Context, in, dir string, workers, files int, cmd string) (float64, time.Duration, error) {
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, 0, err
	}
	// parallel keeps each job's output in two files of its --tmpdir,
	// created and deleted at once: 20,000 files for 10,000 jobs. In /tmp
	// (ext4 here) those freed inodes made the next variant's file
	// creations pass over them (recently_deleted, see Batch): the runner
	// batch rounds that followed a parallel round cost up to twice the
	// system time. On a tmpfs they disturb no other variant.
	tmpdir := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		tmpdir = "--tmpdir /dev/shm "
	}
	script := fmt.Sprintf(`cd %q && ls | parallel --will-cite %s-j %d %s`, in, tmpdir, workers, shellWord(fmt.Sprintf(cmd, out)))
	c := exec.CommandContext(ctx, "sh", "-c", script)
	c.Env = append(os.Environ(), "RUNNER_LOG_LEVEL=warn", "RUNNER_DATA_DIR="+filepath.Join(dir, "none"))
	return timeOutputs(c, out, files)
}

// shellWord quotes s as one word for sh.
func shellWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runBatch runs `runner batch` and returns its files/s and CPU time per
// file, checking that every output is there.
func runBatch(ctx context.Context, runner, mod, in, dir string, workers, files int) (float64, time.Duration, error) {
	out := filepath.Join(dir, "out")
	cmd := exec.CommandContext(ctx, runner, "batch", mod, "--in", in, "--out", out,
		"--data-dir", filepath.Join(dir, "data"), "-j", fmt.Sprint(workers), "--log-level", "warn")
	return timeOutputs(cmd, out, files)
}

// runXargs runs the transform the way a user does without runner batch.
func runXargs(ctx context.Context, runner, mod, in, dir string, workers, files int) (float64, time.Duration, error) {
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, 0, err
	}
	script := fmt.Sprintf(`cd %q && ls | xargs -P %d -I{} sh -c '%q run %q --input "$1" > %q/"$1"' _ {}`,
		in, workers, runner, mod, out)
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Env = append(os.Environ(), "RUNNER_LOG_LEVEL=warn", "RUNNER_DATA_DIR="+filepath.Join(dir, "none"))
	return timeOutputs(cmd, out, files)
}

// timeOutputs runs cmd, which writes one output per input file into the
// folder out, and returns its files/s and the CPU time per file of the
// processes it waited for, checking that every output is there.
func timeOutputs(cmd *exec.Cmd, out string, files int) (float64, time.Duration, error) {
	start := time.Now()
	b, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, b)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		return 0, 0, err
	}
	if len(ents) != files {
		return 0, 0, fmt.Errorf("%d outputs, want %d: %s", len(ents), files, strings.TrimSpace(string(b)))
	}
	return float64(files) / d.Seconds(), childCPU(cmd) / time.Duration(files), nil
}

// childCPU is the user + system time of a finished command and of the
// processes it waited for.
func childCPU(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// processCPU is this process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
