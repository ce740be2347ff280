package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// InterruptMode says how a forced stop reaches a guest that computes; both
// end every guest (docs/sandbox.md). Their cost: docs/design/stop-checks.md.
type InterruptMode string

// The interrupt modes.
const (
	InterruptWazero InterruptMode = "wazero" // wazero's close-on-context-done; Stint's checks at function entries
	InterruptChecks InterruptMode = "checks" // the default: Stint's checks around every loop and at function entries
)

// InterruptModes returns the modes (InterruptChecks is the default).
func InterruptModes() []InterruptMode { return []InterruptMode{InterruptWazero, InterruptChecks} }

// ParseInterruptMode reads a mode's name ("wazero" or "checks").
func ParseInterruptMode(s string) (InterruptMode, error) {
	for _, m := range InterruptModes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("sandbox: interrupt mode %q: want wazero or checks", s)
}

// closeOnContextDone reports whether wazero's close-on-context-done is on.
func (m InterruptMode) closeOnContextDone() bool { return m != InterruptChecks }

// loopChecks reports whether Stint's check goes at loop headers too.
func (m InterruptMode) loopChecks() bool { return m == InterruptChecks }

// instantiateInterruptModule instantiates the host module whose functions
// the checks prepareModule adds call (interruptModule.interruptFunc, and
// callStackFunc for the call-stack limit: callstack.go).
func instantiateInterruptModule(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(interruptModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(interrupt), []api.ValueType{api.ValueTypeI64}, nil).Export(interruptFunc).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(callStack), nil, nil).Export(callStackFunc).
		Instantiate(ctx)
	return err
}

// interrupt is what the checks call every interruptBudget units of work,
// with what was left of the countdown that ran out (stack[0]): it counts
// the work (work.go) and ends the guest with ErrWorkLimit once the run's
// work budget is used up. Being Go, it is where the scheduler can preempt the guest (for a
// garbage collection, or to run other goroutines); and it ends the guest
// once the run's hard context (ctx: the call's) is done, with the exit
// error a blocking host call gives, so that the run is classified forced
// or timed out like any other stop.
//
// It also reads the clock: once the context's deadline has passed, it
// waits for the context to end. The deadline's timer sits with the P that
// created it, which is the one running the guest: until the guest yields
// it, only another P or sysmon (which sleeps up to 10 ms) can fire it, and
// on a loaded machine a guest outlived its attempt timeout by 10 ms at the
// median, 150 ms at worst. Waiting yields the P, and the timer fires.
func interrupt(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateOf(ctx)
	if st != nil {
		if err := st.work.refilled(mod, int64(stack[0])); err != nil {
			panic(err)
		}
		if st.resumable {
			suspendAsked(st, mod) // resumable.go
		}
		st.maybeYield()
	}
	if ctx.Err() == nil {
		if d, ok := ctx.Deadline(); !ok || time.Now().Before(d) {
			return
		}
		<-ctx.Done()
	}
	if st != nil {
		st.work.endedInside = true // work.go: the caller's countdown may be a loop's local
	}
	hardExit(ctx)
}

// yieldEvery is how often, at most, a guest in checks mode yields its P
// at an interrupt, so that the goroutines that wait for one (timers, a
// forced stop's cancel, signals, the store's heartbeats) run: the spare P
// of wazero mode, at the cost of a clock read every 16 interrupts and a
// Gosched a millisecond.
const yieldEvery = int64(time.Millisecond)

// maybeYield yields the P once yieldEvery has passed since the run's last
// yield (its start: 0), looking at the clock every 16th interrupt.
func (st *runState) maybeYield() {
	if st.interrupts++; st.interrupts&15 != 0 {
		return
	}
	if now := monoNow(); now-st.lastYield >= yieldEvery {
		st.lastYield = now
		runtime.Gosched()
	}
}

// attemptDeadline reports whether the hard context ended at the attempt's
// own deadline (timed out) rather than by the caller (forced): it expired,
// and the caller's deadline, if any, was not the earlier. The caller may
// have been cancelled since, while the guest was stopping: that changes
// nothing.
func attemptDeadline(caller, hard context.Context, deadline time.Time) bool {
	if deadline.IsZero() || hard.Err() != context.DeadlineExceeded {
		return false
	}
	d, ok := caller.Deadline()
	return !ok || d.After(deadline)
}

// Go cannot preempt a goroutine running a guest's machine code: it holds
// its P (one of GOMAXPROCS) until the guest calls out to Go, and Go
// preempts a goroutine only when sysmon asks, after 10 ms. If every P ran
// a guest, the timer of an attempt deadline, the cancel of a forced stop
// and a signal handler would wait that long.
//
// In checks mode the verifier proves that a guest calls out to Go (the
// interrupt function) within its bound, and interrupt yields the P
// (yieldEvery): every other goroutine runs within about that, and no P
// is kept free; but while n guests run, GOMAXPROCS is at least n, so that
// guests that outnumber the cores share them through the operating system,
// which is fairer to each guest than Go's queue of goroutines that
// yielded (with 2 Ps for many guests under load, a guest asked to suspend
// at its deadline's soft stop waited past the deadline). In wazero mode
// nothing bounds when a guest calls out, so a P is always kept free: while
// n guests run, GOMAXPROCS is at least n+1. It is raised when needed and
// never lowered (a change stops the world), so it ends at the most guests
// ever run at once (plus one in wazero mode). (STINT_SPARE_P=1, for
// benchmarks only, keeps the spare P in checks mode too.)
var guests struct {
	running atomic.Int64 // guests running now
	mu      sync.Mutex   // held while GOMAXPROCS is raised
}

// spareAlways keeps the spare P in checks mode too (STINT_SPARE_P=1:
// benchmarks of what it buys).
var spareAlways = os.Getenv("STINT_SPARE_P") == "1"

// enterGuest is enterProcs with a spare P in wazero mode, and without
// one in checks mode, whose guests yield (yieldEvery).
func (r *Runtime) enterGuest() (leave func()) {
	if r.cfg.Interrupt.loopChecks() && !spareAlways {
		return enterProcs(0)
	}
	return enterProcs(1)
}

// enterProcs counts a guest about to run (instantiated, then _start),
// raising GOMAXPROCS to the guests running plus spare if needed, and
// returns the function that counts it out. The count is atomic; only a
// raise takes guests.mu (so that two raises cannot undo each other), and
// it rereads the count under it.
func enterProcs(spare int64) (leave func()) {
	if need := guests.running.Add(1) + spare; int64(runtime.GOMAXPROCS(0)) < need {
		guests.mu.Lock()
		if need := guests.running.Load() + spare; int64(runtime.GOMAXPROCS(0)) < need {
			runtime.GOMAXPROCS(int(need))
		}
		guests.mu.Unlock()
	}
	return leaveGuest
}

// leaveGuest counts out a guest enterGuest counted in.
func leaveGuest() { guests.running.Add(-1) }
