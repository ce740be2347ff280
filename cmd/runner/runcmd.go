package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

type runFlags struct {
	taskFlags
	checkpoint string
	snapshot   string
	// asJSON prints the outcome as JSON instead of the guest's stdout.
	asJSON bool
	// exitCode is --exit-code: exitCodeRunner or exitCodeGuest.
	exitCode string
	// memoryConfigured and stdoutConfigured: limits.memory and
	// limits.stdout were set (flag, env or file); unset, a one-shot run
	// takes limits.max_memory and limits.max_stdout (oneShotLimits).
	memoryConfigured, stdoutConfigured bool
	// verbose is -v; quiet, worked out from it and log.level, leaves out
	// the outcome's log line (runTask prints one line instead when the
	// run does not succeed).
	verbose, quiet bool
}

// oneShotLimits gives a run that asks for no memory limit or stdout cap,
// with none configured, the largest a task may have (limits.max_memory,
// limits.max_stdout): runner run is the operator's own program, and real
// tools need more than a queued task's defaults (esbuild 256 MiB, zstd or
// wasm2wat several MB of output; issue 42). Queued tasks keep the
// defaults.
func (f *runFlags) oneShotLimits(l *tasks.Limits, max tasks.Limits) {
	if l.MemoryBytes == 0 && !f.memoryConfigured {
		l.MemoryBytes = max.MemoryBytes
	}
	if l.Stdout == 0 && !f.stdoutConfigured {
		l.Stdout = max.Stdout
	}
}

// The values of `runner run --exit-code`.
const (
	exitCodeRunner = "runner"
	exitCodeGuest  = "guest"
)

func (a *app) runCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run MODULE.wasm [-- ARGS...]",
		Short: "Run one task in the sandbox now (no queue) and print its stdout",
		Long: `Run one WebAssembly (WASI command) module now, in a fresh sandbox, and print
what it writes to stdout; its stderr is passed through. Nothing is queued.

Ctrl-C (SIGINT) or SIGTERM once asks the guest to stop (stop_requested = 1):
a well-behaved guest saves a checkpoint and exits 75. A second signal stops
it by force.

With --snapshot FILE, any guest can be stopped without losing its work:
the first signal suspends it at its next check (within milliseconds; at
once in a sleep or a read of stdin) and writes FILE (private, atomically); the same command run again resumes it
from FILE exactly where it was, writes only what the guest writes from then
on, and removes FILE once the task ends. Stdin is read on from where the
guest had read it (give the same input again). A module Stint cannot make
resumable (docs/sandbox.md, "Suspend and resume") is stopped as without
--snapshot, with a warning; so is a guest in a loop that calls nothing
under --sandbox-interrupt wazero, which warns at the start.

Exit codes:
   0  succeeded                   15  output limit
   1  error (an outcome without   16  invalid module
      a code of its own: a bug)   17  bad import (unknown host function)
   2  bad usage or config         18  work limit (--work)
  10  failed (non-zero)           19  unstoppable (module refused after
  11  trapped                         two runs that could not be stopped)
  12  forced                      20  refused (queue only: not started)
  13  timed out (at --timeout)    21  input unavailable (queue only)
  14  memory limit
  22  suspended (--snapshot): FILE written; the same command resumes it
  75  interrupted: stopped on request, checkpoint saved

With --exit-code guest, runner exits as the guest did whenever the guest
exited (as wasmtime run and wazero run do): 0 when it succeeded, its own
exit code when it failed or was interrupted (a code over 255 exits 255, so
that it never reads as success); the codes above for the rest (trapped,
forced, timed out, limits, invalid module, bad usage). A script that wraps
a WASI tool keeps the tool's codes.

With --json, the guest's stdout is not written raw: one JSON object is
printed when the run ends, the outcome as runner tasks show --json gives an
attempt (outcome, exit_code, reason, started_at, ended_at, resumed, the
stderr tail) plus the module, sizes, peak memory and the guest's stdout
("stdout" as text, or "stdout_base64" when it is not UTF-8).

The output is the guest's: nothing else is printed unless the run does not
succeed (one line on stderr saying why, then where a trap was), --verbose
or --log-level is given (the outcome as a log line, with its duration,
peak memory and work).

Limits: a one-shot run is your own program, so unless --memory and
--stdout-cap (or limits.memory and limits.stdout) say otherwise it may use
the most a task may have, limits.max_memory (1GiB) and limits.max_stdout
(64MiB); queued tasks keep limits.memory and limits.stdout. A run that
reaches a limit says which flag and config key raise it.

Compiled modules are cached: in data_dir/cache if data_dir exists (run
creates nothing there), else in the user's cache directory (stint under
$XDG_CACHE_HOME or ~/.cache, created 0700; sandbox.user_cache=off for
none), pruned to sandbox.cache_max_bytes.`,
		Example: `  runner run hello.wasm --input - <<< "hi"
  runner run primes.wasm --input n.txt --checkpoint primes.ckpt --timeout 10s
  runner run lua.wasm --snapshot job.snap --input job.lua -- -   # Ctrl-C, then the same again
  runner run tool.wasm --env MODE=fast --mount ./data:/data -- -v --out /data/x
  runner run tool.wasm --exit-code guest -- --check; echo "tool exited $?"
  runner run job.wasm --json | jq .outcome`,
		Args: moduleAndGuestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = guestArgs(f.args, args)
			f.memoryConfigured = source(a.v, cmd.Flags(), "limits.memory") != "default"
			f.stdoutConfigured = source(a.v, cmd.Flags(), "limits.stdout") != "default"
			f.quiet = !f.verbose && source(a.v, cmd.Flags(), "log.level") == "default"
			return a.runTask(cmd.Context(), args[0], f)
		},
	}
	f.register(cmd.Flags(), "host:guest[:rw] directory to give the guest (repeatable; read-only unless :rw; :rw+snapshots lets --snapshot suspend it all the same)")
	cmd.Flags().Lookup("memory").Usage = "memory limit, like 256MiB (default limits.memory if set, else limits.max_memory: a one-shot run is your own program)"
	cmd.Flags().Lookup("stdout-cap").Usage = "most bytes the guest may write to stdout, like 8MiB (default limits.stdout if set, else limits.max_stdout)"
	cmd.Flags().StringVar(&f.checkpoint, "checkpoint", "", "file the guest's checkpoint is loaded from (if it exists) and saved to")
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "file a signal suspends the guest into, and that resumes it when it exists (any guest: no SDK needed)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "log the outcome as a log line (default: the guest's output only, and one line saying why when the run did not succeed)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the outcome as a JSON object (with the guest's stdout in it) instead of the guest's stdout")
	cmd.Flags().StringVar(&f.exitCode, "exit-code", exitCodeRunner, "runner: exit with the outcome's code (the table above); guest: with the guest's own exit code whenever it exited")
	return cmd
}

// newRuntime builds the sandbox runtime of `runner run` and `runner
// call`. It uses the compilation cache in data_dir when data_dir exists,
// and creates nothing there: without it, the cache in the user's cache
// directory, or none (cache.go). The cache is pruned first.
func (a *app) newRuntime(ctx context.Context, resumable bool) (*sandbox.Runtime, error) {
	cfg := a.sandboxConfig()
	cfg.Resumable = cfg.Resumable || resumable
	dir, err := a.compileCacheDir(true)
	if err != nil {
		return nil, err
	}
	cfg.CacheDir = dir
	pruneCache(dir, a.cfg.Sandbox.CacheMaxBytes, a.log)
	return sandbox.New(ctx, cfg)
}

// sandboxConfig is the sandbox runtime's configuration.
func (a *app) sandboxConfig() sandbox.Config {
	return sandbox.Config{
		MaxMemoryBytes: a.cfg.Policy.Max.MemoryBytes,
		Defaults:       a.cfg.sandboxDefaults(),
		MaxModules:     a.cfg.MaxCompiledModules,
		MaxModuleBytes: a.cfg.MaxCompiledModuleBytes,
		CompileTimeout: a.cfg.Sandbox.CompileTimeout,
		CompileMemory:  a.cfg.Sandbox.CompileMemory,
		StopWatchdog:   a.cfg.Sandbox.StopWatchdog,
		ModuleLimits:   a.cfg.Sandbox.ModuleLimits,
		Interrupt:      a.cfg.Sandbox.Interrupt,
		Resumable:      a.cfg.Snapshots.Enabled,
		HostModules:    testHostModules(), // none, but in the end-to-end tests' build (testhooks_on.go)
		Logger:         a.log.Named("sandbox"),
	}
}

// sandboxDefaults are the configured per-task default limits (limits.*)
// as the sandbox takes them.
func (c *Config) sandboxDefaults() sandbox.Limits {
	l := pool.SandboxLimits(c.Limits)
	l.Grace = c.Grace
	return l
}

// parseMount reads host:guest[:rw|:rw+snapshots]. Whether the host side may be mounted is
// the queue's decision (tasks.CheckSpec applies mounts.allow at submission,
// the runner that runs the task again at each attempt).
func parseMount(s string) (tasks.Mount, error) {
	parts := strings.Split(s, ":")
	m := tasks.Mount{}
	switch {
	case len(parts) == 3 && (parts[2] == "rw" || parts[2] == "ro" || parts[2] == "rw+snapshots"):
		m.Writable = parts[2] != "ro"
		m.Snapshots = parts[2] == "rw+snapshots"
	case len(parts) == 2:
	default:
		return m, usageErrorf("--mount %q: want host:guest, host:guest:rw, or host:guest:rw+snapshots (writable, and the task may be suspended all the same)", s)
	}
	abs, err := filepath.Abs(parts[0])
	if err != nil {
		return m, usageErrorf("--mount %q: %v", s, err)
	}
	if !path.IsAbs(parts[1]) {
		return m, usageErrorf("--mount %q: the guest path %q is not absolute; want host:/data", s, parts[1])
	}
	m.HostPath, m.GuestPath = abs, parts[1]
	return m, nil
}

func parseEnv(kvs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--env %q: want KEY=VALUE", kv)
		}
		env[k] = v
	}
	return env, nil
}

// moduleFile is the module `runner run` compiles: a regular file, which
// is hashed as it is read and read whole only if need be
// (sandbox.Runtime.CompileFile), or the bytes of anything else that can be
// read once (a pipe, as from <(curl ...)).
type moduleFile struct {
	path string
	read bool // wasm holds the bytes, read already
	wasm []byte
}

// openModule checks the module path: missing or a directory is a usage
// error; a file that is not regular is read now.
func (a *app) openModule(path string) (moduleFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return moduleFile{}, usageErrorf("module: %v", err)
	}
	switch {
	case fi.IsDir():
		return moduleFile{}, usageErrorf("module: %s is a directory", path)
	case !fi.Mode().IsRegular():
		wasm, err := a.readModule(path)
		return moduleFile{path: path, read: true, wasm: wasm}, err
	}
	return moduleFile{path: path}, nil
}

// compile compiles the module in rt.
func (m moduleFile) compile(ctx context.Context, rt *sandbox.Runtime) (*sandbox.Module, error) {
	if m.read {
		return rt.Compile(ctx, m.wasm)
	}
	return rt.CompileFile(ctx, m.path)
}

// readModule reads a module file with a clear error, holding at most
// sandbox.module_limits' max_module_size (+1) bytes of it: a larger file,
// a device (/dev/zero) or a pipe that never ends is refused, not read
// into memory.
func (a *app) readModule(path string) ([]byte, error) {
	max := int64(a.cfg.Sandbox.ModuleLimits.WithDefaults().MaxModuleSize)
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErrorf("module: %v", err)
	}
	defer func() { _ = f.Close() }()
	over := func(what string) error {
		return usageErrorf("module: %s: %s, over the limit of %s (sandbox module limit max_module_size)", path, what, bytesize.Format(max))
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, usageErrorf("module: %v", err)
	}
	if fi.IsDir() {
		return nil, usageErrorf("module: %s is a directory", path)
	}
	if fi.Mode().IsRegular() && fi.Size() > max {
		return nil, over(bytesize.Format(fi.Size()))
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, usageErrorf("module: %s: %v", path, err)
	}
	if int64(len(b)) > max {
		return nil, over("more than " + bytesize.Format(max))
	}
	return b, nil
}

func (a *app) runTask(ctx context.Context, path string, f runFlags) error {
	ph := a.newPhases() // diag.go: each step's duration at log.level debug
	defer ph.done("runner run phases")
	ph.mark("after_config")
	// The module is hashed and, only if it must be prepared, read when it
	// is compiled (sandbox.Runtime.CompileFile); a missing one is a usage
	// error before anything is built.
	module, err := a.openModule(path)
	if err != nil {
		return err
	}
	in, err := f.parse()
	if err != nil {
		return err
	}
	if f.exitCode != exitCodeRunner && f.exitCode != exitCodeGuest {
		return usageErrorf("--exit-code %q: want runner (the default) or guest", f.exitCode)
	}
	// `runner run` is the operator's own command: any directory may be
	// mounted, and its input is streamed (no limits.max_input). The spec
	// is checked like a queued one otherwise, and its mounts opened once:
	// the sandbox mounts those directories, never their paths again.
	policy := a.cfg.Policy
	policy.MountsAllow, policy.MaxInput = []string{"/"}, 0
	f.oneShotLimits(&in.spec.Limits, policy.Max)
	if err := checkSpec(in.spec, policy); err != nil {
		return err
	}
	mounts, err := tasks.OpenMounts(in.spec.Mounts, policy.MountsAllow)
	if err != nil {
		return usageErrorf("--mount: %v", err)
	}
	defer func() { _ = tasks.CloseMounts(mounts) }()
	spec := pool.SandboxSpec(filepath.Base(path), in.spec, mounts)
	spec.StderrTee = a.stderr
	switch {
	case in.fromStdin:
		spec.Stdin = a.stdin
	case in.inputFile != "":
		// Streamed, as stdin is: a file of any size costs no memory.
		f, err := os.Open(in.inputFile)
		if err != nil {
			return usageErrorf("--input: %v", err)
		}
		defer func() { _ = f.Close() }()
		spec.Stdin = f
	}
	if f.checkpoint != "" {
		// Its directory is opened once, here: the guest may hold it in a
		// mount and change what its path names (checkpointfile.go).
		ckpt, err := openCheckpointFile(f.checkpoint)
		if err != nil {
			return usageErrorf("--checkpoint: %v", err)
		}
		defer func() { _ = ckpt.Close() }()
		cp, err := ckpt.read(a.cfg.Policy.Max.Checkpoint)
		switch {
		case err == nil:
			spec.Checkpoint = cp
			a.log.Info("resuming from checkpoint", zap.String("file", f.checkpoint), zap.Int("bytes", len(cp)))
		case errors.Is(err, os.ErrNotExist):
		default:
			return usageErrorf("--checkpoint: %v", err)
		}
		spec.SaveCheckpoint = func(_ context.Context, blob []byte) error {
			return ckpt.write(blob)
		}
	}

	var snap *snapshotFile
	if f.snapshot != "" {
		if snap, err = openSnapshotFile(f.snapshot); err != nil { // snapshotfile.go
			return usageErrorf("--snapshot: %v", err)
		}
		spec.Resume = snap.prior
	}

	ph.mark("spec")
	rt, err := a.newRuntime(ctx, snap != nil)
	if err != nil {
		return err
	}
	defer func() {
		ph.mark("until_close")
		_ = rt.Close(context.Background())
		ph.mark("close")
	}()
	ph.mark("new_runtime")

	// Signals: the first asks the guest to stop, the second forces it.
	stop, hard, release := a.stopOnSignals(ctx, "guest")
	defer release()
	spec.Stop = stop
	if snap != nil {
		spec.Stop, spec.Suspend = nil, stop // set again below if the module cannot suspend
	}

	// The attempt's timeout counts from the guest's start, once the
	// module is compiled; RunBounded returns even if the guest does not
	// end when forced (the watchdog).
	spec.Started = time.Now()
	mod, out, err := a.compileForRun(hard, rt, module, spec.Started)
	if err != nil {
		return err
	}
	if out == nil {
		spec.Started = time.Now()
	}
	ph.mark("compile")
	if snap != nil && out == nil && !mod.Resumable() {
		a.log.Warn("this module cannot be made resumable: a signal stops it as without --snapshot (docs/sandbox.md, \"Suspend and resume\")",
			zap.String("module", path))
		spec.Stop, spec.Suspend = stop, nil
	} else if snap != nil && out == nil && a.cfg.Sandbox.Interrupt == sandbox.InterruptWazero {
		a.log.Warn("with --sandbox-interrupt wazero a guest in a loop that calls nothing is never asked to suspend: a signal then waits for it, and a second forces it and loses its work; leave sandbox.interrupt at checks for --snapshot (docs/sandbox.md, \"Suspend and resume\")",
			zap.String("module", path))
	}
	if out == nil {
		out, err = rt.RunBounded(hard, mod, spec)
		if err != nil {
			return usageErrorf("%v", err)
		}
		ph.mark("run")
	}
	ended := time.Now()
	if !f.quiet {
		a.logOutcome(path, out)
	} else if !out.Success() {
		fmt.Fprintf(a.stderr, "runner: %s: %s\n", filepath.Base(path), termLines(out.String()))
	}
	if report := pool.TrapReport(out); report != "" {
		_, _ = io.WriteString(a.stderr, report) // where the trap was, on stderr as wazero's CLI writes it
	}
	if snap != nil {
		if err := snap.settle(out); err != nil { // snapshotfile.go: write it, or remove it once the task ended
			return err
		}
	}
	if f.asJSON {
		if err := a.printJSON(runReportOf(path, out, spec, ended)); err != nil {
			return err
		}
	} else {
		stdout := out.Stdout
		if spec.Resume != nil {
			stdout = stdout[min(len(stdout), spec.Resume.StdoutLen()):] // written by the runs before
		}
		_, _ = a.stdout.Write(stdout)
	}
	code := outcomeExitCode(out.Kind)
	if f.exitCode == exitCodeGuest {
		code = guestExitCode(out, code)
	}
	if code != 0 {
		return &exitError{code: code, err: errOutcomeLogged}
	}
	return nil
}

// guestExitCode is `runner run --exit-code guest`'s exit code: the guest's
// own when it exited (0 on success; a code over 255 is 255, never a
// success once truncated), the outcome's code otherwise.
func guestExitCode(out *sandbox.Outcome, outcomeCode int) int {
	switch out.Kind {
	case sandbox.KindSucceeded:
		return 0
	case sandbox.KindFailed, sandbox.KindInterrupted:
		if out.ExitCode == 0 {
			return outcomeCode
		}
		return int(min(out.ExitCode, 255))
	}
	return outcomeCode
}

// runReport is `runner run --json`'s output: the outcome as an attempt of
// a queued task records it (tasks.Attempt, as `runner tasks show --json`
// prints it), with what only a direct run has.
type runReport struct {
	// Module is the module file run.
	Module string `json:"module"`
	tasks.Attempt
	// TaskID and Owner shadow the attempt's: a direct run has neither.
	TaskID int64  `json:"task_id,omitempty"`
	Owner  string `json:"owner,omitempty"`
	// Stdout is the guest's stdout when it is valid UTF-8, StdoutBase64
	// otherwise.
	Stdout           *string `json:"stdout,omitempty"`
	StdoutBase64     []byte  `json:"stdout_base64,omitempty"`
	StdoutBytes      int64   `json:"stdout_bytes"`
	StderrBytes      int64   `json:"stderr_bytes"`
	PeakMemoryBytes  int64   `json:"peak_memory_bytes"`
	CheckpointsSaved int     `json:"checkpoints_saved"`
	// Stack is a trap's wasm stack trace (function names from the
	// module's name section), innermost frame first, one per line.
	Stack string `json:"stack,omitempty"`
}

func runReportOf(path string, out *sandbox.Outcome, spec sandbox.Spec, ended time.Time) runReport {
	att := pool.AttemptOf(out, spec.Started, ended)
	att.Number, att.Resumed = 1, spec.Checkpoint != nil
	r := runReport{Module: path, Attempt: att, StdoutBytes: out.StdoutBytes, StderrBytes: out.StderrBytes,
		PeakMemoryBytes: out.PeakMemoryBytes, CheckpointsSaved: out.CheckpointsSaved, Stack: out.Stack}
	if utf8.Valid(out.Stdout) {
		s := string(out.Stdout)
		r.Stdout = &s
	} else {
		r.StdoutBase64 = out.Stdout
	}
	return r
}

// compileForRun compiles the module under hard, not under the attempt's
// timeout (compiling is not the attempt: the compile budget,
// sandbox.compile_timeout, bounds it). A compile that lasts longer than
// compileNotice says so on a terminal. A module that cannot run, or a
// forced stop while compiling, is the returned outcome; a file that cannot
// be read is a usage error.
func (a *app) compileForRun(hard context.Context, rt *sandbox.Runtime, module moduleFile, started time.Time) (*sandbox.Module, *sandbox.Outcome, error) {
	done := make(chan struct{})
	defer close(done)
	if a.stderrIsTerminal() {
		go func() {
			select {
			case <-done:
			case <-time.After(compileNotice):
				fmt.Fprintf(a.stderr, "runner: compiling %s (once: the compiled form is cached; not counted against --timeout)...\n", filepath.Base(module.path))
			}
		}()
	}
	mod, err := module.compile(hard, rt)
	if err == nil {
		a.nameInCache(rt, mod, module.path)
	}
	var me *sandbox.ModuleError
	var pathErr *fs.PathError
	var out *sandbox.Outcome
	switch {
	case err == nil:
		return mod, nil, nil
	case errors.As(err, &pathErr):
		return nil, nil, usageErrorf("module: %v", err)
	case errors.As(err, &me):
		out = sandbox.OutcomeFromError(err)
	case hard.Err() != nil:
		out = &sandbox.Outcome{Kind: sandbox.KindForced, Message: "stopped by force while compiling the module: " + context.Cause(hard).Error()}
	default:
		return nil, nil, err
	}
	out.Duration = time.Since(started)
	return nil, out, nil
}

// compileNotice is how long a compile of runner run goes before it says
// so on a terminal.
const compileNotice = time.Second

// stderrIsTerminal reports whether the command's stderr is a terminal.
func (a *app) stderrIsTerminal() bool {
	_, ok := terminalFd(a.stderr)
	return ok
}

func (a *app) logOutcome(path string, out *sandbox.Outcome) {
	fields := []zap.Field{
		zap.String("module", path), zap.String("outcome", string(out.Kind)),
		zap.Duration("duration", out.Duration), zap.Int64("peak_memory_bytes", out.PeakMemoryBytes),
		zap.Int64("work_units", out.WorkUnits),
		zap.Int64("stdout_bytes", out.StdoutBytes), zap.Int64("stderr_bytes", out.StderrBytes),
		zap.Int("checkpoints_saved", out.CheckpointsSaved),
	}
	if out.Message != "" {
		fields = append(fields, zap.String("reason", out.Message))
	}
	if out.Kind == sandbox.KindFailed || out.Kind == sandbox.KindInterrupted {
		fields = append(fields, zap.Uint32("exit_code", out.ExitCode))
	}
	if out.Stack != "" {
		fields = append(fields, zap.String("stack", out.Stack))
	}
	if out.Success() {
		a.log.Info("task finished", fields...)
	} else {
		a.log.Warn("task did not succeed", fields...)
	}
}

// stopOnSignals wires the ladder of a one-shot run (runner run, runner
// call): the first SIGINT/SIGTERM closes the returned stop channel (the
// guest is asked to stop), the second cancels the returned hard context
// (it is forced). what names the guest in the log. Call release when the
// run is over: it cancels hard and gives the signals their default back.
func (a *app) stopOnSignals(ctx context.Context, what string) (stop chan struct{}, hard context.Context, release func()) {
	stop = make(chan struct{})
	hard, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for {
			select {
			case s := <-sigs:
				n++
				if n == 1 {
					a.log.Info("stop requested; a second signal forces the "+what, zap.String("signal", s.String()))
					close(stop)
				} else {
					a.log.Warn("forcing the "+what, zap.String("signal", s.String()))
					cancel(fmt.Errorf("second signal (%s)", s))
					return
				}
			case <-hard.Done():
				return
			}
		}
	}()
	return stop, hard, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}
