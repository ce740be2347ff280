package stint

import (
	"context"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// DefaultScheduleEvery is Config.ScheduleEvery's default: how often a
// Runner looks for a schedule whose period began.
const DefaultScheduleEvery = time.Second

// RunnerRecordRetention is how long the record of a runner that stopped
// recording itself (it died) stays in the store, shown silent, before a
// live runner deletes it.
const RunnerRecordRetention = 24 * time.Hour

// ops is what a Runner does beside its pool while it runs: it records
// itself in the store (tasks.RunnerRegistry) with each heartbeat, and
// fires the store's due schedules (tasks.ScheduleStore).
type ops struct {
	mu      sync.Mutex
	started time.Time
	kick    chan struct{} // records the runner now (draining)
	stop    func()        // stops the loop and waits for it; guarded by mu
	stopped bool          // guarded by mu
	lastErr string        // the last firing error logged (the loop's goroutine only)
}

// defaultVersion is the main module's version, "dev" when unknown.
func defaultVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// FireSchedules submits the task of every schedule of the store whose
// period began at or before now and has no task yet (checked against the
// pool's policy, as Submit does), and returns them. Several runners may
// fire one store's schedules at once: each period gets one task (its
// idempotency key, tasks.ScheduleKey). The Runner calls it every
// Config.ScheduleEvery with Config.Now; call it yourself to drive a clock
// of your own. A store without schedules fires none.
func (r *Runner) FireSchedules(ctx context.Context, now time.Time) ([]tasks.Fired, error) {
	ss, ok := r.store.(tasks.ScheduleStore)
	if !ok {
		return nil, nil
	}
	return tasks.FireSchedules(ctx, ss, now, r.pool.Submit)
}

// info is the Runner's record in the store.
func (r *Runner) info() tasks.RunnerInfo {
	host, _ := os.Hostname()
	return tasks.RunnerInfo{
		Owner: r.cfg.Owner, Host: host, PID: os.Getpid(), Version: r.cfg.Version, Started: r.ops.started,
		Lease: r.pool.Lease(), Workers: r.workers, InFlight: r.pool.Stats().Running, Draining: r.draining.Load(),
	}
}

// RecordSelf records the Runner in its store now (tasks.RunnerRegistry;
// a store without one records nothing). The Runner does it at Start and
// with each heartbeat until it stops.
func (r *Runner) RecordSelf(ctx context.Context) error {
	rr, ok := r.store.(tasks.RunnerRegistry)
	if !ok {
		return nil
	}
	return rr.RecordRunner(ctx, r.info())
}

// startOps starts the loop that records the Runner and fires schedules.
func (r *Runner) startOps() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.ops.mu.Lock()
	defer r.ops.mu.Unlock()
	if r.ops.stopped {
		cancel()
		return
	}
	r.ops.stop = func() { cancel(); <-done }
	_, registry := r.store.(tasks.RunnerRegistry)
	_, schedules := r.store.(tasks.ScheduleStore)
	beat := r.pool.Lease() / 3
	if registry { // at once, so that the runner is listed when Start returns
		rctx, rcancel := context.WithTimeout(ctx, beat)
		r.recordSelf(rctx, true)
		rcancel()
	}
	go func() {
		defer close(done)
		var recordC, fireC <-chan time.Time
		if registry {
			t := time.NewTicker(beat)
			defer t.Stop()
			recordC = t.C
		}
		if schedules && r.cfg.ScheduleEvery > 0 {
			t := time.NewTicker(r.cfg.ScheduleEvery)
			defer t.Stop()
			fireC = t.C
			r.fire(ctx)
		}
		lastPrune := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.ops.kick:
				r.recordSelf(ctx, false)
			case <-recordC:
				prune := time.Since(lastPrune) > time.Hour
				if prune {
					lastPrune = time.Now()
				}
				r.recordSelf(ctx, prune)
			case <-fireC:
				r.fire(ctx)
			}
		}
	}()
}

// recordSelf records the Runner, and deletes the records of runners
// silent past RunnerRecordRetention when prune is true; failures are
// logged (the next heartbeat tries again).
func (r *Runner) recordSelf(ctx context.Context, prune bool) {
	if err := r.RecordSelf(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("recording this runner in the store failed; trying again at the next heartbeat", zap.Error(err))
	}
	if rr, ok := r.store.(tasks.RunnerRegistry); ok && prune {
		if n, err := rr.PruneRunners(ctx, time.Now().Add(-RunnerRecordRetention)); err != nil && ctx.Err() == nil {
			r.log.Warn("deleting the records of runners gone silent failed", zap.Error(err))
		} else if n > 0 {
			r.log.Info("deleted the records of runners gone silent", zap.Int("runners", n))
		}
	}
}

// fire fires the due schedules, unless the Runner is draining.
func (r *Runner) fire(ctx context.Context) {
	if r.draining.Load() {
		return
	}
	fired, err := r.FireSchedules(ctx, r.cfg.Now())
	if err != nil && ctx.Err() == nil {
		// Said once until it changes: it is tried again every ScheduleEvery.
		if msg := err.Error(); msg != r.ops.lastErr {
			r.ops.lastErr = msg
			r.log.Warn("submitting a scheduled task failed; trying again at each look (said once until it changes)", zap.Error(err))
		}
	} else if err == nil {
		r.ops.lastErr = ""
	}
	for _, f := range fired {
		if !f.Existing {
			r.log.Info("scheduled task submitted", zap.String("schedule", f.Schedule), zap.Time("period", f.Period),
				zap.Int64("task", f.Task.ID))
		}
	}
}

// markDraining records the Runner as draining (it claims no more).
func (r *Runner) markDraining() {
	if r.draining.Swap(true) {
		return
	}
	select {
	case r.ops.kick <- struct{}{}:
	default:
	}
}

// stopOps stops the loop and removes the Runner's record: it stopped
// cleanly.
func (r *Runner) stopOps(ctx context.Context) error {
	r.ops.mu.Lock()
	stop := r.ops.stop
	r.ops.stopped, r.ops.stop = true, nil
	r.ops.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	if rr, ok := r.store.(tasks.RunnerRegistry); ok {
		return rr.RemoveRunner(ctx, r.cfg.Owner)
	}
	return nil
}
