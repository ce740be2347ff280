// Package stint embeds Stint in a Go program: a Runner opens a task store
// by URL, recovers the attempts its previous process left running, runs
// the worker pool over a sandbox runtime, and offers Submit, Wait, Cancel,
// Retry and a subscription to task events. It is a shutdown.Workload, so
// a shutdown.Coordinator stops it in phases without losing work. `runner
// serve` is built on it.
//
//	r, err := stint.Open(ctx, stint.Config{Store: "sqlite:/var/lib/app/stint.db"})
//	...
//	defer r.Close(context.Background())
//	r.Start(ctx)
//	sha, _ := r.PutModule(ctx, wasm)
//	task, _, _ := r.Submit(ctx, tasks.Spec{Module: sha, Input: in})
//	task, _ = r.Wait(ctx, task.ID)
//
// The parts live in their own packages: tasks (the model and the Store
// interface), tasks/storeurl (opening a store by URL), pool (the workers),
// sandbox (running one module), shutdown (the phased stop). See
// docs/architecture.md.
package stint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storeurl"
)

// Config configures a Runner. Every zero field takes the default
// documented on it; Store is required.
type Config struct {
	// Store is the task store's URL (package tasks/storeurl): sqlite:PATH
	// or a file path for SQLite, which this process then holds alone (its
	// lock), or postgres://... for a store several runners share.
	Store string
	// StoreSync is a SQLite store's commit durability (the runner's
	// store_sync, docs/operations.md): "normal" (default: a commit
	// survives a crash of the process, a power loss may lose the last
	// ones) or "full" (a commit survives a power loss too). A PostgreSQL
	// store ignores it.
	StoreSync string
	// MaxSchedules is how many schedules the store holds at most (the
	// runner's schedules.max). Default tasks.DefaultMaxSchedules;
	// negative: no limit.
	MaxSchedules int
	// Owner is this runner's lease owner id. It must be stable across
	// restarts, so that Open recovers the attempts its previous process
	// left running, and differ between runners that share a store.
	// Default: the host name and a hash of the executable's path and the
	// store URL; two processes of one program on one host sharing a store
	// must each set their own.
	Owner string
	// NoRecover skips crash recovery at Open. By default Open puts back in
	// the queue, at once and not counted, the attempts left running: on a
	// shared store those of Owner (tasks.OwnRecoverer), on SQLite every one
	// (tasks.Store.RecoverRunning: the lock says no other runner is alive).
	// Without it, those tasks wait out their lease and the lost attempt is
	// counted.
	NoRecover bool
	// StoreWait is how long Open waits for a store it cannot reach
	// (storeurl.Unavailable: a PostgreSQL server down, restarting, not
	// accepting connections yet, or the network to it cut). It tries
	// again after StoreWaitMin, then twice as long each time up to
	// StoreWaitMax (each wait jittered by a quarter), logging every
	// failed try at warn level, until the store answers (then it
	// recovers, as without a wait) or StoreWait has passed since the
	// first try (then it fails with the last error). ctx ends the wait
	// too. Default 0: Open fails at the first unreachable try.
	StoreWait time.Duration
	// OnStoreWait, when set, is called once, before Open's first wait for
	// the store, so that a caller that serves readiness can say "not
	// ready" meanwhile (`runner serve` answers /healthz and /readyz while
	// it waits).
	OnStoreWait func()
	// Pool configures the workers (Workers, Queues, the Policy a task
	// is checked against, Retry...). Open sets its Owner, and its Logger
	// and OnEvent unless set.
	Pool pool.Config
	// Sandbox configures the sandbox runtime (default limits, compilation
	// cache, watchdog).
	Sandbox sandbox.Config
	// Retention makes the Runner delete, at Start and then periodically
	// (hourly at most), the tasks that ended longer ago than this
	// (tasks.Store.Prune). Default 0: keeps them all.
	Retention time.Duration
	// EventBuffer is the buffer of each subscription (Subscribe): events
	// that find it full are dropped, never waited for. Default 256.
	EventBuffer int
	// Version is the version the Runner records itself with in the store
	// (tasks.Store.RecordRunner). Default: the main
	// module's version, "dev" when unknown.
	Version string
	// ScheduleEvery is how often the Runner looks for a schedule of the
	// store whose period began, and submits its
	// task (FireSchedules). Default DefaultScheduleEvery; negative: never.
	ScheduleEvery time.Duration
	// Now is the clock schedules are fired by. Default time.Now.
	Now func() time.Time
	// Logger receives the Runner's logs, and those of its store, pool and
	// sandbox (named "store", "pool", "sandbox", unless Pool.Logger or
	// Sandbox.Logger is set). Default: zap.NewNop().
	Logger *zap.Logger
}

// DefaultEventBuffer is Config.EventBuffer's default.
// The bounds of Open's waits between tries to reach the store (see
// Config.StoreWait).
const (
	StoreWaitMin = 100 * time.Millisecond
	StoreWaitMax = 5 * time.Second
)
const DefaultEventBuffer = 256

// WithDefaults fills every zero field but Store.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = DefaultEventBuffer
	}
	if c.Owner == "" {
		c.Owner = defaultOwner(c.Store)
	}
	if c.Version == "" {
		c.Version = defaultVersion()
	}
	if c.ScheduleEvery == 0 {
		c.ScheduleEvery = DefaultScheduleEvery
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := storeurl.Parse(c.Store); err != nil {
		errs = append(errs, fmt.Errorf("stint: Config.Store: %w", err))
	}
	switch c.StoreSync {
	case "", "normal", "full":
	default:
		errs = append(errs, fmt.Errorf("stint: Config.StoreSync %q: want normal or full", c.StoreSync))
	}
	if c.StoreWait < 0 {
		errs = append(errs, fmt.Errorf("stint: Config.StoreWait %s: want 0 (no wait) or more", c.StoreWait))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("stint: Config.Retention %s: want 0 (keep every task) or more", c.Retention))
	}
	return errors.Join(errs...)
}

// defaultOwner is Config.Owner's default: the host name and a hash of the
// executable and the store URL.
func defaultOwner(store string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "stint"
	}
	exe, _ := os.Executable()
	if abs, err := filepath.Abs(store); err == nil {
		store = abs
	}
	sum := sha256.Sum256([]byte(exe + "\x00" + store))
	return host + "-" + hex.EncodeToString(sum[:4])
}

// Runner is an embedded Stint: a store, the sandbox runtime and the
// worker pool that runs the store's tasks. Open builds it, Start runs it,
// Close (or a shutdown.Coordinator, with Hooks) stops it. Its methods are
// safe for concurrent use.
type Runner struct {
	cfg       Config
	log       *zap.Logger
	store     tasks.Store
	rt        *sandbox.Runtime
	pool      *pool.Pool
	recovered int
	workers   int

	ops      ops
	draining atomic.Bool

	stopWakeups func() error
	startOnce   sync.Once
	closeOnce   sync.Once
	closeErr    error
	pruneMu     sync.Mutex
	pruneStop   func() error // guarded by pruneMu

	subsMu  sync.Mutex
	subs    map[*subscription]struct{}
	dropped uint64
}

// Open opens the store, recovers the attempts left running (unless
// cfg.NoRecover), and builds the sandbox runtime and the pool. Nothing
// runs until Start. On SQLite, Open fails with an error wrapping
// tasks.ErrLocked while another process holds the store.
func Open(ctx context.Context, cfg Config) (_ *Runner, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, log: cfg.Logger, subs: map[*subscription]struct{}{},
		stopWakeups: func() error { return nil }, pruneStop: func() error { return nil },
		workers: cfg.Pool.WithDefaults().Workers, ops: ops{kick: make(chan struct{}, 1)}}
	if r.store, r.recovered, err = r.openStore(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.store.Close())
		}
	}()
	if r.recovered > 0 {
		r.log.Info("recovered tasks a previous runner left running; they resume from their checkpoints",
			zap.Int("tasks", r.recovered), zap.String("owner", cfg.Owner))
	}
	sc := cfg.Sandbox
	if sc.Logger == nil {
		sc.Logger = cfg.Logger.Named("sandbox")
	}
	if r.rt, err = sandbox.New(ctx, sc); err != nil {
		return nil, err
	}
	pc := cfg.Pool
	pc.Owner = cfg.Owner
	if pc.Logger == nil {
		pc.Logger = cfg.Logger.Named("pool")
	}
	if user := pc.OnEvent; user != nil {
		pc.OnEvent = func(e pool.Event) { user(e); r.publish(e) }
	} else {
		pc.OnEvent = r.publish
	}
	if r.pool, err = pool.New(r.store, r.rt, pc); err != nil {
		return nil, errors.Join(err, r.rt.Close(ctx))
	}
	r.listenWakeups()
	return r, nil
}

// openStore opens the store and recovers the attempts left running
// (unless Config.NoRecover), trying again while the store cannot be
// reached, for up to Config.StoreWait.
func (r *Runner) openStore(ctx context.Context) (tasks.Store, int, error) {
	start := time.Now()
	wait := StoreWaitMin
	for try := 1; ; try++ {
		s, n, err := r.tryStore(ctx)
		if err == nil || !storeurl.Unavailable(err) || r.cfg.StoreWait <= 0 {
			return s, n, err
		}
		waited := time.Since(start)
		left := r.cfg.StoreWait - waited
		if left <= 0 {
			return nil, 0, fmt.Errorf("stint: the store stayed unreachable for %s (%d tries; Config.StoreWait, store_wait): %w",
				waited.Round(time.Millisecond), try, err)
		}
		if try == 1 && r.cfg.OnStoreWait != nil {
			r.cfg.OnStoreWait()
		}
		d := min(wait*3/4+rand.N(wait/2+1), left)
		r.log.Warn("store unreachable; waiting for it", zap.Int("try", try), zap.Duration("retry_in", d),
			zap.Duration("waited", waited.Round(time.Millisecond)), zap.Duration("gives_up_in", left.Round(time.Millisecond)),
			zap.Error(err))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, 0, fmt.Errorf("stint: stopped waiting for the store: %w (last try: %w)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, StoreWaitMax)
	}
}

// tryStore opens the store and recovers the attempts left running; the
// store is closed again when recovery fails.
func (r *Runner) tryStore(ctx context.Context) (tasks.Store, int, error) {
	s, err := storeurl.Open(ctx, r.cfg.Store, storeurl.Options{Exclusive: true, Logger: r.cfg.Logger.Named("store"), Sync: r.cfg.StoreSync,
		MaxSchedules: r.cfg.MaxSchedules})
	if err != nil {
		return nil, 0, err
	}
	if r.cfg.NoRecover {
		return s, 0, nil
	}
	n, err := tasks.Recover(ctx, s, r.cfg.Owner, true, r.cfg.Pool.LostLimit) // 0: the default
	if err != nil {
		return nil, 0, errors.Join(fmt.Errorf("stint: recover the attempts left running: %w", err), s.Close())
	}
	return s, n, nil
}

// listenWakeups makes the pool look for work as soon as another process
// submits or retries a task (tasks.Store.ListenWakeups), instead of at its
// next poll.
func (r *Runner) listenWakeups() {
	ch, stop, err := r.store.ListenWakeups()
	if err != nil {
		r.log.Warn("tasks submitted by other processes will be found by polling", zap.Error(err))
		return
	}
	r.pool.WakeOn(ch)
	r.stopWakeups = stop
}

// Start starts claiming and running tasks, the pruning of tasks past
// Config.Retention, the Runner's record in the store (renewed with each
// heartbeat, removed when it stops) and the firing of due schedules. It
// does not block. Safe to call twice.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.pool.Start(ctx); err != nil {
		return err
	}
	r.startOnce.Do(func() {
		r.pruneMu.Lock()
		defer r.pruneMu.Unlock()
		r.pruneStop = r.prune()
		r.ops.started = time.Now()
		r.startOps()
	})
	return nil
}

// Store is the Runner's store (for what the Runner does not wrap: List,
// Checkpoint, Prune...). Do not close it: Close does.
func (r *Runner) Store() tasks.Store { return r.store }

// Pool is the Runner's worker pool (its Stats, say).
func (r *Runner) Pool() *pool.Pool { return r.pool }

// Runtime is the Runner's sandbox runtime (its Stats, say).
func (r *Runner) Runtime() *sandbox.Runtime { return r.rt }

// Owner is the Runner's lease owner id.
func (r *Runner) Owner() string { return r.cfg.Owner }

// Recovered is how many attempts left running Open recovered.
func (r *Runner) Recovered() int { return r.recovered }

// PutModule stores a wasm module and returns its hex sha256, the Module of
// a tasks.Spec.
func (r *Runner) PutModule(ctx context.Context, wasm []byte) (string, error) {
	return r.store.PutModule(ctx, wasm)
}

// Submit queues a task, checked against the pool's limits and mount
// allow-list (errors wrap tasks.ErrInvalidSpec), and wakes the pool. With
// an IdempotencyKey already used it returns the first task and
// existing=true.
func (r *Runner) Submit(ctx context.Context, spec tasks.Spec) (task tasks.Task, existing bool, err error) {
	return r.pool.Submit(ctx, spec)
}

// Get returns a task (tasks.ErrNotFound if none).
func (r *Runner) Get(ctx context.Context, id int64) (tasks.Task, error) { return r.store.Get(ctx, id) }

// Attempts returns a task's attempts, oldest first, each with the tail of
// its stderr.
func (r *Runner) Attempts(ctx context.Context, id int64) ([]tasks.Attempt, error) {
	return r.store.Attempts(ctx, id)
}

// Wait blocks until the task is terminal (succeeded, dead, cancelled) or
// ctx ends, and returns it.
func (r *Runner) Wait(ctx context.Context, id int64) (tasks.Task, error) { return r.pool.Wait(ctx, id) }

// Cancel cancels a task: a queued one at once, a running one within a
// heartbeat (its guest sees stop_requested, then is forced).
// tasks.ErrInvalidState for a task already terminal.
func (r *Runner) Cancel(ctx context.Context, id int64) (tasks.Task, error) {
	return r.store.Cancel(ctx, id)
}

// Retry queues a dead or cancelled task again, its failures reset, and
// wakes the pool. tasks.ErrInvalidState otherwise.
func (r *Runner) Retry(ctx context.Context, id int64) (tasks.Task, error) {
	t, err := r.store.Retry(ctx, id)
	if err == nil {
		r.pool.Wake()
	}
	return t, err
}

// Close stops the Runner: no new claims; running tasks may finish until
// ctx is done, then they are forced and queued again, not counted; then
// the runtime and the store are closed and the subscriptions' channels
// closed. Safe to call twice. Under a shutdown.Coordinator, register the
// Runner and add its Hooks instead.
func (r *Runner) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		errs := []error{r.pool.Stop(ctx)}
		// The cleanup runs whether or not the drain's ctx is done.
		cleanup := context.WithoutCancel(ctx)
		for _, h := range r.hooks() {
			if h.Name != hookWorkers { // stopped above, under ctx
				errs = append(errs, h.Run(cleanup))
			}
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}
