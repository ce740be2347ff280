package shutdown

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ErrNotEnded is wrapped by [Report.Err] when some work was still running
// after the forced stop.
var ErrNotEnded = errors.New("shutdown: work still running after the forced stop")

// PhaseReport says how one phase went. Counters are summed over every
// workload; Finished, Interrupted and Forced are how much the workloads'
// Stats grew between the start and the end of the phase.
type PhaseReport struct {
	// Phase is which phase this is.
	Phase Phase
	// Duration is how long it took (zero if skipped).
	Duration time.Duration
	// Skipped is true if the phase did not run: nothing was running any
	// more (3, 4), the stop was escalated before it began (2, 3), or
	// there were no hooks (5).
	Skipped bool
	// Finished, Interrupted and Forced are the growth of the workloads'
	// Stats counters of the same names during the phase.
	Finished, Interrupted, Forced int
	// Running is the number of units running at the end of the phase.
	Running int
}

// MarshalLogObject writes the phase as a zap object.
func (p PhaseReport) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("phase", p.Phase.String())
	if p.Skipped {
		enc.AddBool("skipped", true)
		return nil
	}
	enc.AddDuration("duration", p.Duration)
	enc.AddInt("finished", p.Finished)
	enc.AddInt("interrupted", p.Interrupted)
	enc.AddInt("forced", p.Forced)
	enc.AddInt("running", p.Running)
	return nil
}

// Report describes a finished stop.
type Report struct {
	// Start is when the stop began (by the coordinator's clock).
	Start time.Time
	// Budget is the budget the stop ran with.
	Budget time.Duration
	// Phases has one entry per phase, 1 to 5, in order (see [Report.Phase]).
	Phases []PhaseReport
	// Finished counts units that ended on their own during the stop
	// (phases 1 to 4, mostly during the drain).
	Finished int
	// Cooperative counts units that stopped when asked (Stats.Interrupted),
	// mostly in phase 3.
	Cooperative int
	// Forced counts units ended by ForceStop in phase 4.
	Forced int
	// NotEnded counts units still running at the end of phase 4, when
	// the hooks started: they did not end even when forced.
	NotEnded int
	// Hooks has one entry per hook, in the order they ran.
	Hooks []HookReport
	// Total is how long the whole stop took. It never exceeds Budget by
	// more than the time the coordinator itself needs to move on.
	Total time.Duration
	// Escalated is true if Escalate (a second signal) cut phases 1-3 short.
	Escalated bool
	// Canceled is true if a Shutdown context ended, cutting phases 1-3 short.
	Canceled bool
}

// Phase returns the report of phase p (PhaseIntake to PhaseHooks), or a
// zero PhaseReport if there is none.
func (r Report) Phase(p Phase) PhaseReport {
	for _, pr := range r.Phases {
		if pr.Phase == p {
			return pr
		}
	}
	return PhaseReport{}
}

// HookFailures returns the hooks that failed, timed out or were skipped.
func (r Report) HookFailures() []HookReport {
	var out []HookReport
	for _, h := range r.Hooks {
		if h.Err != nil {
			out = append(out, h)
		}
	}
	return out
}

// Err returns nil if every hook succeeded and nothing was left running, or
// else the failures joined (errors.Join): one error per failed hook, and
// one wrapping [ErrNotEnded] if NotEnded > 0. Escalation, cancellation and
// forced work are not errors.
func (r Report) Err() error {
	var errs []error
	for _, h := range r.HookFailures() {
		errs = append(errs, fmt.Errorf("hook %q: %w", h.Name, h.Err))
	}
	if r.NotEnded > 0 {
		errs = append(errs, fmt.Errorf("%w: %d", ErrNotEnded, r.NotEnded))
	}
	return errors.Join(errs...)
}

// Log writes the report to log: one structured summary line ("shutdown
// finished", at Info, or Warn if anything failed or did not end; its
// "hook_runs" lists the hooks in the order they ran), then one
// Error line per hook that failed, timed out or was skipped. A nil log
// writes nothing. The Coordinator already logs its report this way to its
// own logger; call Log to write it elsewhere.
func (r Report) Log(log *zap.Logger) {
	if log == nil {
		return
	}
	failures := r.HookFailures()
	level := zapcore.InfoLevel
	if len(failures) > 0 || r.NotEnded > 0 {
		level = zapcore.WarnLevel
	}
	log.Log(level, "shutdown finished",
		zap.Duration("total", r.Total),
		zap.Duration("budget", r.Budget),
		zap.Int("finished", r.Finished),
		zap.Int("cooperative", r.Cooperative),
		zap.Int("forced", r.Forced),
		zap.Int("not_ended", r.NotEnded),
		zap.Bool("escalated", r.Escalated),
		zap.Bool("canceled", r.Canceled),
		zap.Int("hooks", len(r.Hooks)),
		zap.Int("hooks_failed", len(failures)),
		zap.Objects("phases", r.Phases),
		zap.Objects("hook_runs", r.Hooks),
	)
	for _, h := range failures {
		log.Error("shutdown hook failed",
			zap.String("hook", h.Name),
			zap.Int("priority", h.Priority),
			zap.Duration("duration", h.Duration),
			zap.Duration("timeout", h.Timeout),
			zap.Bool("timed_out", h.TimedOut),
			zap.Bool("skipped", h.Skipped),
			zap.Error(h.Err),
		)
	}
}

// clone returns a copy of r that shares no slices with it.
func (r Report) clone() Report {
	r.Phases = slices.Clone(r.Phases)
	r.Hooks = slices.Clone(r.Hooks)
	return r
}
