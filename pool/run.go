package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

// worker runs claimed attempts one after another.
func (p *Pool) worker() {
	if p.work() {
		p.wg.Done()
	}
}

// work runs claimed attempts until the pool stops (true), or until the
// sandbox's stop watchdog abandons this goroutine's attempt (false): the
// goroutine that took its place (takeOver) holds its count in p.wg.
func (p *Pool) work() bool {
	for {
		var a *attempt
		select {
		case a = <-p.urgent: // first (claim.go, hand)
		default:
			select {
			case a = <-p.urgent:
			case a = <-p.ready:
			case <-p.done:
				return true
			}
		}
		p.moved.Store(p.cfg.Now().UnixNano())
		p.taken(a)
		select {
		case <-p.intakeStopped: // claimed ahead, never started: give it back
			p.release([]*attempt{a})
		default:
			if !p.runAttempt(a) {
				return false
			}
		}
	}
}

// runAttempt runs and records an attempt. It returns false if the stop
// watchdog abandoned it: it was recorded by takeOver, and this goroutine
// is no longer a worker.
func (p *Pool) runAttempt(a *attempt) bool {
	defer a.cancel(nil)
	defer a.releaseMounts() // an abandoned run holds descriptors of its own
	t := a.claimed.Task
	a.started = p.cfg.Now()
	p.begin(a) // shown claimed until then
	p.mu.Lock()
	p.stats.Started++
	p.mu.Unlock()
	p.emit(Event{Kind: EventStarted, TaskID: t.ID, Number: a.claimed.Lease.Token, Queue: t.Queue, Tenant: t.Tenant, Waited: max(a.started.Sub(t.RunAt), 0)})
	if ce := p.log.Check(zap.DebugLevel, "attempt started"); ce != nil {
		ce.Write(zap.Int64("task", t.ID), zap.Int("attempt", a.claimed.Lease.Token), zap.Bool("resumed", a.claimed.Task.CheckpointSize >= 0))
	}
	select {
	case <-p.stopRequested: // started just as the stop was requested
		a.byPool.Store(true)
		a.softStop()
	default:
	}
	out := p.grantMounts(a)
	if out == nil {
		out = p.loadInput(a)
	}
	if out == nil {
		out = p.execute(a.ctx, a)
	}
	if out.Abandoned {
		return false
	}
	p.record(a, out)
	return true
}

// takeOver handles an attempt the sandbox's stop watchdog abandoned: its
// guest did not end after the forced stop, and its worker is stuck in it
// (the sandbox counts the stray, Stats.Stray). A new goroutine records
// the attempt and takes the worker's place. Called by the watchdog: it
// must not block.
func (p *Pool) takeOver(a *attempt, out *sandbox.Outcome) {
	p.log.Error("attempt abandoned: its guest did not end after the forced stop; a new worker takes its place",
		zap.Int64("task", a.claimed.Task.ID), zap.Int("attempt", a.claimed.Lease.Token), zap.String("reason", out.Message))
	go func() {
		p.record(a, out)
		a.cancel(nil)
		p.worker()
	}()
}

// execute compiles (once per hash) and runs the task. Compiling is not
// the attempt: the compile budget (sandbox.Config.CompileTimeout) bounds
// it, and the attempt's timeout counts from the guest's start.
func (p *Pool) execute(ctx context.Context, a *attempt) *sandbox.Outcome {
	t := a.claimed.Task
	mod, ok := p.exec.Lookup(t.Module)
	if !ok {
		var out *sandbox.Outcome
		t0 := p.cfg.Now()
		mod, out = p.loadAndCompile(ctx, a)
		// Not the task's run time: the pool's average (claimAhead) leaves
		// it out, or one compilation would stop claims ahead for the
		// tens of attempts the average takes to forget it.
		a.setup = p.cfg.Now().Sub(t0)
		if out != nil {
			return out
		}
	}
	if out := p.readPayload(ctx, a); out != nil {
		return out
	}
	started := time.Now()
	t = a.claimed.Task
	spec := SandboxSpec("task-"+fmt.Sprint(t.ID), t.Spec, a.mounts) // mounts resolved and checked by grantMounts
	spec.Task = fmt.Sprint(t.ID)                                    // the call's identity, for host functions
	if a.hasInput {
		spec.Input = a.input // Config.Input: the input lives outside the store
	}
	spec.Checkpoint, spec.Stop = a.claimed.Checkpoint, a.stop
	spec.SaveCheckpoint = func(ctx context.Context, blob []byte) error {
		err := p.store.SaveCheckpoint(ctx, a.claimed.Lease, blob)
		if errors.Is(err, tasks.ErrStaleLease) {
			return fmt.Errorf("%w: %w", sandbox.ErrLeaseLost, err)
		}
		if err == nil {
			p.emit(Event{Kind: EventCheckpointed, TaskID: t.ID, Number: a.claimed.Lease.Token})
		}
		return err
	}
	spec.Progress = func(done, total int64) { a.progress.Store(&[2]int64{done, total}) }
	spec.Started = started
	spec.OnAbandon = func(out *sandbox.Outcome) { p.takeOver(a, out) }
	snaps := p.snapshotsFor(a, mod) // snapshot.go; nil: this guest is not suspended
	if snaps != nil {
		spec.Resume, spec.Suspend = snaps.resumeFrom(ctx), a.suspend
		if p.cfg.SnapshotEvery > 0 {
			spec.SnapshotEvery, spec.OnSnapshot = p.cfg.SnapshotEvery, snaps.background
		}
		a.suspendable.Store(true)
		defer close(a.ran)
		if p.suspending.Load() { // ForceStop came before suspendable was set
			a.suspendNow()
		}
	}
	out, err := p.exec.Run(ctx, mod, spec)
	if spec.Resume != nil && errors.Is(err, sandbox.ErrSnapshotMismatch) {
		snaps.drop(ctx, err)
		a.resumedFrom.Store(nil)
		snaps.markResumed(ctx, nil)
		spec.Resume = nil
		out, err = p.exec.Run(ctx, mod, spec)
	}
	if err == nil && spec.Resume != nil && errors.Is(out.Err, sandbox.ErrSnapshotMismatch) {
		snaps.drop(ctx, out.Err) // damaged: the next attempt starts afresh (record.go: not counted)
	}
	if err == nil && a.resumedFrom.Load() != nil {
		p.mu.Lock()
		p.stats.Resumed++
		p.mu.Unlock()
	}
	if err == nil && out.Kind == sandbox.KindSuspended {
		if serr := snaps.last(out.Snapshot); serr != nil {
			a.unstored = serr // record.go says so in the attempt's reason
		} else {
			p.mu.Lock()
			p.stats.Suspended++
			p.mu.Unlock()
		}
		out.Snapshot = nil // stored: the attempt holds its memory no longer
	}
	if errors.Is(err, sandbox.ErrWorkNeedsChecks) {
		// A work budget on a runner in wazero interrupt mode: refused
		// (mounts.go), like a mount this runner does not grant.
		return &sandbox.Outcome{Kind: KindRefused, Message: err.Error(), Err: err}
	}
	if err != nil {
		p.runtimeClosed(a, err)
		return sandbox.OutcomeFromError(err)
	}
	return out
}

// loadAndCompile reads a task's module from the store and compiles it (the
// first attempt of a module this runner has not compiled), or returns the
// attempt's outcome when it cannot.
func (p *Pool) loadAndCompile(ctx context.Context, a *attempt) (*sandbox.Module, *sandbox.Outcome) {
	t := a.claimed.Task
	wasm, err := p.store.Module(ctx, t.Module)
	switch {
	case ctx.Err() != nil:
		return nil, forcedOutcome(ctx, "while loading the module")
	case errors.Is(err, tasks.ErrModuleNotFound):
		return nil, &sandbox.Outcome{Kind: sandbox.KindInvalidModule, Message: "load module: " + err.Error(), Err: err}
	case err != nil: // a store failure: worth another attempt
		return nil, &sandbox.Outcome{Kind: sandbox.KindFailed, Message: "load module: " + err.Error(), Err: err}
	}
	if got := sandbox.SHA256(wasm); got != t.Module {
		return nil, &sandbox.Outcome{Kind: sandbox.KindInvalidModule, Message: fmt.Sprintf("stored module bytes hash to %s, not %s: the store is corrupt", got, t.Module)}
	}
	mod, err := p.exec.Compile(ctx, wasm)
	if err != nil {
		if ctx.Err() != nil {
			return nil, forcedOutcome(ctx, "while compiling")
		}
		p.runtimeClosed(a, err)
		return nil, sandbox.OutcomeFromError(err)
	}
	p.nameInCache(ctx, mod)
	return mod, nil
}

// cacheNamer is an Executor that names its modules in its on-disk
// compilation cache (sandbox.Runtime.NameInCache).
type cacheNamer interface {
	NameInCache(mod *sandbox.Module, name string) error
}

// nameInCache gives mod, just compiled, the name the store has for it (a
// module uploaded with a name: tasks.Store.NameModule) in the executor's
// compilation cache, so that a listing of the cache (runner cache list)
// says which program each entry is. Once per module and process (a module
// compiled is looked up after that), and only with an on-disk cache; a
// failure is logged at debug, never the attempt's.
func (p *Pool) nameInCache(ctx context.Context, mod *sandbox.Module) {
	n, ok := p.exec.(cacheNamer)
	if !ok || p.exec.Config().CacheDir == "" {
		return
	}
	names, err := p.store.ModuleNames(ctx, []string{mod.SHA256})
	if err == nil && names[mod.SHA256] != "" {
		err = n.NameInCache(mod, names[mod.SHA256])
	}
	if err != nil {
		p.log.Debug("compilation cache: naming a module", zap.String("module", mod.SHA256), zap.Error(err))
	}
}

// runtimeClosed handles a sandbox runtime closed under the pool (its owner
// stopping out of order): the attempt counts as stopped by the pool (the
// task is queued again at once, not counted), and the pool takes no more
// tasks, since it cannot run any.
func (p *Pool) runtimeClosed(a *attempt, err error) {
	if !errors.Is(err, sandbox.ErrClosed) {
		return
	}
	a.byPool.Store(true)
	p.stopIntakeOnce.Do(func() {
		p.log.Error("the sandbox runtime was closed while the pool ran; it takes no more tasks")
		close(p.intakeStopped)
	})
}

func forcedOutcome(ctx context.Context, when string) *sandbox.Outcome {
	return &sandbox.Outcome{Kind: sandbox.KindForced, Message: "stopped by force " + when + ": " + context.Cause(ctx).Error()}
}

// readPayload reads the input and the checkpoint a claim left out
// (tasks.ClaimInline: those over 64 KiB are read only when their attempt
// starts, so that tasks claimed ahead hold little). A failure is the
// store's: the attempt fails, to be retried.
func (p *Pool) readPayload(ctx context.Context, a *attempt) *sandbox.Outcome {
	input, checkpoint := a.claimed.PayloadLeftOut()
	input = input && !a.hasInput // Config.Input gave the attempt its input
	fail := func(what string, err error) *sandbox.Outcome {
		if ctx.Err() != nil {
			return forcedOutcome(ctx, "while reading the "+what)
		}
		return &sandbox.Outcome{Kind: sandbox.KindFailed, Message: "read " + what + ": " + err.Error(), Err: err}
	}
	if input {
		t, err := p.store.Get(ctx, a.claimed.Task.ID)
		if err == nil && len(t.Input) != a.claimed.Task.InputSize {
			err = fmt.Errorf("the store gave %d bytes of a %d-byte input", len(t.Input), a.claimed.Task.InputSize)
		}
		if err != nil {
			return fail("input", err)
		}
		a.claimed.Task.Input = t.Input
	}
	if checkpoint {
		cp, err := p.store.Checkpoint(ctx, a.claimed.Task.ID)
		if err == nil && cp == nil {
			err = errors.New("the checkpoint is gone")
		}
		if err != nil {
			return fail("checkpoint", err)
		}
		a.claimed.Checkpoint = cp
	}
	return nil
}
