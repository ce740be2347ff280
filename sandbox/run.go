package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/mountfs"
)

// Mount exposes a host directory to the guest, read-only unless Writable.
type Mount struct {
	HostPath            string
	GuestPath           string
	Writable, Snapshots bool     // Snapshots: writable, and the run may suspend all the same (writes after a snapshot are not undone)
	Dir                 *os.File // when set, the directory itself, opened and checked by the caller (tasks.OpenMounts); else HostPath is opened once, at the start of the run or the plugin's load
}

// Spec is one run: what the guest is given (docs/sandbox.md, "A run's spec").
type Spec struct {
	Name           string                                       // argv[0] (default "task")
	Input          []byte                                       // the guest's stdin
	Stdin          io.Reader                                    // when set, the guest's stdin instead of Input
	Args           []string                                     // follow argv[0]
	Env            map[string]string                            // the only environment variables the guest sees
	Mounts         []Mount                                      // the only files the guest sees
	Limits         Limits                                       // zero fields take the runtime's defaults
	Checkpoint     []byte                                       // the checkpoint this run starts from (nil: none)
	SaveCheckpoint func(ctx context.Context, blob []byte) error // stores a checkpoint durably (nil: Outcome.Checkpoint only)
	Progress       func(done, total int64)                      // receives progress reports; must not block
	Stop           <-chan struct{}                              // the soft stop: once closed, stop_requested returns 1
	StderrTee      io.Writer                                    // also receives the guest's stderr as it is written
	Started        time.Time                                    // when the attempt began, if before Run (Limits.Timeout counts from it)
	Export         string                                       // when set, the export to call with Input, as a plugin call
	Task           string                                       // who the run is for, as host functions see it (Call.Task)
	Labels         map[string]string                            // and its labels (Call.Labels)
	OnAbandon      func(*Outcome)                               // called if the stop watchdog abandons the run; must not block
	Suspend        <-chan struct{}                              // once closed, a resumable guest suspends at its next point (KindSuspended)
	Resume         *Snapshot                                    // the snapshot this run resumes (nil: it starts afresh)
	SnapshotEvery  time.Duration                                // a resumable guest's snapshot goes to OnSnapshot this often (of run time), and it goes on
	OnSnapshot     func(*Snapshot)                              // takes them (the guest waits: store them elsewhere)

	suspendAfter   int              // tests: with Suspend closed, how many interrupts pass before the guest is asked
	inspect        func(api.Module) // tests: sees the instance once the guest has returned
	snapshotPoints int              // tests: a background snapshot at every this many interrupts, not by time (SnapshotEvery)
}

// Validate reports a spec that cannot run (a bad mount, say).
func (s *Spec) Validate() error {
	var errs []error
	if len(s.Mounts) > maxMounts {
		errs = append(errs, fmt.Errorf("%d mounts: a run may have at most %d", len(s.Mounts), maxMounts))
	}
	for _, m := range s.Mounts[:min(len(s.Mounts), maxMounts)] { // no os.Stat for each of a million
		if m.GuestPath == "" || !path.IsAbs(m.GuestPath) {
			errs = append(errs, fmt.Errorf("mount %q: guest path must be absolute", m.GuestPath))
		}
		if err := m.check(); err != nil { // Dir when set (mount.go)
			errs = append(errs, err)
		}
	}
	for k, v := range s.Env {
		if err := checkEnvVar(k, v); err != nil { // environ.go
			errs = append(errs, err)
			break // one is enough: a million bad keys make no better message
		}
	}
	if err := s.Limits.validate(); err != nil {
		errs = append(errs, err)
	}
	if s.Export != "" && s.Stdin != nil {
		errs = append(errs, errors.New("a run that calls an export takes Input, not Stdin"))
	}
	return errors.Join(errs...)
}

// Run runs one task in a fresh instance of mod. ctx is the hard context; the
// error is only for a spec that cannot run or a closed runtime.
func (r *Runtime) Run(ctx context.Context, mod *Module, spec Spec) (*Outcome, error) {
	if mod == nil {
		return nil, errors.New("sandbox: nil module")
	}
	if r.closing.Load() {
		return nil, ErrClosed
	}
	if out := refusedOutcome(mod); out != nil {
		return out, nil
	}
	if !mod.Command && spec.Export == "" {
		return OutcomeFromError(errNotCommand), nil
	}
	// Only what is bounded whatever the spec happens before the run is
	// watched; what grows with the spec (its mounts, arguments, environment
	// and input) after, under its timeout and the watchdog.
	if err := spec.Limits.validate(); err != nil {
		return nil, fmt.Errorf("sandbox: invalid spec: %w", err)
	}
	if spec.Resume != nil {
		if spec.Export != "" {
			return nil, errors.New("sandbox: invalid spec: a plugin call cannot resume a snapshot")
		}
		if err := spec.Resume.check(mod, &spec); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	if spec.Export != "" && spec.Stdin != nil {
		return nil, errors.New("sandbox: invalid spec: a run that calls an export takes Input, not Stdin")
	}
	if err := r.waitImports(); err != nil { // runtime.go: New instantiates them aside
		return nil, err
	}
	start := time.Now()
	lim := spec.Limits.Or(r.cfg.Defaults)
	// wazero counts memory in pages: the limit is rounded up to a page,
	// and capped by the runtime's ceiling (rounded down).
	memPages := min(pagesFor(lim.MemoryBytes), uint32(r.cfg.MaxMemoryBytes/PageSize))
	if minPages := uint32(mod.MinMemoryBytes / PageSize); minPages > memPages {
		return &Outcome{Kind: KindMemoryLimit, Message: fmt.Sprintf(
			"module declares a minimum memory of %d pages (%s), over the task's limit of %d pages (%s)%s",
			minPages, pagesString(minPages), memPages, pagesString(memPages), limitHint(KindMemoryLimit, false))}, nil
	}
	lim.MemoryBytes = int64(memPages) * PageSize
	if lim.Work > 0 && !r.cfg.Interrupt.loopChecks() {
		return nil, fmt.Errorf("sandbox: invalid spec: %w", ErrWorkNeedsChecks)
	}

	var setupErrResume error // a resumed run's stdin could not be read up to where it was
	// One allocation holds the run's state, its stdio and its memory budget.
	tr := &taskRun{st: runState{stopCh: spec.Stop, checkpoint: spec.Checkpoint, maxCP: lim.MaxCheckpoint,
		save: spec.SaveCheckpoint, onProgress: spec.Progress}}
	st := &tr.st
	if mod.resumable && spec.Export == "" && mountsSuspendable(spec.Mounts) {
		st.resumable = spec.Suspend != nil || (spec.SnapshotEvery > 0 || spec.snapshotPoints > 0) && spec.OnSnapshot != nil
		st.suspendCh = spec.Suspend // resumable.go
		st.suspendAfter = spec.suspendAfter
		if spec.OnSnapshot != nil && spec.SnapshotEvery > 0 {
			st.snapEvery = spec.SnapshotEvery
			st.nextSnap = monoNow() + int64(spec.SnapshotEvery)
		}
		if spec.OnSnapshot != nil {
			st.snapPoints = spec.snapshotPoints
		}
	}
	if spec.Task != "" || spec.Labels != nil {
		st.ident = &callIdentity{task: spec.Task, labels: spec.Labels}
	}
	var deadline time.Time
	if lim.Timeout > 0 {
		deadline = start.Add(lim.Timeout)
		if !spec.Started.IsZero() {
			deadline = spec.Started.Add(lim.Timeout)
		}
		st.deadline = monoOf(deadline)
		st.softAt = monoAdd(st.deadline, -lim.grace())
	}
	// The hard context: ctx, ended at the deadline too, carrying st
	// (callctx.go: one allocation, and no timer unless something waits on
	// Done). Ended when Run returns.
	tr.runCtx = callContext{parent: ctx, deadline: st.deadline, at: deadline, st: st, imports: mod.hostMods}
	hard := &tr.runCtx
	defer hard.release()
	st.hard = hard
	r.watchRun(ctx, st, mod, &spec, monoOf(start), lim)
	// Past here every return goes through unwatchRun.
	if err := spec.Validate(); err != nil {
		if out := r.unwatchRun(st); out != nil {
			return out, nil // abandoned while it checked
		}
		return nil, fmt.Errorf("sandbox: invalid spec: %w", err)
	}

	// Each mount resolves every path beneath its directory (mountfs), a
	// directory held open (the caller's Mount.Dir, or one opened here
	// once, holdDirs: mount.go); its descriptors are released when the
	// run is over. They share one budget of open files and disk
	// (mountfs.Budget).
	var fsc wazero.FSConfig
	var mounts *mountfs.Budget
	if len(spec.Mounts) > 0 {
		ms, held, err := holdDirs(spec.Mounts)
		if err != nil {
			if out := r.unwatchRun(st); out != nil {
				return out, nil
			}
			return nil, fmt.Errorf("sandbox: invalid spec: %w", err)
		}
		defer closeFiles(held) // each mount made its own descriptors of them
		fsc = wazero.NewFSConfig()
		mounts = newMountBudget(lim)
		for _, m := range ms {
			mfs, err := mountfs.Open(m.HostPath, m.Dir, mounts)
			if err != nil {
				if out := r.unwatchRun(st); out != nil {
					return out, nil
				}
				return nil, fmt.Errorf("sandbox: invalid spec: mount %s: %w", m.HostPath, err)
			}
			defer mfs.Close()
			var mount experimentalsys.FS = mfs
			if !m.Writable {
				mount = mountfs.ReadOnly(mfs)
			}
			fsc = fsc.(sysfs.FSConfig).WithSysFSMount(mount, m.GuestPath)
		}
	}
	st.mounts = mounts
	st.stdout = cappedWriter{limit: lim.MaxStdout}
	st.stderr = cappedWriter{limit: lim.MaxStderr, tee: spec.StderrTee, ctx: hard}
	if spec.Stdin != nil {
		st.stdin = newStdinReader(hard, spec.Stdin, st.waitStdin)
	} else if spec.Export != "" {
		st.inputReader = stdinReader{ctx: hard, r: &st.input, direct: true} // the input goes to the export
		st.stdin = &st.inputReader
	} else {
		st.input.Reset(spec.Input)
		st.inputReader = stdinReader{ctx: hard, r: &st.input, direct: true}
		st.stdin = &st.inputReader
	}
	if s := spec.Resume; s != nil {
		// What the guest had written and read, and its clock, go on.
		st.stdout.buf.Write(s.stdout)
		st.stdout.total = s.stdoutBytes
		st.stderr.buf.Write(s.stderr)
		st.stderr.total = s.stderrBytes
		setupErrResume = skipStdin(st.stdin, s.stdinRead) // resumable.go
		st.stdinRead = s.stdinRead
		st.clockOffset = s.clock - monoNow()
		st.sleepLeft, st.sleepPending = s.sleepLeft, s.sleepLeft >= 0
	}
	tr.budget = memory.Budget{Limit: uint64(memPages) * PageSize, Pool: &r.pool, Image: mod.image}
	st.work.start(nil, max(lim.Work, 0))
	// The environment, built once (environ.go); hard's error if the
	// deadline comes first, and then the guest never starts.
	env, setupErr := newGuestEnv(hard, spec.Env)
	st.env = env

	slot := r.getSlot(st)
	cfg := slot.cfg
	if spec.Name != "" && spec.Name != defaultName || len(spec.Args) > 0 {
		name := spec.Name
		if name == "" {
			name = defaultName
		}
		cfg = cfg.WithArgs(append([]string{name}, spec.Args...)...)
	}
	if fsc != nil {
		cfg = cfg.WithFSConfig(fsc)
	}
	if setupErr == nil {
		setupErr = hard.Err()
	}
	if setupErr == nil {
		setupErr = setupErrResume
	}

	budget, stdout, stderr := &tr.budget, &st.stdout, &st.stderr
	callCtx := experimental.WithMemoryAllocator(hard, budget)

	var err error
	var inst api.Module
	var snap *Snapshot
	ierr := setupErr
	leave := r.enterGuest() // interrupt.go: a start function runs in InstantiateModule
	if ierr == nil {
		inst, ierr = mod.rt.InstantiateModule(callCtx, mod.compiled, cfg)
	}
	if ierr != nil {
		err = ierr
	} else {
		if spec.Resume != nil {
			err = restoreSnapshot(inst, mod, st, spec.Resume) // resumable.go
		}
		if st.resumable && mod.hostPoints {
			st.inst = inst // a sleep or a read of stdin can suspend it (runState.unwindsInHostCall)
		}
		switch {
		case err != nil:
		case spec.Export != "":
			err = r.runExport(callCtx, inst, mod, st, spec.Export, spec.Input) // plugin.go
		default:
			entry := inst.ExportedFunction("_start")
			_, err = entry.Call(callCtx)
			for err == nil && st.snapshotDue && unwound(inst) { // a background snapshot: the guest goes on
				snapshotInPlace(inst, mod, st, &spec, start) // resumable.go
				_, err = entry.Call(callCtx)
			}
		}
		if err == nil && spec.Resume != nil {
			err = rewindEnded(inst, st) // resumable.go
		}
		if err == nil && mod.resumable && unwound(inst) {
			snap = takeSnapshot(inst, mod, st, &spec)
		}
		if spec.inspect != nil {
			spec.inspect(inst)
		}
		if !st.work.known() {
			st.work.use(inst)
		}
		_ = inst.Close(context.Background())
	}
	tr.budget.Release()    // memory.Budget: if wazero did not (a failed instantiation)
	runtime.KeepAlive(mod) // its image's file stays open while the instance maps it
	abandoned := r.unwatchRun(st)
	leave()
	r.putSlot(slot)
	if abandoned != nil {
		return abandoned, nil // what the watchdog told the caller
	}

	out := &Outcome{
		Output: st.output,
		Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(),
		StdoutBytes: stdout.total, StderrBytes: stderr.total,
		Checkpoint: st.lastCP, CheckpointsSaved: st.saved,
		ProgressDone: st.progDone, ProgressTotal: st.progTotal,
		PeakMemoryBytes: int64(budget.Peak()),
		WorkUnits:       st.work.units(),
		StopRequested:   st.sawStop.Load(),
		Duration:        time.Since(start),
	}
	r.classify(out, err, ierr != nil, ctx, hard, st, budget, stdout, stderr, lim)
	overBudgetAtEnd(out, lim.Work)                                  // work.go
	out.Message += limitHint(out.Kind, stderr.over && !stdout.over) // limithint.go
	if prior := spec.Resume; prior != nil {
		out.WorkUnits += prior.WorkUnits
	}
	if snap != nil && out.Kind == KindSucceeded {
		snap.WorkUnits, snap.RunTime = out.WorkUnits, out.Duration
		if prior := spec.Resume; prior != nil {
			snap.RunTime += prior.RunTime
		}
		out.Kind, out.ExitCode, out.Snapshot, out.Deadline = KindSuspended, 0, snap, st.suspendAtDeadline
		out.Message = fmt.Sprintf("suspended after %s of run time; its snapshot resumes it (%d pages of memory, %d frame values)",
			snap.RunTime.Round(time.Millisecond), len(snap.memory), len(snap.frames))
	}
	if ce := r.log.Check(zap.DebugLevel, "task run"); ce != nil {
		ce.Write(zap.String("module", mod.SHA256), zap.String("outcome", string(out.Kind)),
			zap.String("message", out.Message), zap.Duration("duration", out.Duration))
	}
	return out, nil
}

// classify fills out.Kind and out.Message. Order matters: our own limits
// first (they ended the guest on purpose), then the contexts, then the
// exit code, then anything else is a trap.
func (r *Runtime) classify(out *Outcome, err error, atInstantiate bool, caller, hard context.Context,
	st *runState, budget *memory.Budget, stdout, stderr *cappedWriter, lim Limits) {
	out.Err = err
	exitErr, isExit := err.(*sys.ExitError) // what wazero returns; errors.As alone would allocate
	if !isExit && err != nil {
		exitErr, isExit = asExitError(err)
	}
	switch {
	case err == nil || (isExit && exitErr.ExitCode() == 0):
		out.Kind, out.Message = KindSucceeded, ""
	case stdout.over:
		out.Kind, out.Message = KindOutputLimit, fmt.Sprintf("stdout over its limit of %d bytes", stdout.limit)
	case stderr.over:
		out.Kind, out.Message = KindOutputLimit, fmt.Sprintf("stderr over its limit of %d bytes", stderr.limit)
	case workFailure(err, out, lim.Work): // work.go
	case hard.Err() != nil && !attemptDeadline(caller, hard, st.deadlineTime()): // interrupt.go
		out.Kind, out.Message = KindForced, "stopped by force: "+context.Cause(caller).Error()
	case hard.Err() != nil:
		out.Kind, out.Deadline = KindTimedOut, true
		out.Message = fmt.Sprintf("%s timeout of %s reached; forced", st.noun(), lim.Timeout)
	case budget.Hit():
		out.Kind = KindMemoryLimit
		out.Message = fmt.Sprintf("memory limit of %d pages (%s) reached", lim.MemoryBytes/PageSize, pagesString(uint32(lim.MemoryBytes/PageSize)))
		if isExit {
			out.ExitCode = exitErr.ExitCode()
			out.Message += "; guest exited with code " + fmt.Sprint(out.ExitCode)
		} else {
			m, _ := splitTrap(err)
			var ke *extismkernel.Error // extism.go: an Extism plugin's alloc
			if errors.As(err, &ke) {
				m = ke.Error()
			}
			out.Message += "; " + m
		}
	case isExit:
		out.ExitCode = exitErr.ExitCode()
		if out.ExitCode == exitInterrupted && (st.sawStop.Load() || st.stopRequested()) {
			out.Kind, out.Message = KindInterrupted, "guest stopped on request"
			if !st.externalStop() {
				out.Deadline = true
				out.Message = "guest stopped at its " + st.noun() + " deadline"
			}
		} else {
			out.Kind, out.Message = KindFailed, exitMessage(out.ExitCode)
		}
	case callStackFailure(err, out, r.cfg.ModuleLimits.MaxCallStack): // callstack.go
	case wasiCountFailure(err, out): // wasicounts.go
	case hostFailure(err, out): // hostfunc.go: a host function failed or panicked
	case kernelFailure(err, out): // extism.go: an Extism plugin misused the kernel
	case conventionFailure(err, out): // plugin.go: a plugin call broke the calling convention
	case atInstantiate:
		out.Kind, out.Message = KindInvalidModule, "instantiate: "+err.Error()
	default:
		out.Kind = KindTrapped
		out.Message, out.Stack = splitTrap(err)
	}
}

// asExitError finds a wrapped *sys.ExitError in err.
func asExitError(err error) (*sys.ExitError, bool) {
	var e *sys.ExitError
	ok := errors.As(err, &e)
	return e, ok
}
