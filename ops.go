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
// itself in the store (tasks.Store.RecordRunner) with each heartbeat, and
// fires the store's due schedules (tasks.FireSchedules).
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
// of your own.
func (r *Runner) FireSchedules(ctx context.Context, now time.Time) ([]tasks.Fired, error) {
	return tasks.FireSchedules(ctx, r.store, now, r.pool.Submit)
}

// info is the Runner's record in the store.
func (r *Runner) info() tasks.RunnerInfo {
	host, _ := os.Hostname()
	st := r.pool.Stats()
	return tasks.RunnerInfo{
		Owner: r.cfg.Owner, Host: host, PID: os.Getpid(), Version: r.cfg.Version, Started: r.ops.started,
		Lease: r.pool.Lease(), Workers: r.workers, InFlight: st.Running, Held: st.Held, Draining: r.draining.Load(),
	}
}

// RecordSelf records the Runner in its store now
// (tasks.Store.RecordRunner). The Runner does it at Start and with each
// heartbeat until it stops. When the store says a drain was asked of
// this Runner (tasks.Store.RequestDrain: runner runners drain, the API,
// the dashboard), it stops claiming (StopIntake) and finishes what it
// runs.
func (r *Runner) RecordSelf(ctx context.Context) error {
	draining, err := r.store.RecordRunner(ctx, r.info())
	if err == nil && draining && !r.draining.Load() {
		r.log.Warn("a drain was asked of this runner: it claims no more tasks and finishes those it runs; stop it once it is idle",
			zap.String("owner", r.cfg.Owner))
		r.StopIntake()
	}
	return err
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
	beat := r.pool.Lease() / 3
	// Stopping lets a record or a firing under way finish (for up to a
	// heartbeat) before it cancels it: a record's upsert cancelled in
	// flight may still commit on a PostgreSQL server after stopOps has
	// removed the record, which then shows the runner draining forever
	// (CI saw it: TestPostgresRunnersAndSchedule).
	quit := make(chan struct{})
	r.ops.stop = func() {
		close(quit)
		t := time.NewTimer(beat)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
		cancel()
		<-done
	}
	// At once, so that the runner is listed when Start returns.
	rctx, rcancel := context.WithTimeout(ctx, beat)
	r.recordSelf(rctx, true)
	rcancel()
	go func() {
		defer close(done)
		record := time.NewTicker(beat)
		defer record.Stop()
		var fireC <-chan time.Time
		if r.cfg.ScheduleEvery > 0 {
			t := time.NewTicker(r.cfg.ScheduleEvery)
			defer t.Stop()
			fireC = t.C
			r.fire(ctx)
		}
		lastPrune := time.Now()
		for {
			select {
			case <-quit:
				return
			case <-r.ops.kick:
				r.recordSelf(ctx, false)
			case <-record.C:
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
	if prune {
		if n, err := r.store.PruneRunners(ctx, time.Now().Add(-RunnerRecordRetention)); err != nil && ctx.Err() == nil {
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
		if f.Skipped != "" {
			r.log.Info("scheduled period skipped", zap.String("schedule", f.Schedule), zap.Time("period", f.Period),
				zap.String("reason", f.Skipped))
			continue
		}
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
	return r.store.RemoveRunner(ctx, r.cfg.Owner)
}

// Delete deletes a task that is not running, with its attempts, input,
// result and checkpoint (its module stays). tasks.ErrInvalidState for a
// running task (Cancel it first), tasks.ErrNotFound for an unknown one.
func (r *Runner) Delete(ctx context.Context, id int64) error {
	return r.store.Delete(ctx, id)
}

// PauseQueue pauses queue in the store: no runner sharing the store
// claims its queued tasks until ResumeQueue (see tasks.Store.PauseQueue
// for how soon another runner honours it); running attempts go on, and the queue
// still takes submissions. A queue need hold no task to be paused; an
// empty or over-long name is tasks.ErrInvalidSpec.
func (r *Runner) PauseQueue(ctx context.Context, queue string) error {
	return r.store.PauseQueue(ctx, queue)
}

// ResumeQueue resumes a paused queue and wakes the pool to claim its
// tasks; resuming a queue that is not paused does nothing.
func (r *Runner) ResumeQueue(ctx context.Context, queue string) error {
	if err := r.store.ResumeQueue(ctx, queue); err != nil {
		return err
	}
	r.pool.Wake()
	return nil
}

// PausedQueues lists the store's paused queues by name.
func (r *Runner) PausedQueues(ctx context.Context) ([]tasks.PausedQueue, error) {
	return r.store.PausedQueues(ctx)
}

// Bulk applies a (retry, cancel or delete) to every task f selects in
// the states a applies to, and says how many it matched, acted on and
// skipped (moved on meanwhile); with dryRun it only counts, so that a
// caller can show the count before acting. A filter that sets nothing is
// refused unless f.All is set (tasks.BulkFilter.Check). A bulk retry
// wakes the pool. See tasks.Bulk.
func (r *Runner) Bulk(ctx context.Context, a tasks.Action, f tasks.BulkFilter, dryRun bool) (tasks.BulkResult, error) {
	res, err := tasks.Bulk(ctx, r.store, a, f, dryRun)
	if a == tasks.ActionRetry && res.Done > 0 {
		r.pool.Wake()
	}
	return res, err
}
