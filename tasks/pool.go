package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox"
)

// PoolConfig configures a worker Pool. Every zero field takes the default
// documented on it.
type PoolConfig struct {
	// Workers is how many tasks run at once. Default: the number of CPUs.
	Workers int
	// Queues limits the pool to these queues, each with its own maximum
	// concurrency (0: up to Workers). Nil: every queue.
	Queues map[string]int
	// Owner names this pool in leases; unique per process.
	// Default: host-pid-random.
	Owner string
	// Lease is how long a claim holds without a heartbeat before another
	// pool may take the task over. Default 30s.
	Lease time.Duration
	// Heartbeat is how often leases are renewed (and cancellations and
	// progress exchanged with the store). Default Lease/3.
	Heartbeat time.Duration
	// ProgressEvery is how often the guests' latest progress reports are
	// written to the store while they run (only those that changed; also at
	// each heartbeat and at the end of an attempt). Default 1s.
	ProgressEvery time.Duration
	// ClaimBatch caps the tasks claimed, and completions written, in one
	// transaction. Default 64.
	ClaimBatch int
	// ClaimAhead is how much work the pool claims beyond its free workers,
	// in time: it keeps up to Workers*ClaimAhead/(average attempt duration)
	// extra tasks claimed (at most ClaimBatch), so that short tasks are
	// claimed and completed in batches while long tasks are never hoarded
	// (with attempts of ClaimAhead or longer nothing is claimed ahead).
	// Default 20ms; negative disables claiming ahead.
	ClaimAhead time.Duration
	// Poll is how long an idle pool waits before it looks for work again
	// (a Submit through this pool wakes it at once). Default 100ms.
	Poll time.Duration
	// CancelGrace is how long a running task whose cancellation was
	// requested has to stop after stop_requested before it is forced.
	// Default 5s.
	CancelGrace time.Duration
	// Retry spaces failed attempts.
	Retry RetryPolicy
	// MountsAllow lists the host directories tasks may mount, symlinks
	// resolved. The pool checks every attempt's mounts against it before
	// running (whoever submitted the task): a task that asks for another
	// directory, or one that does not exist, ends dead at once with
	// outcome KindRefused. Submit also refuses it, as an early error.
	// Empty: no mounts.
	MountsAllow []string
	// MaxLimits caps what a task may ask for (zero fields: no cap beyond
	// the sandbox runtime's).
	MaxLimits Limits
	// MaxInput caps the input of a task submitted through the pool, in
	// bytes (0: no cap).
	MaxInput int64
	// Logger receives the pool's logs. Default: zap.NewNop().
	Logger *zap.Logger
	// Now is the pool's clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults fills every zero field.
func (c PoolConfig) WithDefaults() PoolConfig {
	if c.Workers <= 0 {
		c.Workers = runtime.NumCPU()
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = c.Lease / 3
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = time.Second
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = 64
	}
	if c.ClaimAhead == 0 {
		c.ClaimAhead = 20 * time.Millisecond
	}
	if c.Poll <= 0 {
		c.Poll = 100 * time.Millisecond
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 5 * time.Second
	}
	c.Retry = c.Retry.WithDefaults()
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c PoolConfig) Validate() error {
	var errs []error
	if c.Heartbeat >= c.Lease {
		errs = append(errs, fmt.Errorf("tasks: heartbeat (%s) must be shorter than the lease (%s)", c.Heartbeat, c.Lease))
	}
	for q, n := range c.Queues {
		if q == "" || n < 0 {
			errs = append(errs, fmt.Errorf("tasks: queue %q: want a name and a concurrency >= 0", q))
		}
	}
	return errors.Join(errs...)
}

// PoolStats are the pool's counters. Running is the number of attempts in
// flight; the others count ended attempts since the pool started.
type PoolStats struct {
	// Running: attempts in flight (claimed and not yet recorded, including
	// those claimed ahead that no worker has started).
	Running int
	// Started: attempts a worker has started.
	Started int
	// Finished: attempts that ended on their own (any outcome).
	Finished int
	// Interrupted: attempts that stopped on the pool's RequestStop.
	Interrupted int
	// Forced: attempts the pool's ForceStop ended.
	Forced int
	// Lost: attempts whose result was dropped: their lease was taken over,
	// or the store could not record them (Unrecorded).
	Lost int
	// Unrecorded: attempts whose results the store still refused when the
	// pool stopped (a full disk, say); until then the pool keeps them and
	// retries. Their tasks stay running in the store until their lease
	// expires or the next start recovers them, and then run again.
	Unrecorded int
}

// Pool claims tasks from a Store under leases and runs each in the
// sandbox. It implements the shutdown ladder: StopIntake, RequestStop,
// ForceStop, Idle (see package shutdown).
type Pool struct {
	store Store
	rt    *sandbox.Runtime
	cfg   PoolConfig
	log   *zap.Logger

	startOnce, stopIntakeOnce, requestOnce, forceOnce sync.Once
	started                                           atomic.Bool
	intakeStopped                                     chan struct{}
	stopRequested                                     chan struct{}
	forceCtx                                          context.Context
	forceCancel                                       context.CancelCauseFunc
	wake                                              chan struct{}
	done                                              chan struct{}
	completions                                       chan completion
	ready                                             chan *attempt  // claimed, waiting for a worker
	avgRun                                            atomic.Int64   // moving average of attempt durations (ns)
	wg                                                sync.WaitGroup // claimer, workers, heartbeater, completer

	mu       sync.Mutex
	running  map[int64]*attempt
	perQueue map[string]int
	inflight int // claimed, not yet recorded
	idle     []chan struct{}
	waiters  map[int64][]chan struct{}
	stats    PoolStats
}

// attempt is one running attempt.
type attempt struct {
	claimed    Claimed
	queue      string
	stop       chan struct{} // soft stop of this attempt
	stopOnce   sync.Once
	ctx        context.Context // the attempt's hard context (its lifetime is the attempt's)
	cancel     context.CancelCauseFunc
	byPool     atomic.Bool // the pool asked it to stop (shutdown)
	cancelled  atomic.Bool // the task's cancellation was requested
	lost       atomic.Bool
	progress   atomic.Pointer[[2]int64]
	progressMu sync.Mutex // guards reported
	reported   [2]int64
	started    time.Time // when a worker started it

	// mounts are the task's mounts as this runner grants them, host paths
	// resolved (grantMounts).
	mounts []sandbox.Mount
}

func (a *attempt) softStop() { a.stopOnce.Do(func() { close(a.stop) }) }

type completion struct {
	c    Completion
	a    *attempt
	kind string // "finished", "interrupted", "forced"
}

// NewPool builds a pool over a store and a sandbox runtime; Start runs it.
func NewPool(store Store, rt *sandbox.Runtime, cfg PoolConfig) (*Pool, error) {
	if store == nil || rt == nil {
		return nil, errors.New("tasks: NewPool needs a store and a runtime")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	forceCtx, forceCancel := context.WithCancelCause(context.Background())
	return &Pool{
		store: store, rt: rt, cfg: cfg, log: cfg.Logger,
		intakeStopped: make(chan struct{}), stopRequested: make(chan struct{}),
		forceCtx: forceCtx, forceCancel: forceCancel,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		// Both channels hold every attempt the pool may have in flight, so
		// neither a worker nor the claimer ever blocks on them.
		completions: make(chan completion, cfg.Workers+cfg.ClaimBatch),
		ready:       make(chan *attempt, cfg.Workers+cfg.ClaimBatch),
		running:     map[int64]*attempt{}, perQueue: map[string]int{}, waiters: map[int64][]chan struct{}{},
	}, nil
}

// Owner is the pool's lease owner id.
func (p *Pool) Owner() string { return p.cfg.Owner }

// Start starts claiming and running tasks. It does not block; ctx only
// bounds the start itself. Safe to call twice.
func (p *Pool) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.startOnce.Do(func() {
		p.started.Store(true)
		p.wg.Add(3 + p.cfg.Workers)
		for range p.cfg.Workers {
			go p.worker()
		}
		go p.claimLoop()
		go p.heartbeatLoop()
		go p.completeLoop()
	})
	return nil
}

// Submit queues a task through the pool's store and wakes the pool. It
// checks the spec against the pool's limits and mount allow-list.
func (p *Pool) Submit(ctx context.Context, spec Spec) (Task, bool, error) {
	if err := p.checkSpec(spec); err != nil {
		return Task{}, false, err
	}
	t, existing, err := p.store.Submit(ctx, spec)
	if err == nil {
		p.Wake()
	}
	return t, existing, err
}

// checkSpec enforces MountsAllow, MaxLimits and MaxInput.
func (p *Pool) checkSpec(s Spec) error {
	return CheckSpec(s, Policy{MountsAllow: p.cfg.MountsAllow, Max: p.cfg.MaxLimits, MaxInput: p.cfg.MaxInput})
}

// WakeOn makes the pool look for work each time ch gets a value (wake-ups
// from other processes, such as sqlite.Store.ListenWakeups), until the
// pool stops. A nil ch does nothing.
func (p *Pool) WakeOn(ch <-chan struct{}) {
	if ch == nil {
		return
	}
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	p.wg.Add(1) // under mu: before stopOnce closes done and waits
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-ch:
				p.Wake()
			case <-p.done:
				return
			}
		}
	}()
}

// Wake makes an idle pool look for work now.
func (p *Pool) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Wait blocks until the task reaches a terminal state (or ctx ends) and
// returns it.
func (p *Pool) Wait(ctx context.Context, id int64) (Task, error) {
	for {
		ch := p.addWaiter(id)
		t, err := p.store.Get(ctx, id)
		if err != nil || t.State.Terminal() {
			p.removeWaiter(id, ch)
			return t, err
		}
		select {
		case <-ch:
		case <-time.After(p.cfg.Poll * 5): // another process may finish it
			p.removeWaiter(id, ch)
		case <-ctx.Done():
			p.removeWaiter(id, ch)
			return t, ctx.Err()
		}
	}
}

// addWaiter returns a channel closed when this pool records an attempt of
// task id.
func (p *Pool) addWaiter(id int64) chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	p.waiters[id] = append(p.waiters[id], ch)
	p.mu.Unlock()
	return ch
}

func (p *Pool) removeWaiter(id int64, ch chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ws := p.waiters[id]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(p.waiters, id)
	} else {
		p.waiters[id] = ws
	}
}

// StopIntake makes the pool claim nothing more; running tasks go on.
func (p *Pool) StopIntake() {
	p.stopIntakeOnce.Do(func() { close(p.intakeStopped) })
}

// RequestStop asks every running guest to stop (stop_requested = 1); each
// interrupted attempt is queued again with its checkpoint, not counted.
// It implies StopIntake.
func (p *Pool) RequestStop() {
	p.StopIntake()
	p.requestOnce.Do(func() {
		close(p.stopRequested)
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, a := range p.running {
			a.byPool.Store(true)
			a.softStop()
		}
	})
}

// ForceStop ends every running guest now (wazero closes its module); each
// is recorded as interrupted and queued again, not counted. It implies
// RequestStop.
func (p *Pool) ForceStop() {
	p.RequestStop()
	p.forceOnce.Do(func() { p.forceCancel(errors.New("pool forced to stop")) })
}

// Idle returns a channel closed once no attempt is in flight (claimed and
// not yet recorded in the store).
func (p *Pool) Idle() <-chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight == 0 {
		close(ch)
	} else {
		p.idle = append(p.idle, ch)
	}
	return ch
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Running = p.inflight
	return s
}

// Stop stops the pool: no new claims, running tasks may finish until ctx is
// done, then they are forced (and queued again, not counted). It returns
// once every attempt is recorded and the pool's goroutines have ended, or
// with an error if forced attempts could not be recorded within
// forceRecordWait (a store that hangs): their leases then expire and the
// tasks run again, so nothing is lost. Safe to call twice. For the phased
// stop, see package shutdown.
func (p *Pool) Stop(ctx context.Context) error {
	p.StopIntake()
	select {
	case <-p.Idle():
	case <-ctx.Done():
		p.ForceStop()
		select {
		case <-p.Idle():
		case <-time.After(forceRecordWait):
			return fmt.Errorf("tasks: %d attempts not recorded %s after the forced stop", p.Stats().Running, forceRecordWait)
		}
	}
	p.ForceStop() // nothing is running: this only releases the context
	if p.started.Load() {
		p.stopOnce()
	}
	return nil
}

// forceRecordWait bounds how long Stop waits for forced attempts to be
// recorded; a forced guest returns in microseconds, the write in
// milliseconds.
const forceRecordWait = 10 * time.Second

func (p *Pool) stopOnce() {
	select {
	case <-p.done:
	default:
		p.mu.Lock()
		select {
		case <-p.done:
		default:
			close(p.done)
		}
		p.mu.Unlock()
	}
	p.wg.Wait()
}

// maxClaimBackoff bounds the wait between claims while the store fails.
const maxClaimBackoff = 5 * time.Second

func (p *Pool) claimLoop() {
	defer p.wg.Done()
	defer p.releaseWaiting()
	failures := 0 // consecutive failed claims
	for {
		select {
		case <-p.intakeStopped:
			return
		case <-p.done:
			return
		default:
		}
		n, err := p.claimOnce()
		if n > 0 {
			continue
		}
		wait := p.cfg.Poll
		if err != nil {
			failures++
			// Back off while the store fails (a locked or full disk), and
			// say so once per doubling rather than at every poll.
			wait = min(p.cfg.Poll<<min(failures, 6), maxClaimBackoff)
			if failures&(failures-1) == 0 {
				p.log.Error("claim failed; retrying", zap.Int("failures", failures), zap.Duration("next_try", wait), zap.Error(err))
			}
		} else if failures > 0 {
			p.log.Info("claims work again", zap.Int("failures", failures))
			failures = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-p.wake:
		case <-t.C:
		case <-p.intakeStopped:
		case <-p.done:
		}
		t.Stop()
	}
}

// claimAhead is how many tasks to hold beyond the free workers.
func (p *Pool) claimAhead() int {
	avg := time.Duration(p.avgRun.Load())
	if p.cfg.ClaimAhead <= 0 || avg <= 0 || avg >= p.cfg.ClaimAhead {
		return 0
	}
	return min(p.cfg.ClaimBatch, p.cfg.Workers*int(p.cfg.ClaimAhead/avg))
}

// observe folds an attempt's duration into the moving average.
func (p *Pool) observe(d time.Duration) {
	old := p.avgRun.Load()
	if old == 0 {
		p.avgRun.Store(int64(d))
		return
	}
	p.avgRun.Store(old + (int64(d)-old)/8)
}

// claimOnce claims as many tasks as there is room for and hands them to
// the workers.
// claimOnce claims what the pool has room for and hands it to the workers;
// it returns how many tasks it claimed, and the store's error.
func (p *Pool) claimOnce() (int, error) {
	p.mu.Lock()
	room := p.cfg.Workers + p.claimAhead() - p.inflight
	var queues map[string]int
	if p.cfg.Queues != nil {
		queues = map[string]int{}
		for q, n := range p.cfg.Queues {
			if n == 0 {
				n = p.cfg.Workers
			}
			if avail := n - p.perQueue[q]; avail > 0 {
				queues[q] = avail
			}
		}
	}
	p.mu.Unlock()
	room = min(room, p.cfg.ClaimBatch)
	if room <= 0 || (queues != nil && len(queues) == 0) {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease/2)
	claimed, err := p.store.Claim(ctx, ClaimRequest{Owner: p.cfg.Owner, Queues: queues, Max: room, Lease: p.cfg.Lease})
	cancel()
	if err != nil {
		return 0, err
	}
	for _, c := range claimed {
		p.ready <- p.newAttempt(c)
	}
	return len(claimed), nil
}

// newAttempt registers a claimed task: from here on it is in flight, its
// lease is renewed, and a stop or cancel reaches it.
func (p *Pool) newAttempt(c Claimed) *attempt {
	ctx, cancel := context.WithCancelCause(p.forceCtx)
	a := &attempt{claimed: c, queue: c.Task.Queue, stop: make(chan struct{}), ctx: ctx, cancel: cancel}
	p.mu.Lock()
	p.running[c.Task.ID] = a
	p.perQueue[a.queue]++
	p.inflight++
	p.mu.Unlock()
	if c.Task.CancelRequested {
		p.cancelAttempt(a)
	}
	return a
}

// worker runs claimed attempts one after another.
func (p *Pool) worker() {
	if p.work() {
		p.wg.Done()
	}
}

// work runs claimed attempts until the pool stops (true), or until the
// sandbox's stop watchdog abandons this goroutine's attempt (false): the
// goroutine that took its place (takeOver) holds its count in p.wg.
func (p *Pool) work() bool {
	for {
		select {
		case a := <-p.ready:
			select {
			case <-p.intakeStopped: // claimed ahead, never started: give it back
				p.release([]*attempt{a})
			default:
				if !p.runAttempt(a) {
					return false
				}
			}
		case <-p.done:
			return true
		}
	}
}

// releaseWaiting gives back every claimed attempt no worker has started.
func (p *Pool) releaseWaiting() {
	var waiting []*attempt
	for {
		select {
		case a := <-p.ready:
			waiting = append(waiting, a)
		default:
			p.release(waiting)
			return
		}
	}
}

// release returns attempts that never started to the queue, as if they
// had not been claimed. If the store cannot be reached their leases expire
// (or the next start recovers them): nothing is lost.
func (p *Pool) release(as []*attempt) {
	if len(as) == 0 {
		return
	}
	leases := make([]Lease, len(as))
	for i, a := range as {
		leases[i] = a.claimed.Lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease/2)
	defer cancel()
	if err := p.store.Release(ctx, leases); err != nil {
		p.log.Warn("releasing tasks claimed ahead failed; their leases will expire", zap.Int("tasks", len(as)), zap.Error(err))
	}
	for _, a := range as {
		a.cancel(nil)
		p.finish(a, "released")
	}
}

// cancelAttempt handles a requested cancellation: stop_requested, then
// forced after CancelGrace.
func (p *Pool) cancelAttempt(a *attempt) {
	if a.cancelled.Swap(true) {
		return
	}
	a.softStop()
	time.AfterFunc(p.cfg.CancelGrace, func() { a.cancel(errors.New("task cancelled")) })
}

// runAttempt runs and records an attempt. It returns false if the stop
// watchdog abandoned it: it was recorded by takeOver, and this goroutine
// is no longer a worker.
func (p *Pool) runAttempt(a *attempt) bool {
	defer a.cancel(nil)
	t := a.claimed.Task
	a.started = p.cfg.Now()
	p.mu.Lock()
	p.stats.Started++
	p.mu.Unlock()
	if ce := p.log.Check(zap.DebugLevel, "attempt started"); ce != nil {
		ce.Write(zap.Int64("task", t.ID), zap.Int("attempt", a.claimed.Lease.Token), zap.Bool("resumed", a.claimed.Checkpoint != nil))
	}
	select {
	case <-p.stopRequested: // started just as the stop was requested
		a.byPool.Store(true)
		a.softStop()
	default:
	}
	out := p.grantMounts(a)
	if out == nil {
		out = p.execute(a.ctx, a)
	}
	if out.Abandoned {
		return false
	}
	p.record(a, out)
	return true
}

// takeOver handles an attempt the sandbox's stop watchdog abandoned: its
// guest did not end after the forced stop, and its worker is stuck in it
// (the sandbox counts the stray, Stats.Stray). A new goroutine records
// the attempt and takes the worker's place. Called by the watchdog: it
// must not block.
func (p *Pool) takeOver(a *attempt, out *sandbox.Outcome) {
	p.log.Error("attempt abandoned: its guest did not end after the forced stop; a new worker takes its place",
		zap.Int64("task", a.claimed.Task.ID), zap.Int("attempt", a.claimed.Lease.Token), zap.String("reason", out.Message))
	go func() {
		p.record(a, out)
		a.cancel(nil)
		p.worker()
	}()
}

// record decides what an attempt's outcome means for its task and queues
// the completion.
func (p *Pool) record(a *attempt, out *sandbox.Outcome) {
	t := a.claimed.Task
	now := p.cfg.Now()
	p.observe(now.Sub(a.started))
	kind := "finished"
	stopped := a.byPool.Load()
	if stopped && out.Kind == sandbox.KindInterrupted {
		kind = "interrupted"
	} else if out.Kind == sandbox.KindForced && p.forceCtx.Err() != nil {
		kind, stopped = "forced", true
	}
	d := p.cfg.Retry.decide(t, out, stopped, a.cancelled.Load(), now)
	att := Attempt{
		StartedAt: a.started, EndedAt: now,
		Outcome: string(out.Kind), ExitCode: int(out.ExitCode), Reason: out.Message,
		Counted: d.counted, Resumed: a.claimed.Checkpoint != nil,
	}
	if out.Kind == sandbox.KindInterrupted && stopped {
		att.Reason = "stopped cooperatively (runner shutdown)"
	} else if kind == "forced" && !out.Abandoned {
		att.Reason = "forced (runner shutdown)"
	}
	comp := Completion{Lease: a.claimed.Lease, State: d.state, RunAt: d.runAt, Attempt: att}
	if d.state == StateSucceeded {
		comp.Result = out.Stdout
	}
	if a.lost.Load() {
		p.finish(a, "lost")
		return
	}
	p.flushProgress(a)
	p.completions <- completion{c: comp, a: a, kind: kind}
}

// execute compiles (once per hash) and runs the task. The attempt's
// timeout covers both.
func (p *Pool) execute(ctx context.Context, a *attempt) *sandbox.Outcome {
	t := a.claimed.Task
	started := time.Now()
	mod, ok := p.rt.Lookup(t.Module)
	if !ok {
		wasm, err := p.store.Module(ctx, t.Module)
		switch {
		case ctx.Err() != nil:
			return forcedOutcome(ctx, "while loading the module")
		case errors.Is(err, ErrModuleNotFound):
			return &sandbox.Outcome{Kind: sandbox.KindInvalidModule, Message: "load module: " + err.Error(), Err: err}
		case err != nil: // a store failure: worth another attempt
			return &sandbox.Outcome{Kind: sandbox.KindFailed, Message: "load module: " + err.Error(), Err: err}
		}
		if got := sandbox.SHA256(wasm); got != t.Module {
			return &sandbox.Outcome{Kind: sandbox.KindInvalidModule, Message: fmt.Sprintf("stored module bytes hash to %s, not %s: the store is corrupt", got, t.Module)}
		}
		if mod, err = p.compile(ctx, t, wasm, started); err != nil {
			if ctx.Err() != nil {
				return forcedOutcome(ctx, "while compiling")
			}
			if out := compileTimedOut(err, t, p.rt); out != nil {
				return out
			}
			p.runtimeClosed(a, err)
			return sandbox.OutcomeFromError(err)
		}
	}
	spec := sandbox.Spec{
		Name:       "task-" + fmt.Sprint(t.ID),
		Input:      t.Input,
		Args:       t.Args,
		Env:        t.Env,
		Limits:     t.Limits.sandbox(),
		Checkpoint: a.claimed.Checkpoint,
		Stop:       a.stop,
		SaveCheckpoint: func(ctx context.Context, blob []byte) error {
			err := p.store.SaveCheckpoint(ctx, a.claimed.Lease, blob)
			if errors.Is(err, ErrStaleLease) {
				return fmt.Errorf("%w: %w", sandbox.ErrLeaseLost, err)
			}
			return err
		},
		Progress:  func(done, total int64) { a.progress.Store(&[2]int64{done, total}) },
		Started:   started,
		OnAbandon: func(out *sandbox.Outcome) { p.takeOver(a, out) },
	}
	spec.Mounts = a.mounts // resolved and checked by grantMounts
	out, err := p.rt.Run(ctx, mod, spec)
	if err != nil {
		p.runtimeClosed(a, err)
		return sandbox.OutcomeFromError(err)
	}
	return out
}

// runtimeClosed handles a sandbox runtime closed under the pool (its owner
// stopping out of order): the attempt counts as stopped by the pool (the
// task is queued again at once, not counted), and the pool takes no more
// tasks, since it cannot run any.
func (p *Pool) runtimeClosed(a *attempt, err error) {
	if !errors.Is(err, sandbox.ErrClosed) {
		return
	}
	a.byPool.Store(true)
	p.stopIntakeOnce.Do(func() {
		p.log.Error("the sandbox runtime was closed while the pool ran; it takes no more tasks")
		close(p.intakeStopped)
	})
}

// compile compiles a task's module under its attempt's deadline: a
// compilation still running at the deadline goes on, for the next attempt.
func (p *Pool) compile(ctx context.Context, t Task, wasm []byte, started time.Time) (*sandbox.Module, error) {
	if timeout := attemptTimeout(t, p.rt); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, started.Add(timeout))
		defer cancel()
	}
	return p.rt.Compile(ctx, wasm)
}

// attemptTimeout is the task's effective attempt timeout (<= 0: none).
func attemptTimeout(t Task, rt *sandbox.Runtime) time.Duration {
	return t.Limits.sandbox().Or(rt.Config().Defaults).Timeout
}

// errCompiling is the error of an attempt whose deadline came while its
// module was still compiling, under the compile budget.
var errCompiling = errors.New("attempt timeout reached while compiling")

// compileTimedOut is the outcome of an attempt whose deadline came while
// its module was compiling (nil if err is not that). The guest never ran:
// the attempt is not counted, and the next one waits for the same
// compilation (the compile budget bounds how many such attempts there are).
func compileTimedOut(err error, t Task, rt *sandbox.Runtime) *sandbox.Outcome {
	if !errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return &sandbox.Outcome{Kind: sandbox.KindTimedOut, Deadline: true, Err: fmt.Errorf("%w: %w", errCompiling, err), Message: fmt.Sprintf(
		"attempt timeout of %s reached while compiling the module; not counted (the compilation goes on, for the next attempt)", attemptTimeout(t, rt))}
}

func forcedOutcome(ctx context.Context, when string) *sandbox.Outcome {
	return &sandbox.Outcome{Kind: sandbox.KindForced, Message: "stopped by force " + when + ": " + context.Cause(ctx).Error()}
}

// sandbox converts task limits to sandbox limits (zero: runtime default).
func (l Limits) sandbox() sandbox.Limits {
	return sandbox.Limits{
		MemoryPages:   sandbox.PagesFor(l.MemoryBytes),
		Timeout:       l.Timeout,
		MaxStdout:     l.Stdout,
		MaxStderr:     l.Stderr,
		MaxCheckpoint: l.Checkpoint,
	}
}

// finish forgets an attempt once it is recorded (or lost).
func (p *Pool) finish(a *attempt, kind string) {
	id := a.claimed.Task.ID
	if ce := p.log.Check(zap.DebugLevel, "attempt ended"); ce != nil {
		ce.Write(zap.Int64("task", id), zap.Int("attempt", a.claimed.Lease.Token), zap.String("as", kind))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[id] == a {
		delete(p.running, id)
	}
	p.perQueue[a.queue]--
	p.inflight--
	switch kind {
	case "finished":
		p.stats.Finished++
	case "interrupted":
		p.stats.Interrupted++
	case "forced":
		p.stats.Forced++
	case "lost":
		p.stats.Lost++
	}
	for _, ch := range p.waiters[id] {
		close(ch)
	}
	delete(p.waiters, id)
	if p.inflight == 0 {
		for _, ch := range p.idle {
			close(ch)
		}
		p.idle = nil
	}
	p.Wake()
}

// completeLoop writes completions in batches: whatever has arrived while
// the previous batch was being written goes in the next transaction.
func (p *Pool) completeLoop() {
	defer p.wg.Done()
	batch := make([]completion, 0, p.cfg.ClaimBatch)
	for {
		select {
		case c := <-p.completions:
			batch = append(batch[:0], c)
		drain:
			for len(batch) < cap(batch) {
				select {
				case c := <-p.completions:
					batch = append(batch, c)
				default:
					break drain
				}
			}
			p.writeBatch(batch)
		case <-p.done:
			return
		}
	}
}

func (p *Pool) writeBatch(batch []completion) {
	cs := make([]Completion, len(batch))
	for i, c := range batch {
		cs[i] = c.c
	}
	stoppingTries := 0 // tries since the pool began to stop
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease/2)
		errs, err := p.store.Complete(ctx, cs)
		cancel()
		if err == nil {
			for i, c := range batch {
				kind := c.kind
				if errs[i] != nil {
					kind = "lost"
					p.log.Warn("attempt result refused", zap.Int64("task", c.c.Lease.TaskID), zap.Error(errs[i]))
				}
				p.finish(c.a, kind)
			}
			return
		}
		// Back off while the store fails (a full disk, a lock held by
		// another process), and say so once per doubling of the wait.
		wait := min(p.cfg.Poll<<min(try, 6), maxClaimBackoff)
		if try&(try+1) == 0 {
			p.log.Error("recording attempts failed; retrying", zap.Int("attempts", len(cs)),
				zap.Int("failures", try+1), zap.Duration("next_try", wait), zap.Error(err))
		}
		// Until the pool stops, the results are kept and retried: once the
		// store works again they are recorded, and the work is not redone
		// (fencing refuses any whose lease was taken over meanwhile). Once
		// the pool stops, five more tries within 1.5 s, then they are
		// given up, so that a stop is not held up.
		stopping := p.intakeStopped
		select {
		case <-p.intakeStopped:
			if stoppingTries == 5 {
				p.giveUp(batch)
				return
			}
			stoppingTries++
			wait, stopping = time.Duration(stoppingTries)*100*time.Millisecond, nil
		default:
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stopping:
			t.Stop()
		}
	}
}

// giveUp forgets attempts whose results the store could not record: their
// tasks stay running in the store until their leases expire or the next
// start, and then run again. Nothing is lost but the attempts' work.
func (p *Pool) giveUp(batch []completion) {
	p.log.Error("giving up recording attempts; their tasks will run again once their leases expire or at the next start",
		zap.Int("attempts", len(batch)))
	p.mu.Lock()
	p.stats.Unrecorded += len(batch)
	p.mu.Unlock()
	for _, c := range batch {
		p.finish(c.a, "lost")
	}
}

func (p *Pool) heartbeatLoop() {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.Heartbeat)
	defer t.Stop()
	progress := time.NewTicker(p.cfg.ProgressEvery)
	defer progress.Stop()
	for {
		select {
		case <-t.C:
			p.heartbeat()
		case <-progress.C:
			p.mu.Lock()
			running := make([]*attempt, 0, len(p.running))
			for _, a := range p.running {
				running = append(running, a)
			}
			p.mu.Unlock()
			for _, a := range running {
				p.flushProgress(a)
			}
		case <-p.done:
			return
		}
	}
}

func (p *Pool) heartbeat() {
	p.mu.Lock()
	leases := make([]Lease, 0, len(p.running))
	byID := make(map[int64]*attempt, len(p.running))
	for id, a := range p.running {
		leases = append(leases, a.claimed.Lease)
		byID[id] = a
	}
	p.mu.Unlock()
	if len(leases) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Heartbeat)
	defer cancel()
	lost, cancels, err := p.store.Heartbeat(ctx, leases, p.cfg.Lease)
	if err != nil {
		p.log.Warn("heartbeat failed", zap.Error(err))
		return
	}
	for _, l := range lost {
		if a := byID[l.TaskID]; a != nil {
			a.lost.Store(true)
			a.cancel(errors.New("lease lost: another runner took the task over"))
		}
	}
	for _, l := range cancels {
		if a := byID[l.TaskID]; a != nil {
			p.cancelAttempt(a)
		}
	}
	for _, a := range byID {
		p.flushProgress(a)
	}
}

// flushProgress writes the attempt's latest progress report if it changed
// since the last write. Progress is written every ProgressEvery, with the
// heartbeat and once at the end of the attempt, never on the guest's
// thread.
func (p *Pool) flushProgress(a *attempt) {
	a.progressMu.Lock()
	defer a.progressMu.Unlock()
	pr := a.progress.Load()
	if pr == nil || *pr == a.reported {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Heartbeat)
	defer cancel()
	if err := p.store.Progress(ctx, a.claimed.Lease, pr[0], pr[1]); err == nil {
		a.reported = *pr
	}
}

// WaitFor polls a store until the task is terminal or ctx ends. Use it
// from a process that has no Pool (a CLI waiting on a remote runner).
func WaitFor(ctx context.Context, s Store, id int64, every time.Duration) (Task, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		task, err := s.Get(ctx, id)
		if err != nil || task.State.Terminal() {
			return task, err
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return task, ctx.Err()
		}
	}
}
