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
// and the modules refused for good. Maps are guarded by Runtime.mu.
type compileState struct {
	running  map[*moduleEntry]struct{} // wazero compilations in progress
	refused  map[string]*ModuleError   // by sha256: never compiled or run again
	timeouts atomic.Int64              // modules refused for their compile time
	wg       sync.WaitGroup            // one per running compilation
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
		e = &moduleEntry{ready: make(chan struct{})}
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
	timer := time.AfterFunc(budget, func() { r.compileOverBudget(e, sha, budget) })
	start := time.Now()
	mod, err := r.compileSafely(&src)
	timer.Stop()
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
	if !settled {
		// Past its budget: the module is refused and the result dropped
		// (its machine code is released with mod).
		r.log.Info("a compilation that went past the compile budget has ended; its result is dropped",
			zap.String("sha256", sha), zap.Duration("took", time.Since(start)), zap.Duration("compile_timeout", budget))
	} else if ce := r.log.Check(zap.DebugLevel, "compilation ended"); ce != nil {
		ce.Write(zap.String("sha256", sha), zap.Duration("took", time.Since(start)), zap.Error(err))
	}
}

// compileSafely compiles, turning a panic into an error: wazero panics
// when its runtime is closed under a compilation, and a panic on any other
// module must not take the process down.
func (r *Runtime) compileSafely(src *moduleSource) (mod *Module, err error) {
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
	return r.compile(context.Background(), src)
}

// compileOverBudget refuses a module whose compilation is still running at
// the compile budget; its callers get the error at once.
func (r *Runtime) compileOverBudget(e *moduleEntry, sha string, budget time.Duration) {
	err := &ModuleError{Kind: KindInvalidModule, Err: ErrCompileTimeout, Message: fmt.Sprintf(
		"compiling took longer than the compile budget of %s (sandbox.compile_timeout); the module is refused: make it smaller or simpler, or raise the budget",
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
}
