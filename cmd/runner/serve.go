package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

func (a *app) serveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Work the durable queue until SIGTERM or SIGINT, then stop in phases without losing work",
		Long: `Claim tasks from the store and run them, each in its own sandbox.

On start, tasks a dead previous runner left running are queued again at once
and resume from their checkpoints. Only one ` + "`runner serve`" + ` may use a data
directory at a time.

SIGTERM or SIGINT stops it in phases, all within shutdown.budget:
  1. stop intake: no new claims, readiness goes false (submissions are still queued)
  2. drain: running tasks may finish, up to shutdown.drain
  3. cooperative stop: guests see stop_requested = 1, save a checkpoint and
     exit, up to shutdown.cancel
  4. forced stop: wazero ends the rest; every interrupted task is queued
     again with its last checkpoint, its attempt not counted
  5. cleanup: HTTP server, workers, sandbox, store, logs
A second signal skips to the forced stop. See docs/shutdown.md.

Exit status: 0 when every task ended and was recorded; 1 when some were not
(the budget ran out, or the store failed: the next start recovers them, nothing
is lost) or the runner could not start; 2 for a bad configuration.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.serve(cmd.Context()) },
	}
}

// poolWorkload adapts the task pool to the shutdown coordinator.
type poolWorkload struct{ *pool.Pool }

func (w poolWorkload) Stats() shutdown.Stats {
	s := w.Pool.Stats()
	return shutdown.Stats{Running: s.Running, Finished: s.Finished + s.Lost, Interrupted: s.Interrupted, Forced: s.Forced}
}

func (a *app) shutdownConfig() shutdown.Config {
	return shutdown.Config{
		Budget: a.cfg.Shutdown.Budget, Drain: a.cfg.Shutdown.Drain,
		Cancel: a.cfg.Shutdown.Cancel, ForceWait: a.cfg.Shutdown.ForceWait, HookTimeout: a.cfg.Shutdown.HookTimeout,
	}
}

func (a *app) serve(ctx context.Context) (err error) {
	if err := a.checkHTTP(); err != nil {
		return err
	}
	coord, err := shutdown.New(a.shutdownConfig(), shutdown.Options{Logger: a.log.Named("shutdown")})
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	store, err := a.openStore(ctx, true)
	if err != nil {
		return err
	}
	closeStore := true
	defer func() {
		if closeStore {
			err = errors.Join(err, store.Close())
		}
	}()
	owner := a.cfg.owner()
	recovered, err := tasks.Recover(ctx, store, owner, true)
	if err != nil {
		return fmt.Errorf("recover tasks left running: %w", err)
	}
	if recovered > 0 {
		a.log.Info("recovered tasks a previous runner left running; they resume from their checkpoints", zap.Int("tasks", recovered))
	}
	rt, err := a.newRuntime(ctx)
	if err != nil {
		return err
	}
	var queues map[string]int
	if len(a.cfg.Queues) > 0 {
		queues = a.cfg.Queues
	}
	pool, err := pool.New(store, rt, pool.Config{
		Workers: a.cfg.Workers, Queues: queues, Owner: owner, MountsAllow: a.cfg.MountsAllow,
		MaxLimits: a.cfg.maxLimits(), MaxInput: a.cfg.Limits.MaxInput, Logger: a.log.Named("pool"),
	})
	if err != nil {
		return errors.Join(err, rt.Close(ctx))
	}
	if err := coord.Register(poolWorkload{pool}); err != nil {
		return err
	}
	stopWakeups := a.wakePoolOnSubmit(store, pool)
	stopPruning := a.pruneOldTasks(store)
	hooks := []shutdown.Hook{
		{Name: "workers", Priority: 20, Run: pool.Stop},
		{Name: "sandbox", Priority: 30, Run: rt.Close},
		{Name: "store", Priority: 90, Run: func(context.Context) error {
			return errors.Join(stopPruning(), stopWakeups(), store.Close())
		}},
		{Name: "logs", Priority: 100, Run: func(context.Context) error { _ = a.log.Sync(); return nil }},
	}
	if err := a.startHTTP(ctx, coord, store, pool, rt); err != nil {
		return errors.Join(err, pool.Stop(ctx), rt.Close(ctx), stopPruning(), stopWakeups())
	}
	for _, h := range hooks {
		h.Timeout = a.cfg.Shutdown.Hooks[h.Name]
		if err := coord.AddHook(h); err != nil {
			return err
		}
	}
	closeStore = false // the store hook closes it from here on
	if err := pool.Start(ctx); err != nil {
		return err
	}
	stop := coord.HandleSignals(ctx)
	defer stop()
	a.log.Info("runner ready", zap.String("data_dir", a.cfg.DataDir), zap.Int("workers", a.cfg.Workers),
		zap.String("owner", pool.Owner()), zap.Duration("shutdown_budget", a.cfg.Shutdown.Budget))
	select {
	case <-coord.Done():
	case <-ctx.Done():
		coord.Shutdown(context.Background())
	}
	// The report counts what was still running when phase 4 ended; the
	// workers hook may still have recorded those attempts after it. What
	// matters is whether any attempt is unrecorded now.
	st := pool.Stats()
	if st.Running > 0 {
		return &exitError{code: exitInternal, err: fmt.Errorf("%d tasks did not end within the shutdown budget; they will be recovered on the next start", st.Running)}
	}
	if st.Unrecorded > 0 {
		return &exitError{code: exitInternal, err: fmt.Errorf("the store could not record %d attempts (see the log); their tasks will run again at the next start", st.Unrecorded)}
	}
	return nil
}

// wakePoolOnSubmit makes the pool look for work as soon as another process
// (runner submit, another program) submits or retries a task, instead of
// at its next poll. It returns the func that stops listening. Without
// wake-ups the pool still polls.
func (a *app) wakePoolOnSubmit(store tasks.Store, pool *pool.Pool) func() error {
	wl, ok := store.(tasks.Waker)
	if !ok {
		return func() error { return nil }
	}
	wakeups, stop, err := wl.ListenWakeups()
	if err != nil {
		a.log.Warn("tasks submitted by other processes will be found by polling", zap.Error(err))
		return func() error { return nil }
	}
	pool.WakeOn(wakeups)
	return stop
}

// pruneEvery is how often runner serve deletes the tasks past retention
// (at most; more often for a retention under four hours).
const pruneEvery = time.Hour

// pruneOldTasks deletes, at start and then every pruneEvery, the tasks
// that ended longer ago than the configured retention. It returns the func
// that stops it (and waits for a prune in progress to stop).
func (a *app) pruneOldTasks(store tasks.Store) func() error {
	p, ok := store.(tasks.Pruner)
	if a.cfg.Retention <= 0 || !ok {
		return func() error { return nil }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	every := min(pruneEvery, max(a.cfg.Retention/4, time.Second))
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			before := time.Now().Add(-a.cfg.Retention)
			n, err := p.Prune(ctx, before)
			switch {
			case err != nil && ctx.Err() == nil:
				a.log.Warn("deleting tasks past retention failed; trying again later", zap.Int("deleted", n), zap.Error(err))
			case n > 0:
				a.log.Info("deleted tasks past retention", zap.Int("tasks", n), zap.Duration("retention", a.cfg.Retention),
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
