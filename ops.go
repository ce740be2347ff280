package stint

import (
	"context"
	"errors"
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
	st := r.pool.Stats()
	return tasks.RunnerInfo{
		Owner: r.cfg.Owner, Host: host, PID: os.Getpid(), Version: r.cfg.Version, Started: r.ops.started,
		Lease: r.pool.Lease(), Workers: r.workers, InFlight: st.Running, Held: st.Held, Draining: r.draining.Load(),
	}
}

// RecordSelf records the Runner in its store now (tasks.RunnerRegistry;
// a store without one records nothing). The Runner does it at Start and
// with each heartbeat until it stops. When the store says a drain was
// asked of this Runner (tasks.RunnerRegistry.RequestDrain: runner
// runners drain, the API, the dashboard), it stops claiming
// (StopIntake) and finishes what it runs.
func (r *Runner) RecordSelf(ctx context.Context) error {
	rr, ok := r.store.(tasks.RunnerRegistry)
	if !ok {
		return nil
	}
	draining, err := rr.RecordRunner(ctx, r.info())
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
	_, registry := r.store.(tasks.RunnerRegistry)
	_, schedules := r.store.(tasks.ScheduleStore)
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
			case <-quit:
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
	if rr, ok := r.store.(tasks.RunnerRegistry); ok {
		return rr.RemoveRunner(ctx, r.cfg.Owner)
	}
	return nil
}

// errNoOperator is the operator methods' error on a store without
// tasks.Operator (both backends have it).
var errNoOperator = errors.New("this store cannot delete tasks or pause queues")

// operator returns the store's tasks.Operator.
func (r *Runner) operator() (tasks.Operator, error) {
	op, ok := r.store.(tasks.Operator)
	if !ok {
		return nil, errNoOperator
	}
	return op, nil
}

// Delete deletes a task that is not running, with its attempts, input,
// result and checkpoint (its module stays). tasks.ErrInvalidState for a
// running task (Cancel it first), tasks.ErrNotFound for an unknown one.
func (r *Runner) Delete(ctx context.Context, id int64) error {
	op, err := r.operator()
	if err != nil {
		return err
	}
	return op.Delete(ctx, id)
}

// PauseQueue pauses queue in the store: no runner sharing the store
// claims its queued tasks until ResumeQueue (see tasks.Operator for how
// soon another runner honours it); running attempts go on, and the queue
// still takes submissions. A queue need hold no task to be paused; an
// empty or over-long name is tasks.ErrInvalidSpec.
func (r *Runner) PauseQueue(ctx context.Context, queue string) error {
	op, err := r.operator()
	if err != nil {
		return err
	}
	return op.PauseQueue(ctx, queue)
}

// ResumeQueue resumes a paused queue and wakes the pool to claim its
// tasks; resuming a queue that is not paused does nothing.
func (r *Runner) ResumeQueue(ctx context.Context, queue string) error {
	op, err := r.operator()
	if err != nil {
		return err
	}
	if err := op.ResumeQueue(ctx, queue); err != nil {
		return err
	}
	r.pool.Wake()
	return nil
}

// PausedQueues lists the store's paused queues by name.
func (r *Runner) PausedQueues(ctx context.Context) ([]tasks.PausedQueue, error) {
	op, err := r.operator()
	if err != nil {
		return nil, err
	}
	return op.PausedQueues(ctx)
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
