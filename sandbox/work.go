package sandbox

import (
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// The work counter (issue 9's "Beyond"). The stop checks the rewrite adds
// (prepare.go) count down a budget of work units: the entry countdown, a
// global, by each calling function's weight at its entry, and a local of
// each function with loops by each loop's weight at every pass (every
// unrollCopies passes of an unrolled loop, at four times the weight). A
// run's work is the sum of those weights, counted exactly from three
// parts:
//
//   - every call of the interrupt function passes what was left of the
//     countdown that ran out (the global's, refilled before the call, or a
//     loop's local's, refilled after it): interruptBudget minus that is
//     the work since its last refill (workCounter.refills);
//   - every way out of a function with loop checks (its end, a return, a
//     branch to its label) adds what its local counted since its last
//     refill to an i64 global the rewrite appends (workGlobal);
//   - what the entry countdown took since the run began, or since its last
//     refill, is read at the end (and at each interrupt call).
//
// What is not counted: a loop's local in a function still running when
// the run ends (a guest that calls proc_exit from inside its loops, a trap,
// a stop): at most interruptBudget units per such frame, the same for the
// same module and input. Work units are not instructions: a unit is about
// a nanosecond of the tightest code (1 + a check's code bytes / 4, calls
// and host calls weigh more: weight, prepare.go), and functions that
// neither call nor loop count nothing (their work is bounded by their
// size). The count is deterministic for the same module, input and
// limits: it depends on the code's path, not on time. In InterruptWazero
// mode loops are not checked, so only the entry countdown counts: the
// count misses every loop, and a work budget (Limits.Work) is refused.

// Indices of the rewrite's globals from the end of an instance's globals:
// the countdown, the call stack's budget, the work flushed.
const (
	countdownFromEnd = 3
	workFromEnd      = 1
)

// ErrWorkLimit is the error of a run that used up its work budget
// (Outcome.Err wraps it; the outcome is KindWorkLimit).
var ErrWorkLimit = errors.New("work budget used up")

// ErrWorkNeedsChecks is Run's error for a work budget in InterruptWazero
// mode, where loops are not counted.
var ErrWorkNeedsChecks = errors.New("a work budget (limits.work) needs sandbox.interrupt=checks: in wazero mode loops are not counted")

// workCounter is a run's share of the work counter.
type workCounter struct {
	// limit is the run's budget in units (0: none).
	limit int64
	// refills sums, over the interrupt calls, the work each refilled
	// countdown had counted.
	refills int64
	// w0 and g0 are the work global and the countdown when the run began.
	w0, g0 int64
	// wg and gg are the instance's work global and countdown, once known
	// (from the interrupt function's caller, or the instance the run
	// made): read at every interrupt call, so looked up once.
	wg, gg api.Global
}

// known reports whether the instance's globals are known.
func (c *workCounter) known() bool { return c.wg != nil }

// use reads the rewrite's globals from mod (an instance of a rewritten
// module); it reports whether it could.
func (c *workCounter) use(mod api.Module) bool {
	im, ok := mod.(experimental.InternalModule)
	if !ok || im.NumGlobal() < countdownFromEnd {
		return false
	}
	n := im.NumGlobal()
	c.wg, c.gg = im.Global(n-workFromEnd), im.Global(n-countdownFromEnd)
	return true
}

// start begins counting in instance mod (nil: a fresh one, whose globals
// hold their initial values).
func (c *workCounter) start(mod api.Module, limit int64) {
	c.limit, c.refills = limit, 0
	c.w0, c.g0 = 0, interruptBudget
	c.wg, c.gg = nil, nil
	if mod != nil && c.use(mod) {
		c.w0, c.g0 = c.globals()
	}
}

// globals reads the work global and the countdown.
func (c *workCounter) globals() (w, g int64) {
	return int64(c.wg.Get()), int64(int32(c.gg.Get()))
}

// refilled counts an interrupt call: left is what remained of the
// countdown that ran out; mod is the caller.
func (c *workCounter) refilled(mod api.Module, left int32) error {
	c.refills += interruptBudget - int64(left)
	if !c.known() {
		c.use(mod)
	}
	if c.limit > 0 && c.flushed() > c.limit {
		return ErrWorkLimit
	}
	return nil
}

// flushed is the work done so far but what the countdown took since its
// last refill (at most interruptBudget, and nothing at an interrupt call
// from a function's entry, which refills it first): the budget's test,
// one global read per interrupt call instead of two (a Go guest calls the
// interrupt function about every 3,600 instructions; docs/benchmarks.md).
func (c *workCounter) flushed() int64 {
	if !c.known() {
		return c.refills
	}
	return c.refills + int64(c.wg.Get()) - c.w0
}

// units is the work done so far (see the comment above).
func (c *workCounter) units() int64 {
	if !c.known() {
		return c.refills
	}
	w, g := c.globals()
	return c.refills + w - c.w0 + c.g0 - g
}

// workFailure classifies a run ended by its work budget. It reports
// whether err was one.
func workFailure(err error, out *Outcome, limit int64) bool {
	if !errors.Is(err, ErrWorkLimit) {
		return false
	}
	out.Kind = KindWorkLimit
	out.Message = fmt.Sprintf("work limit of %d units reached (%d done)", limit, out.WorkUnits)
	return true
}
