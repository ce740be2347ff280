package stint

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/shutdown"
)

// A Runner is the workload a shutdown.Coordinator stops in phases.
var _ shutdown.Workload = (*Runner)(nil)

// StopIntake makes the Runner claim nothing more (phase 1); running tasks
// go on.
func (r *Runner) StopIntake() { r.pool.StopIntake(); r.markDraining() }

// RequestStop asks every running guest to stop (stop_requested = 1;
// phase 3); each interrupted attempt is queued again with its checkpoint,
// not counted.
func (r *Runner) RequestStop() { r.pool.RequestStop() }

// ForceStop ends every running guest now (phase 4); each is queued again,
// not counted.
func (r *Runner) ForceStop() { r.pool.ForceStop() }

// Idle is closed once no attempt is in flight (claimed and not yet
// recorded).
func (r *Runner) Idle() <-chan struct{} { return r.pool.Idle() }

// Wake makes the pool look for tasks now rather than at its next poll: for
// a caller that has just stored tasks this Runner may run (runner batch).
func (r *Runner) Wake() { r.pool.Wake() }

// PoolStats are the pool's own counters (pool.Stats: attempts, outcomes,
// snapshots), for metrics and summaries.
func (r *Runner) PoolStats() pool.Stats { return r.pool.Stats() }

// Stats are the pool's counters as the coordinator counts them: an
// attempt whose result was dropped counts as finished.
func (r *Runner) Stats() shutdown.Stats {
	s := r.pool.Stats()
	return shutdown.Stats{Running: s.Running, Finished: s.Finished + s.Lost, Interrupted: s.Interrupted, Forced: s.Forced}
}

// Hooks are the Runner's cleanup hooks for a shutdown.Coordinator, in
// order: "workers" (the pool's stop, shutdown.PriorityWorkers), "sandbox"
// (PrioritySandbox), "store" (PriorityStore: pruning, the runner's record
// and schedules, wake-ups, the store, the subscriptions). Their Timeout is
// zero: the coordinator's default. Add each with AddHook after
// Register(r); Close does the same without a coordinator.
func (r *Runner) Hooks() []shutdown.Hook { return r.hooks() }

// hookWorkers names the pool's stop among the hooks (Close runs it first,
// under its own ctx).
const hookWorkers = "workers"

func (r *Runner) hooks() []shutdown.Hook {
	return []shutdown.Hook{
		{Name: hookWorkers, Priority: shutdown.PriorityWorkers, Run: func(ctx context.Context) error { r.markDraining(); return r.pool.Stop(ctx) }},
		{Name: "sandbox", Priority: shutdown.PrioritySandbox, Run: r.rt.Close},
		{Name: "store", Priority: shutdown.PriorityStore, Run: func(ctx context.Context) error {
			r.pruneMu.Lock()
			stopPruning := r.pruneStop
			r.pruneStop = func() error { return nil }
			r.pruneMu.Unlock()
			err := errors.Join(stopPruning(), r.stopOps(ctx), r.stopWakeups(), r.store.Close())
			r.closeSubscriptions()
			return err
		}},
	}
}

// pruneEvery is how often the Runner deletes the tasks past retention (at
// most; more often for a retention under four hours).
const pruneEvery = time.Hour

// prune deletes, at start and then every pruneEvery, the tasks that ended
// longer ago than Config.Retention. It returns the func that stops it (and
// waits for a prune in progress to stop).
func (r *Runner) prune() func() error {
	retention := r.cfg.Retention
	if retention <= 0 {
		return func() error { return nil }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	every := min(pruneEvery, max(retention/4, time.Second))
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			before := time.Now().Add(-retention)
			n, err := r.store.Prune(ctx, before)
			switch {
			case err != nil && ctx.Err() == nil:
				r.log.Warn("deleting tasks past retention failed; trying again later", zap.Int("deleted", n), zap.Error(err))
			case n > 0:
				r.log.Info("deleted tasks past retention", zap.Int("tasks", n), zap.Duration("retention", retention),
					zap.Time("ended_before", before))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() error {
		cancel()
		<-done
		return nil
	}
}
