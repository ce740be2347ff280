package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// maxRefused bounds how many refused modules the Runtime remembers.
const maxRefused = 4096

// compileState tracks the compilations that run aside from their callers
// and the modules refused (for good, or over the compile budget until
// their compilation ends). Maps are guarded by Runtime.mu.
type compileState struct {
	running  map[*moduleEntry]struct{} // wazero compilations in progress
	refused  map[string]*ModuleError   // by sha256: not compiled or run again (overBudgetEndedLocked lifts a compile timeout)
	timeouts atomic.Int64              // modules refused for their compile time
	gate     compileGate               // turns and compile memory (compilegate.go)
	// onWazero is a test hook: called with a module's sha256 as wazero
	// begins to compile it; what it returns is called when wazero ends.
	onWazero atomic.Pointer[func(sha string) func()]
	wg       sync.WaitGroup // one per running compilation
	// closePending: Close came while compilations or abandoned runs ran;
	// the last one to end closes the wazero runtimes (wazero's Close races
	// with a compilation in progress, and with a guest still running).
	closePending bool
}

// Compile returns the compiled module for wasm, compiled once per sha256;
// a module that cannot run is a *ModuleError (docs/sandbox.md, "Compiling").
func (r *Runtime) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	return r.compileSource(ctx, moduleSource{sha: SHA256(wasm), size: int64(len(wasm)), wasm: wasm})
}

// compileSource is Compile and CompileFile (modsource.go).
func (r *Runtime) compileSource(ctx context.Context, src moduleSource) (*Module, error) {
	sha := src.sha
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if err := r.comp.refused[sha]; err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.tick++
	e, ok := r.modules[sha]
	if !ok {
		e = &moduleEntry{ready: make(chan struct{}), abandon: make(chan struct{})}
		r.modules[sha] = e
		r.startCompileLocked(e, src)
		r.evictLocked(e)
	}
	e.lastUsed = r.tick
	waiting := !e.settled
	if waiting {
		e.waiters++
	}
	r.mu.Unlock()
	select {
	case <-e.ready:
		return e.mod, e.err
	case <-ctx.Done():
		select {
		case <-e.ready: // both at once: the result is worth more
			return e.mod, e.err
		default:
		}
		r.mu.Lock()
		e.waiters--
		if e.waiters == 0 && !e.started && !e.abandonClosed {
			// Its last caller gave up before wazero began: if the
			// compilation waits for its turn, it is dropped (waitAtGate).
			e.abandonClosed = true
			close(e.abandon)
		}
		r.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Lookup returns an already compiled module by sha256, never waiting.
func (r *Runtime) Lookup(sha256 string) (*Module, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.modules[sha256]
	if !ok || !e.settled || e.err != nil {
		return nil, false
	}
	r.tick++
	e.lastUsed = r.tick
	return e.mod, true
}

// startCompileLocked compiles wasm for e on a goroutine of its own, under
// the compile budget. Called with r.mu held and r not closed.
func (r *Runtime) startCompileLocked(e *moduleEntry, src moduleSource) {
	if r.comp.running == nil {
		r.comp.running = map[*moduleEntry]struct{}{}
	}
	r.comp.running[e] = struct{}{}
	r.comp.wg.Add(1)
	go r.compileAside(e, src.clone()) // the caller may return, and reuse its bytes, first
}

func (r *Runtime) compileAside(e *moduleEntry, src moduleSource) {
	defer r.comp.wg.Done()
	sha := src.sha
	budget := r.cfg.CompileTimeout
	start := time.Now()
	var mod *Module
	// Its turn first (compilegate.go): at most maxCompiles at once; its
	// callers wait on e.ready, under their own contexts, meanwhile.
	err := r.waitAtGate(e, sha, r.comp.gate.enter)
	if err == nil {
		clock := &compileClock{left: budget, fire: func() { r.compileOverBudget(e, sha, budget) }}
		clock.start()
		mod, err = r.compileSafely(&src, func(wasm []byte) (func(), error) { return r.admitCompile(e, clock, sha, wasm) })
		clock.stop()
		r.comp.gate.leave()
	}
	r.mu.Lock()
	delete(r.comp.running, e)
	if r.closed {
		// Closed under it: the result is dropped, and a failure says
		// nothing about the module.
		mod, err = nil, ErrClosed
	}
	settled := r.settleLocked(e, mod, err)
	if settled && mod != nil {
		r.evictLocked(e) // its size is known now (Config.MaxModuleBytes)
	}
	if !settled && !r.closed {
		r.overBudgetEndedLocked(sha, mod, err)
	}
	if err != nil && src.path != "" && r.modules[sha] == e {
		var me *ModuleError
		if !errors.As(err, &me) {
			// The file could not be read again, or changed: that says
			// nothing about the module. The next call tries afresh.
			delete(r.modules, sha)
		}
	}
	closeNow := r.closeIfLastLocked()
	r.mu.Unlock()
	if closeNow {
		defer func() {
			if err := r.closeRuntimes(context.Background()); err != nil {
				r.log.Warn("closing the sandbox runtime after the last compilation", zap.Error(err))
			}
		}()
	}
	switch {
	case !settled && err == nil: // not closed: a closed runtime sets err
		r.log.Info("a compilation that went past the compile budget has ended: the module is compiled, and no longer refused",
			zap.String("sha256", sha), zap.Duration("took", time.Since(start)), zap.Duration("compile_timeout", budget))
	case !settled:
		r.log.Info("a compilation that went past the compile budget has ended", zap.String("sha256", sha),
			zap.Duration("took", time.Since(start)), zap.Duration("compile_timeout", budget), zap.Error(err))
	case errors.Is(err, errAbandoned):
		r.log.Debug("compilation dropped: its callers gave up before wazero began", zap.String("sha256", sha))
	default:
		if ce := r.log.Check(zap.DebugLevel, "compilation ended"); ce != nil {
			ce.Write(zap.String("sha256", sha), zap.Duration("took", time.Since(start)), zap.Error(err))
		}
	}
}

// admitCompile is called by compile once wasm is prepared, before wazero
// compiles it: it refuses a module estimated over Config.CompileMemory,
// then waits until the estimate fits beside the compilations in wazero
// (the compile budget's clock stopped meanwhile; dropped if its callers
// all give up: waitAtGate), and returns what gives the memory back.
func (r *Runtime) admitCompile(e *moduleEntry, clock *compileClock, sha string, wasm []byte) (release func(), err error) {
	limit := r.cfg.CompileMemory
	var est compileEstimate
	if limit >= 0 {
		est = r.compileMemory(wasm)
		if est.bytes > limit {
			r.log.Info("module refused: compiling it is estimated over the compile memory limit (limits.compile_memory)",
				zap.String("sha256", sha), zap.Int64("estimate", est.bytes), zap.Int64("compile_memory", limit))
			return nil, errCompileMemory(est.bytes, limit)
		}
	}
	g := &r.comp.gate
	if !g.tryReserve(est.bytes) {
		if !est.exact {
			// The quick bound can be a few times the estimate: a
			// closer look may let both compile at once.
			est = r.exactCompileMemory(wasm, est.bytes)
		}
		if !g.tryReserve(est.bytes) {
			if !clock.pause() {
				return nil, ErrCompileTimeout // refused meanwhile (compileOverBudget)
			}
			n := est.bytes
			if err := r.waitAtGate(e, sha, func(abandon <-chan struct{}) error { return g.reserve(n, abandon) }); err != nil {
				return nil, err
			}
			clock.start()
		}
	}
	r.mu.Lock()
	e.started = true
	r.mu.Unlock()
	if h := r.comp.onWazero.Load(); h != nil {
		done := (*h)(sha)
		return func() { done(); g.release(est.bytes) }, nil
	}
	return func() { g.release(est.bytes) }, nil
}

// waitAtGate waits at the gate (wait: enter, or reserve) for e's
// compilation. A compilation no caller waits for any more is dropped
// there: removed from the registry, so that the next Compile of its bytes
// starts afresh, and ended with errAbandoned. (One that got its turn at
// once goes on without callers, as it always did: a later caller finds
// the module compiled.)
func (r *Runtime) waitAtGate(e *moduleEntry, sha string, wait func(abandon <-chan struct{}) error) error {
	for {
		r.mu.Lock()
		abandon := e.abandon
		r.mu.Unlock()
		err := wait(abandon)
		if !errors.Is(err, errAbandoned) {
			return err
		}
		r.mu.Lock()
		if e.waiters == 0 {
			if r.modules[sha] == e {
				delete(r.modules, sha)
			}
			r.mu.Unlock()
			return errAbandoned
		}
		// A caller came since the last one gave up: wait on.
		e.abandon, e.abandonClosed = make(chan struct{}), false
		r.mu.Unlock()
	}
}

// compileClock is a compilation's compile budget (Config.CompileTimeout),
// stopped while it waits for memory beside other compilations.
type compileClock struct {
	left  time.Duration // what is left of the budget
	fire  func()        // called once it runs out
	since time.Time
	timer *time.Timer
}

func (c *compileClock) start() {
	c.since = time.Now()
	c.timer = time.AfterFunc(c.left, c.fire)
}

// pause stops the clock; false: it had already run out.
func (c *compileClock) pause() bool {
	if !c.timer.Stop() {
		return false
	}
	c.left -= time.Since(c.since)
	return true
}

func (c *compileClock) stop() { c.timer.Stop() }

// compileSafely compiles, turning a panic into an error: wazero panics
// when its runtime is closed under a compilation, and a panic on any other
// module must not take the process down.
func (r *Runtime) compileSafely(src *moduleSource, admit func(wasm []byte) (func(), error)) (mod *Module, err error) {
	sha := src.sha
	defer func() {
		if p := recover(); p != nil {
			mod = nil
			if r.closing.Load() {
				err = ErrClosed
				return
			}
			err = &ModuleError{Kind: KindInvalidModule, Message: fmt.Sprintf("compile: the compiler failed on this module: %v", p)}
			r.log.Error("the compiler panicked; the module is refused", zap.String("sha256", sha), zap.Any("panic", p))
		}
	}()
	// The compilation outlives any one caller: it gets no caller's context.
	return r.compile(context.Background(), src, admit)
}

// compileOverBudget refuses a module whose compilation is still running at
// the compile budget; its callers get the error at once.
func (r *Runtime) compileOverBudget(e *moduleEntry, sha string, budget time.Duration) {
	err := &ModuleError{Kind: KindInvalidModule, Err: ErrCompileTimeout, Message: fmt.Sprintf(
		"compiling took longer than the compile budget of %s (sandbox.compile_timeout); the module is refused until its compilation, which goes on in the background, ends: then it runs (on a loaded machine, try again later), or make it smaller or simpler, or raise the budget",
		budget)}
	r.mu.Lock()
	ok := !e.settled
	if ok {
		// Counted before the callers wake (settleLocked closes e.ready),
		// so that a caller that gets the error sees it in Stats.
		r.comp.timeouts.Add(1)
		r.settleLocked(e, nil, err)
		r.refuseLocked(sha, err)
	}
	r.mu.Unlock()
	if ok {
		r.log.Warn("module refused: its compilation took longer than the compile budget; it goes on in the background until it ends (wazero cannot stop it)",
			zap.String("sha256", sha), zap.Duration("compile_timeout", budget))
	}
}

// overBudgetEndedLocked takes the result of a compilation that went past
// the compile budget (compileOverBudget refused the module meanwhile): a
// module compiled is kept, and no longer refused, so that a later attempt
// runs it (a compile budget passed because the machine was loaded says
// nothing of the module); an error that is the module's own (invalid,
// over a limit) refuses it with that error instead. Called with r.mu held.
func (r *Runtime) overBudgetEndedLocked(sha string, mod *Module, err error) {
	if prev := r.comp.refused[sha]; prev == nil || !errors.Is(prev, ErrCompileTimeout) {
		return // forgotten (maxRefused), or refused since for another reason
	}
	var me *ModuleError
	switch {
	case err == nil && mod != nil:
		delete(r.comp.refused, sha)
		if _, ok := r.modules[sha]; ok {
			return
		}
		e := &moduleEntry{ready: make(chan struct{}), abandon: make(chan struct{}), started: true}
		r.modules[sha] = e
		r.settleLocked(e, mod, nil)
		r.tick++
		e.lastUsed = r.tick
		r.evictLocked(e)
	case errors.As(err, &me) && me.Kind != KindUnstoppable:
		r.comp.refused[sha] = me
	}
}

// settleLocked gives e its result, once; it reports whether this call did.
func (r *Runtime) settleLocked(e *moduleEntry, mod *Module, err error) bool {
	if e.settled {
		return false
	}
	e.mod, e.err, e.settled = mod, err, true
	close(e.ready)
	return true
}

// refuseLocked refuses the module sha for good: Compile returns err at
// once, Lookup finds nothing. Called with r.mu held.
func (r *Runtime) refuseLocked(sha string, err *ModuleError) {
	if r.comp.refused == nil {
		r.comp.refused = map[string]*ModuleError{}
	}
	if len(r.comp.refused) >= maxRefused {
		for old := range r.comp.refused { // forget one, any one
			delete(r.comp.refused, old)
			break
		}
	}
	r.comp.refused[sha] = err
	delete(r.modules, sha)
}

// waitCompilations waits until no compilation runs, or until ctx is done
// (then it returns ctx's error). Neither Compile nor Close waits for a
// compilation their callers gave up on; tests that check for leaked
// goroutines wait for those here (export_test.go). Another package's test
// waits for Stats.Compiling to be 0.
func (r *Runtime) waitCompilations(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.comp.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// compileStats fills the compile fields of st.
func (r *Runtime) compileStats(st *Stats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st.Compiling = len(r.comp.running)
	for e := range r.comp.running {
		if e.settled || e.waiters == 0 {
			st.CompilingAbandoned++
		}
	}
	st.Refused = len(r.comp.refused)
	st.CompileTimeouts = r.comp.timeouts.Load()
	st.CompileWaiting = r.comp.gate.waitingNow()
}
