package sandbox

import (
	"context"
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
type callContext struct {
	parent   context.Context
	deadline time.Time // zero: none of its own
	st       *runState

	mu         sync.Mutex
	err        error
	done       chan struct{} // made by the first Done
	timer      *time.Timer   // the deadline's, once Done was asked for
	stopParent func() bool   // context.AfterFunc's, once Done was asked for
}

// newCallContext returns the hard context of a call under parent, with
// deadline (zero: none) and the call's state.
func newCallContext(parent context.Context, deadline time.Time, st *runState) *callContext {
	return &callContext{parent: parent, deadline: deadline, st: st}
}

// Deadline is the earlier of the call's deadline and the parent's.
func (c *callContext) Deadline() (time.Time, bool) {
	d, ok := c.parent.Deadline()
	if c.deadline.IsZero() || (ok && d.Before(c.deadline)) {
		return d, ok
	}
	return c.deadline, true
}

// endless reports whether the context can never end while the call runs
// (no deadline, a parent that is never done): the watchdog ignores such a
// call, as it ignores a run whose hard context has a nil Done.
func (c *callContext) endless() bool {
	return c.deadline.IsZero() && c.parent.Done() == nil
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
		} else if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
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
	if !c.deadline.IsZero() {
		c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	}
	if c.parent.Done() != nil {
		c.stopParent = context.AfterFunc(c.parent, func() { c.end(c.parent.Err()) })
	}
	return c.done
}

// Value gives the call's runState for runStateKey, the parent's values
// otherwise.
func (c *callContext) Value(key any) any {
	if _, ok := key.(runStateKey); ok {
		return c.st
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
