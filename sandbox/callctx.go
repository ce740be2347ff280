package sandbox

import (
	"context"
	"math"
	"sync"
	"time"
)

// callContext is a plugin call's hard context: done when the caller's
// context is, or at the call's deadline, or when the call has returned.
// It also carries the call's runState (runStateKey). It is what
// context.WithValue(context.WithDeadline(parent, deadline)) gives, in one
// allocation instead of six, and with no timer unless something waits on
// Done: on a warm call that returns before its deadline nothing does (in
// InterruptChecks mode the checks call interrupt, which reads Err; a
// blocking host call or wazero's close-on-context-done asks for Done, and
// gets a channel that the deadline's timer or the parent closes).
//
// Err tells the truth without Done: it reads the parent's Err and the
// clock, so the watchdog's sweeps and the interrupt checks see a passed
// deadline at once.
//
// Its own deadline is a reading of the monotonic clock (monoNow): a call
// reads no wall clock unless something asks for Deadline.
type callContext struct {
	parent   context.Context
	deadline int64     // monoNow's reading; 0: none of its own
	at       time.Time // the deadline as a time.Time: Run's own; a plugin call's, made by the first Deadline (under mu)
	st       *runState
	imports  *hostModules // the module's host modules, for wazero's import resolution (hostresolve.go); nil: none

	mu         sync.Mutex
	err        error
	done       chan struct{} // made by the first Done
	timer      *time.Timer   // the deadline's, once Done was asked for
	stopParent func() bool   // context.AfterFunc's, once Done was asked for
}

// newCallContext returns the hard context of a call under parent, with
// deadline (zero: none) and the call's state.
func newCallContext(parent context.Context, deadline time.Time, st *runState) *callContext {
	c := &callContext{parent: parent, st: st}
	if !deadline.IsZero() {
		c.deadline, c.at = monoOf(deadline), deadline
	}
	return c
}

// monoBase is the origin of monoNow's clock.
var monoBase = time.Now()

// monoNow reads the monotonic clock: nanoseconds since monoBase. It costs
// about half of time.Now, which reads the wall clock too (a plugin call
// needs only durations and deadlines, docs/design/plugins.md, "A warm no-op
// Plugin.Call, part by part").
func monoNow() int64 { return int64(time.Since(monoBase)) }

// monoOf is t on monoNow's clock (t's monotonic reading if it has one).
func monoOf(t time.Time) int64 { return monoAdd(monoNow(), time.Until(t)) }

// monoAdd is the reading d after (before, if negative) the reading t,
// saturated, and never 0 (which says "none"): at least 1.
func monoAdd(t int64, d time.Duration) int64 {
	s := t + int64(d)
	switch {
	case d > 0 && s < t:
		s = math.MaxInt64
	case d < 0 && s > t:
		s = math.MinInt64
	}
	return max(s, 1)
}

// Deadline is the earlier of the call's deadline and the parent's.
func (c *callContext) Deadline() (time.Time, bool) {
	d, ok := c.parent.Deadline()
	if c.deadline == 0 {
		return d, ok
	}
	own := c.deadlineTime()
	if ok && d.Before(own) {
		return d, ok
	}
	return own, true
}

// deadlineTime is the call's own deadline as a time.Time (zero: none).
// A plugin call's is computed once, from the monotonic one.
func (c *callContext) deadlineTime() time.Time {
	if c.deadline == 0 {
		return time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		c.at = time.Now().Add(time.Duration(c.deadline - monoNow()))
	}
	return c.at
}

// endless reports whether the context can never end while the call runs
// (no deadline, a parent that is never done): the watchdog ignores such a
// call, as it ignores a run whose hard context has a nil Done.
func (c *callContext) endless() bool {
	return c.deadline == 0 && c.parent.Done() == nil
}

// Err is the parent's error, DeadlineExceeded once the deadline has
// passed, or Canceled once the call has returned; nil before.
func (c *callContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errLocked()
}

func (c *callContext) errLocked() error {
	if c.err == nil {
		if err := c.parent.Err(); err != nil {
			c.endLocked(err)
		} else if c.deadline != 0 && monoNow() >= c.deadline {
			c.endLocked(context.DeadlineExceeded)
		}
	}
	return c.err
}

// Done returns a channel closed when the context ends; the first call
// arms the deadline's timer and the parent's.
func (c *callContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	if c.err == nil && c.endless() {
		return nil
	}
	err := c.errLocked() // before done exists: an end it finds closes nothing
	c.done = make(chan struct{})
	if err != nil {
		close(c.done)
		return c.done
	}
	if c.deadline != 0 {
		c.timer = time.AfterFunc(time.Duration(c.deadline-monoNow()), func() { c.end(context.DeadlineExceeded) })
	}
	if c.parent.Done() != nil {
		c.stopParent = context.AfterFunc(c.parent, func() { c.end(c.parent.Err()) })
	}
	return c.done
}

// Value gives the call's runState for runStateKey, the import resolver of
// the module's host modules for wazero's key, and the parent's values
// otherwise.
func (c *callContext) Value(key any) any {
	if _, ok := key.(runStateKey); ok {
		return c.st
	}
	if c.imports != nil {
		if v := c.imports.ctx.Value(key); v != nil {
			return v
		}
	}
	return c.parent.Value(key)
}

// end ends the context with err, if it has not ended.
func (c *callContext) end(err error) {
	c.mu.Lock()
	c.endLocked(err)
	c.mu.Unlock()
}

func (c *callContext) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
}

// release ends the context once the call has returned (Canceled, as a
// context.WithDeadline's cancel does) and stops its timers. It reports
// whether Done was ever asked for (something may wait on the channel).
func (c *callContext) release() (asked bool) {
	c.mu.Lock()
	c.endLocked(context.Canceled)
	t, stop, asked := c.timer, c.stopParent, c.done != nil
	c.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	if stop != nil {
		stop()
	}
	return asked
}
