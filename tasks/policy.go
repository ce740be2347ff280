package tasks

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/stint-run/stint/sandbox"
)

// RetryPolicy spaces the attempts of a failing task: exponential backoff
// with jitter, Base * 2^(failures-1), at most Max.
type RetryPolicy struct {
	// Base is the delay after the first failure. Default 1s.
	Base time.Duration
	// Max caps the delay. Default 10m.
	Max time.Duration
	// Jitter spreads each delay by up to this fraction either way, so
	// tasks that failed together do not retry together. Default 0.2.
	Jitter float64
}

// WithDefaults fills zero fields.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = time.Second
	}
	if p.Max <= 0 {
		p.Max = 10 * time.Minute
	}
	if p.Jitter == 0 {
		p.Jitter = 0.2
	}
	return p
}

// Backoff is the delay before the attempt that follows the given number of
// failures (1 for the first).
func (p RetryPolicy) Backoff(failures int) time.Duration {
	d := p.Base
	for i := 1; i < failures && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if p.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + p.Jitter*(2*rand.Float64()-1)))
	}
	return max(d, 0)
}

// decision is what the pool does with an attempt's outcome.
type decision struct {
	state   State
	counted bool
	runAt   time.Time
}

// decide applies the state machine to one outcome. stopped reports that
// the pool (shutdown) asked the attempt to stop or forced it; cancelled
// that the task's cancellation was requested.
func (p RetryPolicy) decide(t Task, out *sandbox.Outcome, stopped, cancelled bool, now time.Time) decision {
	// A guest that a forced stop could not end (the sandbox abandoned it)
	// is the guest's fault even when the pool stopped it: counted.
	stopped = stopped && !out.Abandoned
	switch {
	case out.Kind == sandbox.KindSucceeded:
		return decision{state: StateSucceeded}
	case cancelled:
		return decision{state: StateCancelled}
	case errors.Is(out.Err, errCompiling):
		// The guest never ran; the next attempt finds the module compiled,
		// or refused past the compile budget. Not counted.
		return decision{state: StateQueued, runAt: now}
	case stopped && (out.Kind == sandbox.KindInterrupted || out.Kind == sandbox.KindForced):
		// Shutdown: not the task's fault. Back in the queue at once, with
		// its checkpoint, attempt not counted.
		return decision{state: StateQueued, runAt: now}
	case out.Kind == sandbox.KindInterrupted && out.Deadline && out.CheckpointsSaved > 0:
		// A time-sliced task: it made progress and saved it before its
		// attempt deadline. Resume at once, not counted.
		return decision{state: StateQueued, runAt: now}
	case out.Kind.Permanent() || out.Kind == KindRefused:
		return decision{state: StateDead, counted: true}
	}
	failures := t.Failures + 1
	if failures >= t.MaxAttempts {
		return decision{state: StateDead, counted: true}
	}
	return decision{state: StateQueued, counted: true, runAt: now.Add(p.Backoff(failures))}
}
