package shutdown

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap/zapcore"
)

// Errors a hook can be reported with, besides its own.
var (
	// ErrHookTimeout is wrapped by the error of a hook that did not return
	// within its timeout. The hook's context was cancelled with it as the
	// cause (see context.Cause) and its goroutine was abandoned.
	ErrHookTimeout = errors.New("shutdown: hook timed out")
	// ErrBudgetExhausted is wrapped by the error of a hook that was cut
	// short, or not run at all, because the stop's budget ran out.
	ErrBudgetExhausted = errors.New("shutdown: budget exhausted")
	// ErrHookPanicked is wrapped by the error of a hook that panicked.
	ErrHookPanicked = errors.New("shutdown: hook panicked")
)

// Hook is a cleanup step run in phase 5, after every workload stopped or was
// forced: flush a buffer, close a store, close log files.
type Hook struct {
	// Name identifies the hook in the report and the logs.
	Name string
	// Priority orders the hooks: lower runs first. Hooks of equal priority
	// run in the order they were added.
	Priority int
	// Timeout bounds the hook. Zero means Config.HookTimeout. The budget
	// may cut it shorter.
	Timeout time.Duration
	// Run does the work. Its ctx is cancelled when the timeout or the
	// budget runs out (context.Cause tells which: ErrHookTimeout, which
	// wraps ErrBudgetExhausted when the budget cut it), and the coordinator
	// then moves on to the next hook without waiting for Run to return.
	// With the default (system) clock ctx also carries the deadline.
	// ctx keeps the values of the context given to Shutdown, never its
	// cancellation. A returned error, or a panic, is reported and the next
	// hook still runs.
	Run func(ctx context.Context) error
}

// HookReport says how one hook went.
type HookReport struct {
	// Name and Priority are the hook's.
	Name     string
	Priority int
	// Timeout is the timeout the hook was given (its own or
	// Config.HookTimeout), before the budget clipped it.
	Timeout time.Duration
	// Duration is how long the coordinator waited for it.
	Duration time.Duration
	// Err is the hook's error: the one it returned, or one wrapping
	// ErrHookTimeout (and ErrBudgetExhausted if the budget cut it short),
	// ErrHookPanicked, or ErrBudgetExhausted alone when it was skipped.
	// Nil if it succeeded.
	Err error
	// TimedOut is true if the hook did not return in time and was
	// abandoned.
	TimedOut bool
	// Skipped is true if the hook did not run because the budget was
	// already spent.
	Skipped bool
}

// MarshalLogObject writes the hook's run as a zap object: its name,
// priority and duration, and its error if it failed.
func (h HookReport) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("hook", h.Name)
	enc.AddInt("priority", h.Priority)
	enc.AddDuration("duration", h.Duration)
	if h.TimedOut {
		enc.AddBool("timed_out", true)
	}
	if h.Skipped {
		enc.AddBool("skipped", true)
	}
	if h.Err != nil {
		enc.AddString("error", h.Err.Error())
	}
	return nil
}
