package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/shortdur"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storeurl"
)

func (a *app) serveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Work the durable queue until SIGTERM or SIGINT, then stop in phases without losing work",
		Long: `Claim tasks from the store and run them, each in its own sandbox.

On start, tasks a dead previous runner left running are queued again at once
and resume from their checkpoints. While it runs it records itself in the store
(runner runners lists it) and submits the task of each schedule whose period
began (runner schedule). Only one ` + "`runner serve`" + ` may use a data
directory at a time. A store it cannot reach (PostgreSQL down or not up
yet) is waited for, up to store_wait (default 5m): /healthz answers and
/readyz says not ready meanwhile. Under a systemd unit of Type=notify it
says READY=1 once it serves, STOPPING=1 when it stops and, with
WatchdogSec=, WATCHDOG=1 while it answers /healthz, so that a frozen
runner is restarted (docs/deployment.md).

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
	floor := heapFloor() // gcfloor.go: fewer collections of a small heap
	defer keepHeapFloor(floor)
	coord, err := shutdown.New(a.shutdownConfig(), shutdown.Options{Logger: a.log.Named("shutdown")})
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	sd := newSDNotify(a.log.Named("systemd")) // sdnotify.go: under a unit of Type=notify
	r, stopped, err := a.openRunner(ctx, sd)
	if err != nil || stopped {
		return err
	}
	testGC(ctx) // testhooks_on.go: the end-to-end tests' collections
	if err := a.applyTenantSettings(ctx, r.Store()); err != nil {
		return errors.Join(err, r.Close(ctx))
	}
	if err := coord.Register(notifyStopping{Workload: r, sd: sd}); err != nil {
		return errors.Join(err, r.Close(ctx))
	}
	if err := a.startHTTP(ctx, coord, r); err != nil {
		return errors.Join(err, r.Close(ctx))
	}
	hooks := append(r.Hooks(), shutdown.Hook{Name: "logs", Priority: shutdown.PriorityLogs, Run: func(context.Context) error { _ = a.log.Sync(); return nil }})
	for _, h := range hooks {
		h.Timeout = a.cfg.Shutdown.Hooks[h.Name]
		if err := coord.AddHook(h); err != nil {
			return errors.Join(err, r.Close(ctx))
		}
	}
	// A SIGTERM that comes while the runner starts must not kill the
	// process (the signal's default action) with guests already running:
	// it is held here until the coordinator listens, then starts the stop.
	early := make(chan os.Signal, 1)
	signal.Notify(early, syscall.SIGTERM, os.Interrupt)
	// The hooks close the runner from here on.
	if err := r.Start(ctx); err != nil {
		signal.Stop(early)
		return err
	}
	stop := coord.HandleSignals(ctx)
	defer stop()
	signal.Stop(early)
	select {
	case s := <-early:
		a.log.Info("shutdown: signal received while starting, stopping", zap.Stringer("signal", s))
		go coord.Shutdown(context.WithoutCancel(ctx)) // the same stop if HandleSignals got it too
	default:
	}
	a.log.Info("runner ready", zap.String("data_dir", a.cfg.DataDir), zap.Int("workers", a.cfg.Workers),
		zap.String("owner", r.Owner()), zap.Duration("shutdown_budget", a.cfg.Shutdown.Budget))
	sd.ready()
	stopWatchdog := sd.watch(a.healthy) // WATCHDOG=1 while /healthz's check passes
	defer stopWatchdog()
	defer testWedge(a.log)() // testhooks_on.go: a runner frozen on purpose
	select {
	case <-coord.Done():
	case <-ctx.Done():
		coord.Shutdown(context.Background())
	}
	// The report counts what was still running when phase 4 ended; the
	// workers hook may still have recorded those attempts after it. What
	// matters is whether any attempt is unrecorded now.
	st := r.PoolStats()
	if st.Running > 0 {
		return &exitError{code: exitInternal, err: fmt.Errorf("%d tasks did not end within the shutdown budget; they will be recovered on the next start", st.Running)}
	}
	if st.Unrecorded > 0 {
		return &exitError{code: exitInternal, err: fmt.Errorf("the store could not record %d attempts (see the log); their tasks will run again at the next start", st.Unrecorded)}
	}
	return nil
}

// openRunner opens the embedded runner (package stint) on the configured
// store: it takes the store (SQLite: its lock), recovers the attempts this
// runner's previous process left running, and builds the sandbox and the
// pool.
//
// A store it cannot reach (PostgreSQL down or not up yet) is waited for,
// up to store_wait: meanwhile http.addr answers /healthz (alive) and
// /readyz (not ready), and SIGTERM or SIGINT ends the wait (stopped, r
// nil, and err nil unless closing what was open failed). sd tells systemd
// about the wait (STATUS=).
func (a *app) openRunner(ctx context.Context, sd *sdNotify) (r *stint.Runner, stopped bool, err error) {
	cfg := a.runnerConfig()
	cfg.StoreWait = a.cfg.StoreWait
	var probes *startingHTTP
	cfg.OnStoreWait = func() {
		sd.status("waiting for the store, up to store_wait (" + shortdur.Format(a.cfg.StoreWait) + ")")
		var err error
		if probes, err = a.startStartingHTTP(ctx); err != nil {
			a.log.Warn("cannot answer health probes while waiting for the store", zap.Error(err))
		}
	}
	sctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	r, err = a.openConfiguredRunner(sctx, cfg)
	signaled := sctx.Err() != nil && ctx.Err() == nil
	stop()
	if probes != nil {
		a.cfg.HTTPAddr = probes.stop() // the API takes over the same port
	}
	if signaled {
		err = nil
		if r != nil {
			err = r.Close(context.WithoutCancel(ctx))
		}
		a.log.Info("shutdown: signal received while starting, before any task ran; stopping")
		return nil, true, err
	}
	return r, false, err
}

// runnerConfig is the embedded runner's configuration.
func (a *app) runnerConfig() stint.Config {
	var queues map[string]int
	if len(a.cfg.Queues) > 0 {
		queues = a.cfg.Queues
	}
	return stint.Config{
		Store: a.cfg.storeURL(), StoreSync: a.cfg.StoreSync, MaxSchedules: a.cfg.MaxSchedules, Owner: a.cfg.owner(), Retention: a.cfg.Retention,
		Pool: pool.Config{
			Workers: a.cfg.Workers, Lease: a.cfg.Lease, Queues: queues, Policy: a.cfg.Policy,
			OnEvent: a.observeEvent, LostLimit: a.cfg.Snapshots.LostLimit, MaxSnapshot: a.cfg.Snapshots.MaxBytes,
			SnapshotEvery: a.cfg.Snapshots.Every, CompileRetry: a.cfg.Sandbox.CompileTimeout,
		},
		Version: readVersionInfo().Version,
		Sandbox: a.sandboxConfig(),
		Logger:  a.log,
	}
}

// openConfiguredRunner opens the runner cfg configures (runnerConfig, as
// a command changed it: runner batch's own pool), creating the data
// directory first.
func (a *app) openConfiguredRunner(ctx context.Context, cfg stint.Config) (*stint.Runner, error) {
	if _, _, err := storeurl.Parse(cfg.Store); err != nil {
		return nil, usageErrorf("store: %v", err)
	}
	if a.cfg.Store == "" {
		if err := a.ensureDataDir(); err != nil { // the store lives there
			return nil, err
		}
	}
	dir, err := a.compileCacheDir(false) // cache.go
	if err != nil {
		return nil, err
	}
	cfg.Sandbox.CacheDir = dir
	pruneCache(dir, a.cfg.Sandbox.CacheMaxBytes, a.log)
	r, err := stint.Open(ctx, cfg)
	if errors.Is(err, tasks.ErrLocked) {
		return nil, &exitError{code: exitInternal, err: fmt.Errorf("%w\nis another `runner serve` running on data_dir %s? Stop it, or give this one its own --data-dir", err, a.cfg.DataDir)}
	}
	return r, err
}

// notifyStopping is runner serve's workload: the runner, whose phased stop
// begins (StopIntake, phase 1) with STOPPING=1 to systemd.
type notifyStopping struct {
	shutdown.Workload
	sd *sdNotify
}

func (w notifyStopping) StopIntake() {
	w.sd.stopping()
	w.Workload.StopIntake()
}
