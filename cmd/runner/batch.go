package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
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
	tenant      string
	onRetry     string
	verbose     bool
	filesFrom   string
	null        bool
	outputName  string
	jobs        string
	maxAttempts int
	asJSON      bool
	sync        string
	halt        string
	dryRun      bool
	joblog      string
	retryFailed bool
	skipFailed  bool
	// stdoutConfigured: limits.stdout was set (flag, env or file), so it
	// is the outputs' cap when --stdout-cap is not given.
	stdoutConfigured bool
}

func (a *app) batchCommand() *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch MODULE.wasm (--in DIR|FILE|GLOB | --files-from FILE) --out DIR [-j N] [-- ARGS...]",
		Short: "Run a module over every file of a folder, writing each result to an output folder; resumable",
		Long: `Run MODULE.wasm once per input file (the file on the guest's stdin) and
write what it prints to --out/NAME, NAME being the input's path below --in
(the tree is mirrored) or --output-name's template. N inputs run at once in
this process (-j), from the embedded store in data_dir: no runner serve.

Inputs: --in DIR (its whole tree; names starting with a dot are skipped, and
links are never followed: one to a file fails, one to a folder is skipped),
--in FILE, --in 'GLOB' (quoted; ** matches any number of folders), or
--files-from FILE|- (one path a line, or NUL-separated with --null).
Replacement strings, as GNU parallel's, in --output-name and in the guest's
arguments: {} the input's name (its path below --in, or the line of
--files-from), {.} without extension, {/} base name, {//} folder, {/.} base
name without extension, {#} sequence number.

Each output is written whole or not at all, made durable before it gets its
name. A failed input gets no output but --out/.stint-batch/stderr/NAME (the
tail of its stderr) and a line in the summary; the others go on, unless
--halt stops the batch. Stop it at any moment (Ctrl-C, SIGTERM, kill -9, a
power loss): the same command resumes it, skipping the inputs that succeeded,
resuming interrupted ones from their checkpoints, running new and changed
files, and trying failed ones again (unless --skip-failed). See
docs/batch.md.

Exit codes:
   0  every input succeeded
   1  error (the store, writing an output)
   2  bad usage, or a check before any work failed; nothing was written
   7  some inputs failed, or --halt stopped the batch (see the summary)
  75  stopped by a signal before every input was done; run it again to resume`,
		Example: `  runner batch upper.wasm --in texts/ --out upper/
  runner batch convert.wasm --in 'scans/**/*.pgm' --out pbm/ --output-name '{.}.pbm' -j 4 --timeout 30s -- --dither
  find data -name '*.csv' -print0 | runner batch sum.wasm --files-from - --null --out sums/ --arg '{/}'
  runner batch upper.wasm --in texts/ --out upper/ --halt soon,fail=10% --joblog batch.log
  runner batch upper.wasm --in texts/ --out upper/ --dry-run`,
		Args: moduleAndGuestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = guestArgs(f.args, args)
			f.stdoutConfigured = source(a.v, cmd.Flags(), "limits.stdout") != "default"
			if batchQuiet(f.verbose, source(a.v, cmd.Flags(), "log.level") != "default", a.stderrIsTerminal()) {
				// The bar and the summary say it all on a terminal: the
				// log keeps its warnings and errors (-v for the rest).
				a.log = a.log.WithOptions(zap.IncreaseLevel(zapcore.WarnLevel))
			}
			return a.batch(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false // --help lists a batch's own flags in this order
	fl.StringVar(&f.in, "in", "", "input folder (its whole tree, dot-names skipped), a file, or a quoted glob ('data/*.txt', 'data/**/*.txt'): one task per file")
	fl.StringVar(&f.filesFrom, "files-from", "", "read the inputs' paths from FILE (- for stdin), one a line, instead of --in")
	fl.BoolVarP(&f.null, "null", "0", false, "--files-from's paths are NUL-separated (find -print0)")
	fl.StringVar(&f.out, "out", "", "output folder (created if missing): the input tree mirrored; failures' stderr in --out/"+batch.StderrDir+"/NAME")
	fl.StringVar(&f.outputName, "output-name", "", "output path below --out, a template: {} {.} {/} {//} {/.} {#} as in GNU parallel (default {}, the input's path below --in)")
	fl.StringVar(&f.tenant, "tenant", "", "tenant its tasks are for, kept with each task (a batch runs its own tasks: fair claims apply to queued tasks)")
	fl.StringVarP(&f.jobs, "jobs", "j", "", "inputs run at once: N, N% of the CPUs (GNU parallel's spelling), or 0 for as many as may help (4 per CPU) (default: workers, the number of CPUs)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 1, "failed attempts before an input counts as failed (interrupted attempts do not count)")
	fl.IntVar(&f.maxAttempts, "retries", 1, "GNU parallel's name for --max-attempts: runs an input at most N times")
	fl.Lookup("retries").Hidden = true // --help lists --max-attempts; batch.md maps parallel's flags
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on stdout (with --dry-run: the plan)")
	fl.StringVar(&f.halt, "halt", "never", "stop once inputs fail, as GNU parallel: now,fail=N (stop running inputs at once) or soon,fail=N (start no more, let running ones finish); N or N%")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would run (input, output, arguments) and write nothing: no store, no data dir, no outputs")
	fl.StringVar(&f.joblog, "joblog", "", "append a line per input run to FILE in GNU parallel's --joblog format")
	fl.BoolVar(&f.retryFailed, "retry-failed", true, "try again the inputs that failed in an earlier run")
	fl.BoolVar(&f.skipFailed, "skip-failed", false, "skip the inputs that failed in an earlier run (same as --retry-failed=false)")
	fl.StringVar(&f.sync, "sync", batch.SyncAuto, "how outputs are made durable before they get their names: auto (one syncfs per group of outputs where the file system honours it, else an fsync per file) or file (an fsync per file)")
	fl.StringVar(&f.timeout, "timeout", "", "attempt timeout per input, like 30s (default limits.timeout)")
	fl.StringVar(&f.memory, "memory", "", "memory limit per input, like 64MiB (default limits.memory)")
	fl.StringVar(&f.stdoutCap, "stdout-cap", "", "largest output per input, like 8MiB (default limits.stdout if set, else limits.max_stdout: an output is a file)")
	fl.StringVar(&f.stderrCap, "stderr-cap", "", "most bytes the guest may write to stderr (default limits.stderr)")
	fl.StringVar(&f.checkpointCap, "checkpoint-cap", "", "largest checkpoint the guest may save (default limits.checkpoint)")
	fl.StringVar(&f.work, "work", "", "work budget per input, in work units: past it the input fails with outcome work_limit, deterministically (default limits.work; needs sandbox.interrupt=checks)")
	fl.StringArrayVar(&f.args, "arg", nil, "argument for the guest (repeatable; or put them after --); {} {.} {/} {//} {/.} {#} are replaced per input")
	fl.StringArrayVar(&f.env, "env", nil, "K=V environment variable for the guest (repeatable; nothing else is passed)")
	registerOnRetry(cmd, &f.onRetry)
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "on a terminal, log as off one (the start, the shutdown's phases); by default the bar and the summary say it, with warnings and errors")
	var own []string
	fl.VisitAll(func(f *pflag.Flag) { own = append(own, f.Name) })
	cmd.SetUsageFunc(func(c *cobra.Command) error { return batchUsage(c, own) })
	return cmd
}

// batchUsage is runner batch's usage: its own flags first, in the order
// they were defined, then the runner's configuration keys (the store's
// lease, the owner, the sandbox, the shutdown phases and hooks, limits.*)
// under a heading of their own, then the global flags.
func batchUsage(c *cobra.Command, own []string) error {
	w := c.OutOrStderr()
	fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
	}
	mine := pflag.NewFlagSet("batch", pflag.ContinueOnError)
	mine.SortFlags = false
	isOwn := map[string]bool{}
	for _, name := range own {
		if f := c.LocalFlags().Lookup(name); f != nil {
			mine.AddFlag(f)
			isOwn[name] = true
		}
	}
	ops := pflag.NewFlagSet("runner", pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		switch {
		case isOwn[f.Name]:
		case f.Name == "help":
			mine.AddFlag(f)
		default:
			ops.AddFlag(f)
		}
	})
	fmt.Fprintf(w, "\nFlags:\n%s", mine.FlagUsages())
	if ops.HasFlags() {
		fmt.Fprintf(w, "\nRunner configuration (operational keys: the lease, the owner, the sandbox, the shutdown\nphases and hooks, limits.*; each also a configuration key, see docs/configuration.md):\n%s", ops.FlagUsages())
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal Flags:\n%s", c.InheritedFlags().FlagUsages())
	}
	return nil
}

// batchGCPercent is the GOGC of a batch unless GOGC is set: a batch's heap
// is small (a few MiB beside its held inputs) and it allocates fast, so
// the default 100 collects it several times a second; 200 made a batch of
// 10,000 small files 1.15x as fast (docs/design/batch.md, "Reading each input
// once, and the other cuts of a batch's per-file cost").
const batchGCPercent = 200

// batchHeapAdvised is the heap a batch asks to have in huge pages at its
// start (adviseHeap, in gcfloor.go) unless GOGC or GOMEMLIMIT is set: a
// batch of 10,000 small files grows its heap to a few tens of MiB, and in
// 4 KiB pages each faulted on first use while the files ran
// (docs/design/go-runtime.md, "A fresh runner's page faults").
const batchHeapAdvised = 32 << 20

func (a *app) batch(ctx context.Context, modPath string, f batchFlags) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(batchGCPercent)
		if os.Getenv("GOMEMLIMIT") == "" {
			go adviseHeap(batchHeapAdvised)
		}
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
	jobs, err := parseJobs(f.jobs, runtime.NumCPU())
	if err != nil {
		return err
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
	spec.MaxAttempts, spec.Tenant = f.maxAttempts, f.tenant
	if spec.OnRetry, err = parseOnRetry(f.onRetry); err != nil {
		return err
	}
	if spec.Limits.Work > 0 && a.cfg.Sandbox.Interrupt == sandbox.InterruptWazero {
		return usageErrorf("--work: a work budget needs sandbox.interrupt=checks (in wazero mode loops are not counted)")
	}
	if spec.Limits.Stdout == 0 && f.stdoutConfigured {
		// Else batch.Config's default: limits.max_stdout.
		spec.Limits.Stdout = a.cfg.Limits.Stdout
	}
	cfg := batch.Config{
		Module: wasm, ModuleName: modPath, CacheName: cacheName(modPath), In: f.in, Out: f.out, Spec: spec,
		FilesFrom: f.filesFrom, NullSeparated: f.null, OutputName: f.outputName, ArgTemplates: true,
		Halt: halt, SkipFailed: f.skipFailed || !f.retryFailed,
		Workers: jobs, Sync: f.sync, HoldBytes: batchHoldBytes(),
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
			stopProgress := newBatchProgress(st, a.stderr, a.log).run()
			return func() {
				stopProgress()
				// The batch ends: from the moment its stop no longer
				// listens for signals until this process exits (the
				// summary), a SIGTERM or Ctrl-C would kill it by default
				// and lose the summary and the exit code. Held here, it is
				// ignored; until then the stop handles it.
				signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, os.Interrupt)
			}
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
		cfg.OnDone, cfg.OnStopped, cfg.WantAttempt = jl.add, jl.add, jl.missing
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
		if errors.Is(err, tasks.ErrInvalidSpec) && strings.Contains(err.Error(), "over the runner's maximum") {
			err = fmt.Errorf("%w\n(the maxima are the limits.max_* keys; runner config shows them)", err)
		}
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
		fmt.Fprintln(a.stdout, planLine(p))
	}
	fmt.Fprintf(a.stderr, "dry run: %d inputs; nothing was written\n", len(plan))
	return nil
}

// parseJobs reads -j as GNU parallel does: N inputs at once, N% of the
// CPUs (at least 1), or 0 for as many as may help (4 per CPU: guests
// compute, so more only adds memory). "" is 0 for batch.Config: workers.
func parseJobs(s string, cpus int) (int, error) {
	bad := usageErrorf("-j %q: want N (1 or more), N%% of the CPUs, or 0 (4 per CPU)", s)
	switch {
	case s == "":
		return 0, nil
	case s == "0":
		return 4 * cpus, nil
	case strings.HasSuffix(s, "%"):
		pct, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
		if err != nil || pct <= 0 {
			return 0, bad
		}
		return max(1, cpus*pct/100), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, bad
	}
	return n, nil
}

// batchQuiet reports whether runner batch logs only warnings and errors:
// on a terminal (where the bar and the summary show the run), unless -v or
// log.level asks for more. Off a terminal the log is the progress.
func batchQuiet(verbose, levelSet, terminal bool) bool {
	return terminal && !verbose && !levelSet
}
