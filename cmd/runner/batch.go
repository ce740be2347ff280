package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stint-run/stint/batch"
)

// runner batch's own exit codes (0: every input succeeded; 1 and 2 as
// for every command).
const (
	// exitBatchFailed: some inputs failed (see the summary).
	exitBatchFailed = 7
	// exitBatchStopped: a signal stopped the batch before every input was
	// done; the same command resumes it.
	exitBatchStopped = 75
)

type batchFlags struct {
	taskFlags
	in, out     string
	filesFrom   string
	null        bool
	outputName  string
	jobs        int
	maxAttempts int
	asJSON      bool
	sync        string
	halt        string
	dryRun      bool
	joblog      string
	retryFailed bool
	skipFailed  bool
}

func (a *app) batchCommand() *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch MODULE.wasm --in DIR|GLOB --out DIR [-j N] [-- ARGS...]",
		Short: "Run a module over every file of a folder, writing each result to an output folder; resumable",
		Long: `Run MODULE.wasm once per input file (the file on the guest's stdin) and
write what it prints to --out/NAME, NAME being the input's file name. N tasks
run at once in this process (-j, default workers), from the embedded store in
data_dir: no runner serve needed.

Each output is written whole or not at all (a temporary file in --out, made
durable, then its name: linkat of an O_TMPFILE on Linux, else a rename; fsync
of the folder). On Linux the outputs that end together are written as a
group made durable by one syncfs(2) where the file system honours it (ext4,
xfs, btrfs, f2fs, tmpfs; Linux 5.8+), else by an fsync of each (--sync file
forces that; see docs/batch.md). An input that fails gets no output but
--out/NAME.stderr, the tail of the guest's stderr, and a line in the summary;
the others go on. --in is a folder (its files, not those starting with a dot,
not its subfolders) or a quoted glob like 'data/*.txt'.

Links in --in are not followed: --in's folder (a glob's part before its
first wildcard) is opened once, as named, and every input is opened
relative to it with O_NOFOLLOW and O_NONBLOCK and read only if it is a
regular file. An input that is a link (to anywhere, inside --in or out of
it), or a FIFO or device put in a file's place, fails with its reason; the
others run. An output (and NAME.stderr) is created with its input's mode &
0666, less the umask: never wider than the input's. --out may not be a
folder of the inputs, compared by device and inode (a link to --in is
refused too). Names and guest stderr are printed with control characters
escaped (\x1b); --json prints them exactly.

Stop it at any moment (Ctrl-C, SIGTERM): running guests may finish or save a
checkpoint (the phased stop, see docs/shutdown.md; a second signal forces
them), it prints what was done, and the same command resumes: inputs that
succeeded are skipped (their outputs are never written again), interrupted
ones continue from their checkpoints, new files are added, changed files run
again, failed ones are retried. After kill -9 or a power loss the same holds;
at most the attempts in flight run again. Each input's task is keyed by the
output folder, the module's sha256, the input's path and sha256, and the
arguments and environment. The store holds no copy of the inputs: the
batch reads each once to hash it and keeps its content in memory (up to
32 MiB in all) until its task ends, so an attempt runs the very content its
task is keyed by. An input it could not keep is read again at its attempt;
if it changed since the batch read it, it is not run (outcome
input_unavailable) and runs at the next run. Changed files run again at the
next run either way.

Before any work it checks that --in has files, that --out can be written,
that no input is over limits.max_input and that the module compiles;
otherwise it exits 2 and writes nothing.

Exit codes:
   0  every input succeeded
   1  error (the store, writing an output)
   2  bad usage, or a check before any work failed; nothing was written
   7  some inputs failed (see the summary and NAME.stderr)
  75  stopped by a signal before every input was done; run it again to resume`,
		Example: `  runner batch upper.wasm --in texts/ --out upper/
  runner batch convert.wasm --in 'scans/*.pgm' --out pbm/ -j 4 --timeout 30s -- --dither
  runner batch upper.wasm --in texts/ --out upper/ --json > summary.json`,
		Args: moduleAndGuestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = guestArgs(f.args, args)
			return a.batch(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.in, "in", "", "input folder (its whole tree, dot-names skipped), a file, or a quoted glob ('data/*.txt', 'data/**/*.txt'): one task per file")
	fl.StringVar(&f.filesFrom, "files-from", "", "read the inputs' paths from FILE (- for stdin), one a line, instead of --in")
	fl.BoolVarP(&f.null, "null", "0", false, "--files-from's paths are NUL-separated (find -print0)")
	fl.StringVar(&f.out, "out", "", "output folder (created if missing): the input tree mirrored; failures' stderr in --out/"+batch.StderrDir+"/NAME")
	fl.StringVar(&f.outputName, "output-name", "", "output path below --out, a template: {} {.} {/} {//} {/.} {#} as in GNU parallel (default {}, the input's path below --in)")
	fl.IntVarP(&f.jobs, "jobs", "j", 0, "inputs run at once (default: workers, the number of CPUs)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 1, "failed attempts before an input counts as failed (interrupted attempts do not count)")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on stdout (with --dry-run: the plan)")
	fl.StringVar(&f.halt, "halt", "never", "stop once inputs fail, as GNU parallel: now,fail=N (stop running inputs at once) or soon,fail=N (start no more, let running ones finish); N or N%")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would run (input, output, arguments) and write nothing: no store, no data dir, no outputs")
	fl.StringVar(&f.joblog, "joblog", "", "append a line per input run to FILE in GNU parallel's --joblog format")
	fl.BoolVar(&f.retryFailed, "retry-failed", true, "try again the inputs that failed in an earlier run (the default)")
	fl.BoolVar(&f.skipFailed, "skip-failed", false, "skip the inputs that failed in an earlier run (same as --retry-failed=false)")
	fl.StringVar(&f.sync, "sync", batch.SyncAuto, "how outputs are made durable before they get their names: auto (one syncfs per group of outputs where the file system honours it, else an fsync per file) or file (an fsync per file)")
	fl.StringVar(&f.timeout, "timeout", "", "attempt timeout per input, like 30s (default limits.timeout)")
	fl.StringVar(&f.memory, "memory", "", "memory limit per input, like 64MiB (default limits.memory)")
	fl.StringVar(&f.stdoutCap, "stdout-cap", "", "largest output per input, like 8MiB (default limits.stdout)")
	fl.StringVar(&f.stderrCap, "stderr-cap", "", "most bytes the guest may write to stderr (default limits.stderr)")
	fl.StringVar(&f.checkpointCap, "checkpoint-cap", "", "largest checkpoint the guest may save (default limits.checkpoint)")
	fl.StringArrayVar(&f.args, "arg", nil, "argument for the guest (repeatable; or put them after --); {} {.} {/} {//} {/.} {#} are replaced per input")
	fl.StringArrayVar(&f.env, "env", nil, "K=V environment variable for the guest (repeatable; nothing else is passed)")
	return cmd
}

// batchGCPercent is the GOGC of a batch unless GOGC is set: a batch's heap
// is small (a few MiB beside its held inputs) and it allocates fast, so
// the default 100 collects it several times a second; 200 made a batch of
// 10,000 small files 1.15x as fast (docs/benchmarks.md).
const batchGCPercent = 200

func (a *app) batch(ctx context.Context, modPath string, f batchFlags) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(batchGCPercent)
	}
	// Every check first: an error here is exit 2, with nothing written.
	wasm, err := a.readModule(modPath)
	if err != nil {
		return err
	}
	if f.maxAttempts < 1 {
		return usageErrorf("--max-attempts must be at least 1")
	}
	if f.null && f.filesFrom == "" {
		return usageErrorf("--null says how --files-from's paths are separated: give --files-from too")
	}
	if f.jobs < 0 {
		return usageErrorf("-j must be at least 1")
	}
	if f.sync != batch.SyncAuto && f.sync != batch.SyncFile {
		return usageErrorf("--sync %q: want auto or file", f.sync)
	}
	halt, err := batch.ParseHalt(f.halt)
	if err != nil {
		return usageErrorf("%v", err)
	}
	ti, err := f.parse()
	if err != nil {
		return err
	}
	spec := ti.spec
	spec.MaxAttempts = f.maxAttempts
	check := spec
	check.Module = strings.Repeat("0", 64)
	if err := checkSpec(check, a.cfg.Policy); err != nil {
		return err
	}
	cfg := batch.Config{
		Module: wasm, ModuleName: modPath, In: f.in, Out: f.out, Spec: spec,
		FilesFrom: f.filesFrom, NullSeparated: f.null, OutputName: f.outputName, ArgTemplates: true,
		Halt: halt, SkipFailed: f.skipFailed || !f.retryFailed,
		Workers: f.jobs, Sync: f.sync, HoldBytes: batchHoldBytes(),
		Runner:   a.runnerConfig(),
		Open:     a.openConfiguredRunner,
		Shutdown: a.shutdownConfig(), HookTimeouts: a.cfg.Shutdown.Hooks,
		HandleSignals: true,
		OnSignal: func(n int) {
			if n == 1 {
				fmt.Fprintln(a.stderr, "\rstopping: running inputs may finish or save a checkpoint; a second Ctrl-C forces them")
			} else {
				fmt.Fprintln(a.stderr, "\rforcing the running inputs to stop; they resume at the next run")
			}
		},
		OnRun: func(st *batch.Status) func() {
			return newBatchProgress(st, a.stderr, a.log).run()
		},
		Logger: a.log,
	}
	if f.dryRun {
		return a.batchDryRun(cfg, f)
	}
	var jl *jobLog
	if f.joblog != "" {
		if jl, err = openJobLog(f.joblog, modPath); err != nil {
			return err
		}
		cfg.OnDone = jl.add
	}
	sum, err := batch.Run(ctx, cfg)
	if jl != nil {
		if jerr := jl.close(); jerr != nil {
			fmt.Fprintf(a.stderr, "--joblog %s: %v\n", termSafe(f.joblog), jerr)
		}
	}
	var ie *batch.InputError
	switch {
	case errors.As(err, &ie): // a check before any work
		return &exitError{code: exitUsage, err: err}
	case err != nil && !errors.Is(err, batch.ErrStopped) && !errors.Is(err, batch.ErrUnrecorded):
		return err
	}
	return a.finishBatch(f, sum, err)
}

// batchDryRun prints what the batch would run, one line per input
// (input, output, arguments, tab-separated and escaped for a terminal;
// --json: exactly), and writes nothing.
func (a *app) batchDryRun(cfg batch.Config, f batchFlags) error {
	plan, err := batch.Plan(cfg)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if f.asJSON {
		return a.printJSON(plan)
	}
	for _, p := range plan {
		fmt.Fprintln(a.stdout, termSafe(p.String()))
	}
	fmt.Fprintf(a.stderr, "dry run: %d inputs; nothing was written\n", len(plan))
	return nil
}
