package shutdown

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Default values of Config, applied by [Config.WithDefaults] to fields left at zero.
const (
	DefaultBudget      = 25 * time.Second // Config.Budget
	DefaultDrain       = 5 * time.Second  // Config.Drain
	DefaultCancel      = 15 * time.Second // Config.Cancel
	DefaultForceWait   = 1 * time.Second  // Config.ForceWait
	DefaultHookTimeout = 2 * time.Second  // Config.HookTimeout
)

// ErrInvalidConfig is wrapped by every error [Config.Validate] returns.
var ErrInvalidConfig = errors.New("shutdown: invalid config")

// Config sets the durations of a phased stop. A zero field takes its default
// (see [Config.WithDefaults]); [New] applies the defaults before it validates,
// so a wait cannot be set to exactly zero (use a nanosecond).
//
// The phases share one Budget. Validate checks that the longest path through
// them fits: Drain + Cancel + ForceWait + HookTimeout <= Budget. The last term
// is the time always kept for phase 5 (cleanup hooks); if an earlier phase runs
// long (a slow StopIntake, say), the later phases are shortened so that phase 4
// still gets ForceWait and phase 5 still gets HookTimeout before the budget ends.
type Config struct {
	// Budget is the most the whole stop may take, from the start of phase 1
	// to the return of Shutdown. Default 25s: it fits under Kubernetes'
	// default 30s termination grace period and Docker's stop timeout when
	// that is set to 30s, leaving a margin for process exit.
	Budget time.Duration

	// Drain is how long running work may go on and finish normally after
	// intake stopped (phases 1 and 2 together, counted from the start of the
	// stop). Default 5s.
	Drain time.Duration

	// Cancel is how long phase 3 waits for work to stop cooperatively after
	// RequestStop. Default 15s.
	Cancel time.Duration

	// ForceWait is how long phase 4 waits, after ForceStop, for forced work
	// to end and be recorded (for example, a task stored as interrupted).
	// It is the reserve the budget always keeps for the forced stop.
	// Default 1s.
	ForceWait time.Duration

	// HookTimeout is the timeout of a hook whose own Timeout is zero, and the
	// time the budget always keeps for phase 5. Hooks may take longer in
	// total when the earlier phases end early; they never go past the
	// budget. Default 2s.
	HookTimeout time.Duration
}

// WithDefaults returns a copy of c with every zero field set to its default.
// Negative fields are left alone for Validate to refuse.
func (c Config) WithDefaults() Config {
	if c.Budget == 0 {
		c.Budget = DefaultBudget
	}
	if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	if c.Cancel == 0 {
		c.Cancel = DefaultCancel
	}
	if c.ForceWait == 0 {
		c.ForceWait = DefaultForceWait
	}
	if c.HookTimeout == 0 {
		c.HookTimeout = DefaultHookTimeout
	}
	return c
}

// Validate checks c as it is (it does not apply defaults). It refuses a
// negative field, a Budget that is not positive, and phases that cannot fit
// in the budget, with a message that names the numbers, for example:
//
//	shutdown: invalid config: drain (20s) + cancel (15s) + force wait (1s) + hooks (2s) = 38s exceeds budget 25s
//
// Every error it returns wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"budget", c.Budget},
		{"drain", c.Drain},
		{"cancel", c.Cancel},
		{"force wait", c.ForceWait},
		{"hook timeout", c.HookTimeout},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%w: %s is negative (%s)", ErrInvalidConfig, f.name, f.v))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Budget == 0 {
		return fmt.Errorf("%w: budget (0s) must be positive", ErrInvalidConfig)
	}
	sum := addSat(c.Drain, c.Cancel, c.ForceWait, c.HookTimeout)
	if sum > c.Budget {
		return fmt.Errorf("%w: drain (%s) + cancel (%s) + force wait (%s) + hooks (%s) = %s exceeds budget %s",
			ErrInvalidConfig, c.Drain, c.Cancel, c.ForceWait, c.HookTimeout, sum, c.Budget)
	}
	return nil
}

// addSat adds non-negative durations, saturating instead of overflowing.
func addSat(ds ...time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		if sum > math.MaxInt64-d {
			return math.MaxInt64
		}
		sum += d
	}
	return sum
}
