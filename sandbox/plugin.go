package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/mountfs"
)

// Errors of Plugin.Call for a call that cannot be made (the guest never
// runs); what the guest does is an Outcome.
var (
	ErrNoExport      = errors.New("no such export")  // none of that name, or not of the calling convention (docs/plugins.md)
	ErrInputTooLarge = errors.New("input too large") // the input is over the manifest's MaxInput
	ErrPluginClosed  = errors.New("plugin closed")   // the plugin was closed
)

// The calling convention's special exports (docs/plugins.md).
const (
	pluginAlloc      = "alloc"
	pluginInitialize = "_initialize"
)

// Plugin is a loaded module whose exports are called by name, bytes in and
// bytes out (docs/plugins.md), under its Manifest. It keeps warm
// instances across calls (unless Manifest.Fresh), at most
// Manifest.Instances at once. It is safe for concurrent use.
type Plugin struct {
	r       *Runtime
	mod     *Module
	man     Manifest
	lim     Limits
	exports map[string]*exportEntry
	last    atomic.Pointer[exportEntry] // the export the last call named (export)
	extism  bool                        // an Extism plugin (it imports ExtismModule): extism.go
	env     *guestEnv                   // Manifest.Env as its calls' guests see it (environ.go)
	ident   callIdentity                // the identity of a call without a task or labels (read-only)
	http    *pluginHTTP                 // Manifest.HTTP's client (extism_http.go); nil: no host allowed
	held    []*os.File                  // the mounts' directories, opened at load (holdMounts); closed by Close

	pcalls sync.Pool // *pluginCall of returned calls whose instance was discarded (a warm instance keeps its own; an abandoned call's is left to the GC)

	mu     sync.Mutex
	idle   []*pluginInstance
	closed bool
	busy   int           // calls holding one of Manifest.Instances places (acquire)
	freed  chan struct{} // closed when a place frees while calls wait for one (nil: none wait)

	calls, instantiations, discarded atomic.Int64
}

// exportEntry is an export that can be called, by name.
type exportEntry struct {
	name  string
	shape exportShape
}

// exportShape is the signature of an export under the convention.
type exportShape struct {
	input  bool // (ptr i32, len i32): takes the input
	output bool // -> i64: returns (ptr << 32 | len); Extism's: -> i32
	extism bool // Extism's convention: () -> i32 or () -> ()
}

// pluginInstance is one instance of a plugin, with what lives as long as
// it: its stdio slot, memory budget and mounts.
type pluginInstance struct {
	mod    api.Module
	slot   *ioSlot
	budget *memory.Budget
	mounts []*mountfs.FS
	disk   *mountfs.Budget // the mounts' open files and disk, for the instance's life; nil: no mounts
	funcs  map[string]api.Function
	last   string       // the export the last call looked up (export)
	lastFn api.Function // its function
	alloc  api.Function
	ext    *extismkernel.Kernel // an Extism plugin's kernel; nil otherwise
	pc     *pluginCall          // the call state its next call reuses (nil: one from the pool)
	gg     api.Global           // its work countdown, if known, which stood at left when its last call ended (work.go)
	left   int64
	stack  [2]uint64
	calls  int
}

// CallOptions are a call's optional settings.
type CallOptions struct {
	// Task and Labels say who the call is for: host functions see them
	// (Call.Task, Call.Labels).
	Task   string
	Labels map[string]string
	// Stop is the soft stop: once closed, stint.stop_requested returns 1.
	Stop <-chan struct{}
	// Timeout, when positive and shorter, replaces the manifest's timeout
	// for this call.
	Timeout time.Duration
	// Work, when positive and smaller, replaces the manifest's work budget
	// (PluginLimits.Work) for this call. In InterruptWazero mode a positive
	// Work is refused (ErrWorkNeedsChecks).
	Work int64
}

// PluginStats are a plugin's counters.
type PluginStats struct {
	// Calls counts calls made; Instantiations instances created;
	// Discarded instances dropped after a call that did not succeed (or
	// after every call, for a Fresh plugin).
	Calls, Instantiations, Discarded int64
	// Idle is how many warm instances wait for a call now.
	Idle int
}

// LoadPlugin compiles wasm (once per sha256, like Compile) and checks it
// against man: the manifest itself (ErrManifest), the expected sha256, the
// host modules the module imports (KindBadImport: an import the manifest
// does not grant), its declared memory (KindMemoryLimit). A module that
// cannot run is a *ModuleError. No instance is made until the first call.
func (r *Runtime) LoadPlugin(ctx context.Context, wasm []byte, man Manifest) (*Plugin, error) {
	if r.closing.Load() {
		return nil, ErrClosed
	}
	man = man.withDefaults(&r.cfg)
	mounts, held, err := holdMounts(man.Mounts)
	if err != nil {
		return nil, err
	}
	man.Mounts = mounts
	p, err := r.loadPlugin(ctx, wasm, man)
	if err != nil {
		closeFiles(held)
		return nil, err
	}
	p.held = held
	return p, nil
}

// loadPlugin is LoadPlugin once the manifest's mounts are held.
func (r *Runtime) loadPlugin(ctx context.Context, wasm []byte, man Manifest) (*Plugin, error) {
	if err := man.validate(r); err != nil {
		return nil, err
	}
	if man.SHA256 != "" {
		if got := SHA256(wasm); !strings.EqualFold(got, man.SHA256) {
			return nil, fmt.Errorf("%w: the module's sha256 is %s, the manifest expects %s", ErrManifest, got, strings.ToLower(man.SHA256))
		}
	}
	mod, err := r.Compile(ctx, wasm)
	if err != nil {
		return nil, err
	}
	if err := man.checkGrants(mod.compiled); err != nil {
		return nil, err
	}
	if minPages, limPages := uint32(mod.MinMemoryBytes/PageSize), pagesFor(man.Limits.MemoryBytes); minPages > limPages {
		return nil, &ModuleError{Kind: KindMemoryLimit, Message: fmt.Sprintf(
			"module declares a minimum memory of %d pages (%s), over the plugin's limit of %d pages (%s)",
			minPages, pagesString(minPages), limPages, pagesString(limPages))}
	}
	p := &Plugin{r: r, mod: mod, man: man, lim: man.Limits.runLimits(), exports: map[string]*exportEntry{},
		ident:  callIdentity{plugin: man.Name, config: man.Config},
		extism: importsExtism(mod.compiled), http: newPluginHTTP(man.HTTP, r.log.Named("http"), man.Name)}
	env, err := newGuestEnv(context.Background(), man.Env) // checked by man.validate: this only builds it, once
	if err != nil {
		return nil, fmt.Errorf("sandbox: plugin %s: %w", man.Name, err)
	}
	p.env = env
	shapeOf := shapeOf
	if p.extism {
		shapeOf = extismShape // one convention per plugin: Extism's (extism.go)
	}
	for name, def := range mod.compiled.ExportedFunctions() {
		if shape, ok := shapeOf(def); ok {
			p.exports[name] = &exportEntry{name: name, shape: shape}
		}
	}
	if def, ok := mod.compiled.ExportedFunctions()[pluginAlloc]; ok && !p.extism {
		if !sameTypes(def.ParamTypes(), []ValueType{I32}) || !sameTypes(def.ResultTypes(), []ValueType{I32}) {
			return nil, &ModuleError{Kind: KindInvalidModule, Message: "export alloc must be (i32) -> i32 (docs/plugins.md)"}
		}
	}
	return p, nil
}

// shapeOf reports the convention's shape of an export: params () or
// (i32, i32), results () or (i64).
func shapeOf(def api.FunctionDefinition) (exportShape, bool) {
	var s exportShape
	switch ps := def.ParamTypes(); {
	case len(ps) == 0:
	case sameTypes(ps, []ValueType{I32, I32}):
		s.input = true
	default:
		return s, false
	}
	switch rs := def.ResultTypes(); {
	case len(rs) == 0:
	case sameTypes(rs, []ValueType{I64}):
		s.output = true
	default:
		return s, false
	}
	return s, true
}

// Name is the plugin's name (Manifest.Name).
func (p *Plugin) Name() string { return p.man.Name }

// Module is the plugin's compiled module.
func (p *Plugin) Module() *Module { return p.mod }

// Exports lists the exports that can be called, sorted.
func (p *Plugin) Exports() []string {
	names := make([]string, 0, len(p.exports))
	for n := range p.exports {
		if n != pluginAlloc && n != pluginInitialize {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Stats returns the plugin's counters.
func (p *Plugin) Stats() PluginStats {
	p.mu.Lock()
	idle := len(p.idle)
	p.mu.Unlock()
	return PluginStats{Calls: p.calls.Load(), Instantiations: p.instantiations.Load(), Discarded: p.discarded.Load(), Idle: idle}
}

// Call calls the export fn with input (CallWith); its output: Outcome.Output.
func (p *Plugin) Call(ctx context.Context, fn string, input []byte) (*Outcome, error) {
	out := new(Outcome)
	if err := p.call(ctx, fn, input, &CallOptions{}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CallWith calls the export fn with input, in a warm instance if one is
// idle; ctx is the hard context. The error is only for a call that cannot
// be made (ErrNoExport, ErrInputTooLarge, ErrPluginClosed, ErrClosed):
// docs/plugins.md, "Warm instances" and "Stopping a call".
func (p *Plugin) CallWith(ctx context.Context, fn string, input []byte, opts CallOptions) (*Outcome, error) {
	out := new(Outcome)
	if err := p.call(ctx, fn, input, &opts, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ErrNilOutcome is CallInto's error for a nil out.
var ErrNilOutcome = errors.New("sandbox: CallInto needs an Outcome to fill (out is nil)")

// CallInto is CallWith filling *out (every field overwritten) instead of
// allocating an Outcome: for a hot path (docs/plugins.md, "Calls on a hot
// path").
func (p *Plugin) CallInto(ctx context.Context, fn string, input []byte, opts CallOptions, out *Outcome) error {
	if out == nil {
		return ErrNilOutcome
	}
	if err := p.call(ctx, fn, input, &opts, out); err != nil {
		*out = Outcome{}
		return err
	}
	return nil
}

// call is Call, CallWith and CallInto: it checks the call, takes a place
// and an idle instance, then runs it (run).
func (p *Plugin) call(ctx context.Context, fn string, input []byte, opts *CallOptions, out *Outcome) error {
	shape, ok := p.export(fn)
	if !ok {
		return fmt.Errorf("%w: plugin %q has no export %q of the calling convention (it has %s)", ErrNoExport, p.man.Name, fn, strings.Join(p.Exports(), ", "))
	}
	if int64(len(input)) > p.man.Limits.MaxInput {
		return fmt.Errorf("%w: %d bytes, over the plugin's limit of %d", ErrInputTooLarge, len(input), p.man.Limits.MaxInput)
	}
	r := p.r
	if r.closing.Load() {
		return ErrClosed
	}
	if opts.Work > 0 && !r.cfg.Interrupt.loopChecks() {
		return fmt.Errorf("sandbox: plugin %q: %w", p.man.Name, ErrWorkNeedsChecks)
	}
	if me := p.mod.refused.Load(); me != nil {
		*out = Outcome{Kind: me.Kind, Message: me.Message, Err: me} // KindUnstoppable: the watchdog abandoned two of its calls or runs
		return nil
	}
	// A place among the plugin's Instances, and the idle instance, under
	// one lock; the place is given back with the instance (keep), or when
	// the call returns.
	if err := p.acquire(ctx); err != nil {
		return err
	}
	if p.closed {
		p.releaseLocked()
		p.mu.Unlock()
		return ErrPluginClosed
	}
	var inst *pluginInstance
	if n := len(p.idle); n > 0 {
		inst, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	p.calls.Add(1)
	p.run(ctx, inst, fn, shape, input, opts, out)
	return nil
}

// export is the shape of the export fn, if it can be called. The one the
// last call named is kept aside: comparing its name costs less than
// hashing it (about 10% of a warm no-op call).
func (p *Plugin) export(fn string) (exportShape, bool) {
	if e := p.last.Load(); e != nil && e.name == fn {
		return e.shape, true
	}
	e := p.exports[fn]
	if e == nil || fn == pluginAlloc || fn == pluginInitialize {
		return exportShape{}, false
	}
	p.last.Store(e)
	return e.shape, true
}

// run makes the call in inst (nil: a new instance), holding one of the
// plugin's places, which it gives back, and fills out, in three steps:
// begin sets up the call's state, runGuest runs the guest (here or on a
// goroutine of its own), end reads the outcome; finish, the one way out,
// gives back the place, the hard context, the instance and the call state.
// Its few returns keep its one defer open-coded (a deferred call costs a
// few ns then; with CallWith's returns it cost about 20 ns).
func (p *Plugin) run(ctx context.Context, inst *pluginInstance, fn string, shape exportShape, input []byte, opts *CallOptions, out *Outcome) {
	pc, lim, start := p.begin(ctx, inst, fn, shape, input, opts)
	ended := false
	defer func() {
		if !ended { // a panic: nothing of the call is used again
			p.finish(pc, nil, callAbandoned, false)
		}
	}()
	inline, abandoned := p.runGuest(ctx, pc, lim, start)
	if abandoned != nil {
		// The watchdog abandoned the call: the caller gets what it
		// decided (the module has its strike), not a late result. Run on
		// a goroutine, the guest's goroutine discards the instance when
		// (if) it ends; run here (a NonBlocking host function blocked
		// after all, or a stop check is missing, and Call waited for it),
		// the instance is discarded now. Neither it nor pc is used again
		// (the sweeper may still read pc's state).
		abandonedOutcome(out, abandoned, start)
		var discard *pluginInstance
		if inline {
			discard = pc.inst
		}
		ended = true
		p.finish(pc, discard, callAbandoned, false)
		return
	}
	end, reuseHard := p.end(ctx, pc, lim, inst != nil, inline, out)
	ended = true
	p.finish(pc, pc.inst, end, reuseHard)
	out.Duration = time.Duration(monoNow() - start)
	if ce := p.r.log.Check(zap.DebugLevel, "plugin call"); ce != nil {
		ce.Write(zap.String("plugin", p.man.Name), zap.String("export", fn), zap.String("outcome", string(out.Kind)),
			zap.String("message", out.Message), zap.Bool("warm", out.Warm), zap.Duration("duration", out.Duration))
	}
}

// begin sets up a call of fn in inst (nil: a new instance): its state,
// taken from the warm instance or the plugin's pool, cleared and set;
// its limits (the plugin's, narrowed by opts); its hard context; its
// start on the monotonic clock.
func (p *Plugin) begin(ctx context.Context, inst *pluginInstance, fn string, shape exportShape, input []byte, opts *CallOptions) (*pluginCall, Limits, int64) {
	start := monoNow() // callctx.go: no wall clock read
	lim := p.lim
	if opts.Timeout > 0 && (lim.Timeout <= 0 || opts.Timeout < lim.Timeout) {
		lim.Timeout = opts.Timeout
	}
	if opts.Work > 0 && (lim.Work <= 0 || opts.Work < lim.Work) {
		lim.Work = opts.Work
	}
	// A call's state goes with its warm instance (or, for a new
	// instance, comes from the plugin's pool): nothing holds it once a
	// call has returned (no stdin goroutine, no checkpoint callback, the
	// watchdog's entry unlinked, its guest goroutine ended); an abandoned
	// call's is left to its guest goroutine, then to the GC.
	var pc *pluginCall
	if inst != nil {
		pc = inst.pc
	}
	if pc == nil {
		pc, _ = p.pcalls.Get().(*pluginCall)
	}
	if pc == nil {
		pc = newPluginCall(p)
	}
	st := &pc.st
	// Cleared in place, then set: a runState literal assigned here would
	// be built on the stack and copied (712 bytes, twice).
	*st = runState{}
	st.stopCh, st.maxCP, st.ident, st.env, st.http.c = opts.Stop, lim.MaxCheckpoint, &p.ident, p.env, p.http
	st.call = true // the outcome's messages say "call" (runState.noun)
	if opts.Task != "" || opts.Labels != nil {
		st.ident = &callIdentity{plugin: p.man.Name, task: opts.Task, labels: opts.Labels, config: p.man.Config}
	}
	if lim.Timeout > 0 {
		st.deadline = monoAdd(start, lim.Timeout)
		st.softAt = monoAdd(st.deadline, -lim.grace())
	}
	// The call's hard context, which also carries st (callctx.go: no
	// timer unless something waits on it). The call state's, if nothing
	// could have kept the last call's (see end); a new one otherwise.
	hard := pc.hard
	if hard == nil {
		hard = new(callContext)
		pc.hard = hard
	}
	*hard = callContext{parent: ctx, deadline: st.deadline, st: st}
	st.hard = hard
	st.stdout = cappedWriter{limit: lim.MaxStdout}
	st.stderr = cappedWriter{limit: lim.MaxStderr}
	st.inputReader = stdinReader{ctx: hard, r: &st.input, direct: true} // stdin is empty: input is in memory
	st.stdin = &st.inputReader
	pc.inst, pc.fn, pc.shape, pc.input, pc.work = inst, fn, shape, input, lim.Work
	pc.output, pc.err, pc.atInstantiate, pc.abandoned = nil, nil, false, nil
	return pc, lim, start
}

// runGuest runs the call's guest under the watchdog, here (inline) or on
// a goroutine of its own, and returns what the watchdog decided if it
// abandoned the call (nil: the guest returned).
func (p *Plugin) runGuest(ctx context.Context, pc *pluginCall, lim Limits, start int64) (inline bool, abandoned *Outcome) {
	st := &pc.st
	p.r.watchRun(ctx, st, p.mod, &pc.spec, start, lim)
	inline = st.watch.state.Load() != watchRunning || !p.mod.blockingImports
	if inline {
		// Nothing can force this call (no deadline, a context never done),
		// no watchdog would abandon it, or nothing in it can ignore the
		// forced stop (the stop checks' bound holds for the guest's own
		// code, sandbox/internal/rewrite, Stint's host functions end on the
		// hard context, and the embedder's are NonBlocking): run the guest
		// here, without a goroutine's handoff (0.6 µs a call, and a
		// thread's wake-up each way on an idle machine).
		st.inline.Store(true)
		pc.guest()
		return true, pc.abandoned
	}
	// The watchdog may abandon the call, and an embedder's host function
	// may ignore its context: the guest runs on a goroutine of its own, so
	// that Call returns then, whatever the guest does.
	p.r.startGuest(pc) // guestworker.go
	<-pc.wake          // the guest returned, or the watchdog abandoned the call
	if st.watch.state.Load() == watchAbandoned {
		w := &st.watch
		w.mu.Lock() // the sweeper holds it until its outcome is set
		abandoned = w.out
		w.mu.Unlock()
		return false, abandoned
	}
	return false, nil
}

// end fills out from a call whose guest returned, and says what becomes
// of its instance, and whether its hard context may serve the call
// state's next call: only if nothing can have kept it, that is the guest
// ran here (no goroutine of a guest worker), in a warm instance (no
// instantiation saw it), with no embedder's host function (Stint's own
// keep no context past their return) and no HTTP request (its context
// derives from it); finish also drops it if anything asked for its Done
// channel (a select, a derived context, an AfterFunc). Whatever kept one
// sees it ended, as it was never reused.
func (p *Plugin) end(ctx context.Context, pc *pluginCall, lim Limits, warm, inline bool, out *Outcome) (callEnd, bool) {
	st := &pc.st
	inst, output, err := pc.inst, pc.output, pc.err
	budget := inst.budget
	inst.calls++
	if !st.work.known() && inst.mod != nil {
		st.work.use(inst.mod)
	}
	*out = Outcome{
		Output: output, Warm: warm,
		Stdout: bytes.Clone(st.stdout.buf.Bytes()), Stderr: bytes.Clone(st.stderr.buf.Bytes()), // st is recycled
		StdoutBytes: st.stdout.total, StderrBytes: st.stderr.total,
		PeakMemoryBytes: int64(budget.Peak()),
		WorkUnits:       st.work.units(),
		StopRequested:   st.sawStop.Load(),
	}
	ce := asCallError(err)
	if ce != nil {
		out.Kind, out.Message, out.Err, out.ExitCode = ce.kind, ce.msg, err, ce.code
	} else {
		p.r.classify(out, err, pc.atInstantiate, ctx, pc.hard, st, budget, &st.stdout, &st.stderr, lim)
	}
	overBudgetAtEnd(out, lim.Work) // work.go: a call over its budget never succeeds
	inst.gg, inst.left = nil, 0
	if st.work.resumable() { // where the instance's next call starts counting (units read it)
		inst.gg, inst.left = st.work.gg, st.work.left
	}
	inst.slot.st = nil
	reuseHard := inline && warm && !p.mod.embedderImports && st.http.requests == 0
	// An Extism plugin's error return keeps its instance: the guest returned normally.
	cleanFailure := ce != nil && ce.keep && out.Kind == KindFailed
	if (err == nil && out.Kind == KindSucceeded || cleanFailure) && !budget.Hit() && !p.man.Fresh { // an exit, even 0, closed it
		return callKept, reuseHard
	}
	return callDiscarded, reuseHard
}

// callEnd is what finish does with a call's instance and state.
type callEnd int

const (
	callKept      callEnd = iota // the instance stays warm, the call state with it
	callDiscarded                // the instance is closed, the call state goes back to the plugin's pool
	callAbandoned                // neither is used again (a panic, or the watchdog abandoned the call)
)

// finish is a call's one way out: its hard context ended (and kept for
// the call state's next call only if reuseHard and nothing asked for its
// Done channel), its instance inst kept warm or closed as end says, its
// state reused, and the plugin's place given back. An abandoned call's
// state may still be in use (by its guest's goroutine, or read by the
// sweeper): it is left as it is and never reused, and inst (nil: the
// guest's goroutine closes it when it ends) is closed.
func (p *Plugin) finish(pc *pluginCall, inst *pluginInstance, end callEnd, reuseHard bool) {
	asked := pc.hard.release()
	if end == callAbandoned || inst == nil {
		if inst != nil {
			inst.pc = nil
			p.discard(inst)
		}
		p.release()
		return
	}
	if asked || !reuseHard {
		pc.hard = nil
	}
	reuse := pc.abandoned == nil
	pc.inst, pc.input, pc.output, pc.err = nil, nil, nil, nil
	inst.pc = nil
	if end == callKept {
		if reuse {
			inst.pc = pc
		}
		p.keep(inst) // and the call's place
		return
	}
	if reuse {
		p.pcalls.Put(pc)
	}
	p.discard(inst)
	p.release()
}

// abandonedOutcome sets out to what the watchdog told a call it
// abandoned (w), its Duration from start.
func abandonedOutcome(out, w *Outcome, start int64) {
	*out = *w
	out.Duration = time.Duration(monoNow() - start)
}

// asCallError is the callError in err's chain, if any. A nil err costs
// nothing (errors.As's target would escape to the heap on every call).
func asCallError(err error) *callError {
	if err == nil {
		return nil
	}
	var ce *callError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

// pluginCall is one call's state: its runState, what its guest is given
// and what it returns, and the channel that tells Call the guest returned
// or was abandoned. It goes with the warm instance its call kept (an
// instance's calls reuse it), else back to the plugin's pool; wake and
// spec are made once.
type pluginCall struct {
	st   runState
	p    *Plugin
	spec Spec            // what watchRun reads: OnAbandon wakes Call
	wake chan struct{}   // cap 2: the guest returned; the watchdog abandoned the call
	inst *pluginInstance // the warm instance (nil: make one), then the call's instance
	hard *callContext    // the hard context of its next call (nil: allocate one); run says when it is kept

	fn    string
	shape exportShape
	input []byte
	work  int64 // the call's work budget (0: none)

	output        []byte
	err           error
	atInstantiate bool
	abandoned     *Outcome // what the watchdog told the caller, if it abandoned the call
}

func newPluginCall(p *Plugin) *pluginCall {
	pc := &pluginCall{p: p, wake: make(chan struct{}, 2)}
	pc.spec.OnAbandon = func(*Outcome) { pc.wake <- struct{}{} }
	return pc
}

// guest runs the call's guest code: the instance made (a cold call) or
// pointed at the call's state (a warm one), then the export, then the call
// taken off the watchdog.
func (pc *pluginCall) guest() {
	p, st := pc.p, &pc.st
	leave := p.r.enterGuest()
	inst := pc.inst
	if inst == nil {
		st.work.start(nil, pc.work) // work.go: a fresh instance's globals hold their initial values
		inst, pc.err = p.newInstance(st.hard, st)
		pc.atInstantiate = pc.err != nil && inst.mod == nil
		pc.inst = inst
	} else {
		if inst.gg != nil {
			st.work.startAt(inst.gg, inst.left, pc.work) // work.go: where the last call left the countdown, not read again
		} else {
			st.work.start(inst.mod, pc.work) // the call's work: from where the last call left the globals
		}
		inst.slot.st = st
		st.ext = inst.ext
	}
	st.mounts = inst.disk // diskerrno.go: the budget's refusals are ENOSPC
	inst.disk.ResetDisk() // the disk budget is per call, as it is per attempt for a task
	if pc.err == nil {
		pc.output, pc.err = inst.call(st.hard, pc.fn, pc.shape, pc.input, p.man.Limits.MaxOutput)
	}
	pc.abandoned = p.r.unwatchRun(st)
	leave()
}

// callError is a call the guest got wrong under the convention (a bad
// pointer, an output over its cap): the outcome says which.
type callError struct {
	kind Kind
	msg  string
	code uint32 // Outcome.ExitCode: an Extism export's return value
	keep bool   // the guest returned normally: its instance may stay warm
}

func (e *callError) Error() string { return e.msg }

// newInstance instantiates the plugin under the call's context (its
// timeout and stop apply) and runs its _initialize, if any. It always
// returns the instance; on an error the caller discards it (its mod is nil
// if instantiation itself failed).
func (p *Plugin) newInstance(ctx context.Context, st *runState) (*pluginInstance, error) {
	r := p.r
	inst := &pluginInstance{slot: newIOSlot(r.base), funcs: map[string]api.Function{},
		budget: &memory.Budget{Limit: uint64(pagesFor(p.lim.MemoryBytes)) * PageSize, Pool: &r.pool,
			Image: p.mod.image}} // the module's initial memory (memory.Image); p keeps p.mod alive
	inst.slot.st = st
	if p.extism {
		inst.ext = extismkernel.New(inst.budget)
		inst.ext.MaxVars = int(p.man.MaxVarBytes)
		st.ext = inst.ext
	}
	cfg := inst.slot.cfg.WithArgs(p.man.Name) // the environment is the call's runState's (environ.go)
	if len(p.man.Mounts) > 0 {
		fsc := wazero.NewFSConfig()
		inst.disk = newMountBudget(p.r.cfg.Defaults) // the runtime's disk budget, per call
		st.mounts = inst.disk
		for _, m := range p.man.Mounts {
			mfs, err := mountfs.Open(m.HostPath, m.Dir, inst.disk)
			if err != nil {
				inst.closeMounts()
				return inst, &callError{kind: KindInvalidModule, msg: fmt.Sprintf("mount %s: %v", m.HostPath, err)}
			}
			inst.mounts = append(inst.mounts, mfs)
			var mount experimentalsys.FS = mfs
			if !m.Writable {
				mount = mountfs.ReadOnly(mfs)
			}
			fsc = fsc.(sysfs.FSConfig).WithSysFSMount(mount, m.GuestPath)
		}
		cfg = cfg.WithFSConfig(fsc)
	}
	if err := p.r.waitImports(); err != nil { // runtime.go: New instantiates them aside
		inst.closeMounts()
		return inst, err
	}
	p.instantiations.Add(1)
	// hostresolve.go: the imports from the host modules, without wazero's store lock.
	ictx := experimental.WithImportResolver(experimental.WithMemoryAllocator(ctx, inst.budget), p.mod.hostMods.resolve)
	mod, err := p.mod.rt.InstantiateModule(ictx, p.mod.compiled, cfg)
	if err != nil {
		inst.closeMounts()
		return inst, err // inst.mod is nil; its budget says whether memory ran out
	}
	inst.mod = mod
	inst.alloc = mod.ExportedFunction(pluginAlloc)
	if init := mod.ExportedFunction(pluginInitialize); init != nil {
		if _, err := init.Call(ctx); err != nil {
			return inst, err // a failure of the guest's own code: classified as a trap, not a bad module
		}
	}
	return inst, nil
}

// export is the instance's export name (nil: none). The last one looked
// up is kept aside: a warm instance is mostly called for the same export,
// and comparing the name costs less than hashing it.
func (inst *pluginInstance) export(name string) api.Function {
	if inst.lastFn != nil && name == inst.last {
		return inst.lastFn
	}
	f := inst.funcs[name]
	if f == nil {
		f = inst.mod.ExportedFunction(name)
		inst.funcs[name] = f
	}
	if f != nil {
		inst.last, inst.lastFn = name, f
	}
	return f
}

// call runs one export under the convention: the input written into
// memory alloc returns, the output read back from the export's result.
func (inst *pluginInstance) call(ctx context.Context, name string, shape exportShape, input []byte, maxOutput int64) ([]byte, error) {
	if shape.extism {
		return inst.callExtism(ctx, name, shape, input, maxOutput) // extism_call.go
	}
	f := inst.export(name)
	mem := inst.mod.Memory()
	stack := inst.stack[:]
	var ptr uint32
	if shape.input && len(input) > 0 {
		if inst.alloc == nil {
			return nil, &callError{kind: KindInvalidModule, msg: "the plugin takes input but exports no alloc function (docs/plugins.md)"}
		}
		stack[0] = api.EncodeU32(uint32(len(input)))
		if err := inst.alloc.CallWithStack(ctx, stack); err != nil {
			return nil, err
		}
		ptr = api.DecodeU32(stack[0])
		if mem == nil || ptr == 0 || !mem.Write(ptr, input) {
			return nil, &callError{kind: KindTrapped, msg: fmt.Sprintf("alloc(%d) returned %d, not a buffer inside the guest's memory (%d bytes)",
				len(input), ptr, memSize(inst.mod))}
		}
	}
	if shape.input {
		stack[0], stack[1] = api.EncodeU32(ptr), api.EncodeU32(uint32(len(input)))
	}
	if err := f.CallWithStack(ctx, stack); err != nil {
		return nil, err
	}
	if !shape.output {
		return nil, nil
	}
	res := stack[0]
	optr, olen := uint32(res>>32), uint32(res)
	if olen == 0 {
		return []byte{}, nil
	}
	if int64(olen) > maxOutput {
		return nil, &callError{kind: KindOutputLimit, msg: fmt.Sprintf("output of %d bytes is over its limit of %d bytes", olen, maxOutput)}
	}
	var b []byte
	ok := false
	if mem != nil {
		b, ok = mem.Read(optr, olen)
	}
	if !ok {
		return nil, &callError{kind: KindTrapped, msg: fmt.Sprintf("%s returned output at ptr=%d len=%d, outside the guest's memory (%d bytes)",
			name, optr, olen, memSize(inst.mod))}
	}
	return append([]byte(nil), b...), nil
}

func (inst *pluginInstance) closeMounts() {
	for _, m := range inst.mounts {
		_ = m.Close()
	}
	inst.mounts = nil
}

// keep puts a warm instance back, or closes it if the plugin was closed,
// and gives the call's place back (acquire).
func (p *Plugin) keep(inst *pluginInstance) {
	p.mu.Lock()
	if !p.closed {
		p.idle = append(p.idle, inst)
		p.releaseLocked()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	inst.close()
	p.release()
}

// acquire takes one of the plugin's Manifest.Instances places for a call,
// waiting while every one is busy (ctx's error if it ends first). It
// returns with p.mu held, unless it returns an error.
func (p *Plugin) acquire(ctx context.Context) error {
	p.mu.Lock()
	for p.busy >= p.man.Instances { // every instance is busy: wait for one
		if p.freed == nil {
			p.freed = make(chan struct{})
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
	}
	p.busy++
	return nil
}

// release gives a call's place back (acquire), waking the calls that
// wait for one.
func (p *Plugin) release() {
	p.mu.Lock()
	p.releaseLocked()
	p.mu.Unlock()
}

func (p *Plugin) releaseLocked() {
	p.busy--
	if p.freed != nil {
		close(p.freed) // every waiter rechecks; one takes the place
		p.freed = nil
	}
}

// discard closes an instance whose call did not succeed.
func (p *Plugin) discard(inst *pluginInstance) {
	if inst == nil {
		return
	}
	p.discarded.Add(1)
	inst.close()
}

func (inst *pluginInstance) close() {
	if inst.mod != nil {
		_ = inst.mod.Close(context.Background())
	}
	inst.budget.Release() // memory.Budget: if wazero did not (a failed instantiation)
	inst.closeMounts()
}

// Close closes the idle instances (calls in progress close theirs as
// they end); later calls return ErrPluginClosed. Safe to call twice.
func (p *Plugin) Close(context.Context) error {
	p.mu.Lock()
	idle, held := p.idle, p.held
	p.idle, p.closed, p.held = nil, true, nil
	p.mu.Unlock()
	for _, inst := range idle {
		inst.close()
	}
	closeFiles(held) // instances still running keep roots of their own
	if p.http != nil {
		p.http.client.CloseIdleConnections()
	}
	return nil
}

// conventionFailure classifies a run ended by a *callError. It reports
// whether err was one.
func conventionFailure(err error, out *Outcome) bool {
	var ce *callError
	if !errors.As(err, &ce) {
		return false
	}
	out.Kind, out.Message = ce.kind, ce.msg
	return true
}

// runExport is a task's plugin call (Spec.Export) in its fresh instance:
// _initialize, then the export under the convention; the output goes to
// stdout after what the guest wrote there, under the same cap.
func (r *Runtime) runExport(ctx context.Context, inst api.Module, mod *Module, st *runState, name string, input []byte) error {
	def, ok := mod.compiled.ExportedFunctions()[name]
	var shape exportShape
	if ok {
		shape, ok = shapeOf(def)
	}
	if !ok || name == pluginAlloc || name == pluginInitialize {
		return &callError{kind: KindInvalidModule, msg: fmt.Sprintf("module exports no function %q of the plugin calling convention (docs/plugins.md)", name)}
	}
	if init := inst.ExportedFunction(pluginInitialize); init != nil {
		if _, err := init.Call(ctx); err != nil {
			return err
		}
	}
	pi := &pluginInstance{mod: inst, alloc: inst.ExportedFunction(pluginAlloc), funcs: map[string]api.Function{}}
	room := st.stdout.limit - st.stdout.total
	output, err := pi.call(ctx, name, shape, input, max(room, 0))
	if err != nil {
		var ce *callError
		if errors.As(err, &ce) && ce.kind == KindOutputLimit {
			ce.msg = fmt.Sprintf("stdout over its limit of %d bytes (the export's output follows what the guest wrote there)", st.stdout.limit)
		}
		return err
	}
	st.output = output
	st.stdout.total += int64(len(output))
	st.stdout.buf.Write(output)
	return nil
}
