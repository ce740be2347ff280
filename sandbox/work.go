package sandbox

import (
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// The work counter (issue 9's "Beyond", made exact by issue 23). The stop
// checks the rewrite adds (internal/rewrite) count down one budget of work
// units per instance, the countdown global, by the weight of the code
// about to run (see internal/rewrite, The bound); a function with loop checks
// keeps it in a local while it runs and writes it back before every call
// and at every way out. A run's work is the sum of those weights, counted
// exactly from two parts:
//
//   - every call of the interrupt function passes what was left of the
//     countdown that ran out: what it started from (the countdown when
//     the run began, then interruptBudget after each refill) minus that is
//     the work since (workCounter.refills);
//   - what the countdown took since the run began, or since its last
//     refill, is read from the global when the run ends.
//
// However the run ends, nothing is left out but a trap's: a return or a
// branch out of a function writes the local back, proc_exit and every
// other host call are calls (written back before them), and a forced stop
// or the work budget ends the guest inside the interrupt function, which
// was given the local. A trap (unreachable, an out-of-bounds access)
// leaves out what its frame counted since its last write-back: less than
// interruptBudget plus one charge, and the run failed anyway. Work units
// are not instructions: a unit is about a nanosecond of the tightest code
// (1 + a check's code bytes / 4, calls and host calls weigh more: weight,
// internal/rewrite). The count is deterministic for the same module, input and
// limits: it depends on the code's path, not on time. In InterruptWazero
// mode loops are not checked, so only the entry countdown counts: the
// count misses every loop, and a work budget (Limits.Work) is refused.

// countdownFromEnd is the countdown's index from the end of an
// instance's globals (the rewrite appends it, then the call stack's
// budget).
const countdownFromEnd = 2

// workCounter is a run's share of the work counter.
type workCounter struct {
	// limit is the run's budget in units (0: none).
	limit int64
	// refills sums, over the interrupt calls, the work each countdown
	// had counted when it ran out; from is what the countdown started
	// from since the last of them (or since the run began).
	refills, from int64
	// endedInside: the run ended inside the interrupt function (a forced
	// stop, the work budget), where the countdown's global may be stale
	// (a loop's local held it): the refills are then the whole count.
	endedInside bool
	// gg is the instance's countdown, once known (from the interrupt
	// function's caller, or the instance the run made).
	gg api.Global
	// left is the countdown as units last read it (at the end of a
	// plugin call: where the instance's next call starts from).
	left int64
}

// known reports whether the instance's countdown is known.
func (c *workCounter) known() bool { return c.gg != nil }

// use finds the countdown of mod (an instance of a rewritten module); it
// reports whether it could.
func (c *workCounter) use(mod api.Module) bool {
	im, ok := mod.(experimental.InternalModule)
	if !ok || im.NumGlobal() < countdownFromEnd {
		return false
	}
	c.gg = im.Global(im.NumGlobal() - countdownFromEnd)
	return true
}

// start begins counting in instance mod (nil: a fresh one, whose
// countdown holds its initial value).
func (c *workCounter) start(mod api.Module, limit int64) {
	c.limit, c.refills, c.from, c.endedInside = limit, 0, interruptBudget, false
	c.gg = nil
	if mod != nil && c.use(mod) {
		c.from = c.countdown()
	}
}

// startAt begins counting in a warm plugin instance whose countdown gg
// holds left: what the end of its last call read (units), as no guest
// code runs between two calls of an instance. It reads nothing.
func (c *workCounter) startAt(gg api.Global, left, limit int64) {
	c.limit, c.refills, c.from, c.endedInside = limit, 0, left, false
	c.gg = gg
}

// countdown reads the instance's countdown.
func (c *workCounter) countdown() int64 { return int64(c.gg.Get()) }

// refilled counts an interrupt call: left is what remained of the
// countdown that ran out; mod is the caller. It returns ErrWorkLimit once
// the work counted is over the budget.
func (c *workCounter) refilled(mod api.Module, left int64) error {
	c.refills += c.from - left
	c.from = interruptBudget
	if !c.known() {
		c.use(mod)
	}
	err := c.over()
	c.endedInside = err != nil
	return err
}

// over returns ErrWorkLimit if the work counted so far, the refills, is
// over the budget: tested at each interrupt call and when the run ends
// (with units), so that no run over its budget succeeds.
func (c *workCounter) over() error {
	if c.limit > 0 && c.refills > c.limit {
		return ErrWorkLimit
	}
	return nil
}

// units is the work done so far, read when the countdown's global holds
// the whole count: at the end of a run (or of a plugin call).
func (c *workCounter) units() int64 {
	if !c.known() || c.endedInside {
		return c.refills
	}
	c.left = c.countdown()
	return c.refills + c.from - c.left
}

// resumable reports whether the countdown is known and its last reading
// (units) is where it stands: the run did not end inside the interrupt
// function, where a loop's local may have held it.
func (c *workCounter) resumable() bool { return c.known() && !c.endedInside }

// overBudgetAtEnd makes a run that ended on its own (succeeded, failed,
// trapped, interrupted) over its work budget a KindWorkLimit: the budget
// is tested at every interrupt call, but the work since the last one is
// read only at the end, and a run over its budget never succeeds. A run
// stopped by force or by its deadline keeps that outcome.
func overBudgetAtEnd(out *Outcome, limit int64) {
	switch out.Kind {
	case KindSucceeded, KindFailed, KindTrapped, KindInterrupted:
	default:
		return
	}
	if limit > 0 && out.WorkUnits > limit {
		workFailure(ErrWorkLimit, out, limit)
	}
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
