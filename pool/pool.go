package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

// Pool claims tasks from a Store under leases and runs each in the
// sandbox. It implements the shutdown ladder: StopIntake, RequestStop,
// ForceStop, Idle (see package shutdown).
type Pool struct {
	store tasks.Store
	exec  Executor
	cfg   Config
	log   *zap.Logger

	startOnce, stopIntakeOnce, requestOnce, forceOnce sync.Once
	intakeStopped                                     chan struct{}
	stopRequested                                     chan struct{}
	forceCtx                                          context.Context
	suspending                                        atomic.Bool // ForceStop is suspending the guests that can be (snapshot.go)
	forceCancel                                       context.CancelCauseFunc
	wake                                              chan struct{}
	news                                              atomic.Bool // Wake was called: tasks may wait in the store (claimRequest)
	done                                              chan struct{}
	completions                                       chan completion
	ready                                             chan *attempt  // claimed, waiting for a worker
	urgent                                            chan *attempt  // claimed, taken by workers before ready's (hand)
	avgRun                                            atomic.Int64   // moving average of attempt durations (ns)
	moved                                             atomic.Int64   // when an attempt last went into ready or out of it (Unix ns; giveBackHeld)
	adopts                                            atomic.Bool    // Adopt was called: held tasks are never given back (giveBackHeld)
	writing                                           atomic.Int32   // batches of completions being written
	claimsWithCompletions                             bool           // the store is a tasks.CompletingClaimer
	hbFailures                                        int            // consecutive failed heartbeats (heartbeatLoop only)
	wg                                                sync.WaitGroup // claimer, workers, heartbeater, completer, beginLoop

	// claimMu is held by whoever claims (claimOnce, or writeBatch
	// claiming with its completions) from sizing the claim until what it
	// claimed is in ready, so that two claims never count the same room.
	claimMu sync.Mutex

	mu       sync.Mutex
	running  map[int64]*attempt
	perQueue map[string]int
	inflight int // claimed, not yet recorded
	claiming int // claims under way in claimOnce, not yet registered (Idle waits for them)
	// awaiting counts the attempts of inflight that have ended and wait
	// for their completion to be written: a claim sizes its room on the
	// others (the work in hand), so that it need not wait for those
	// writes.
	awaiting int
	idle     []chan struct{}
	waiters  map[int64][]chan struct{}
	stats    Stats
	// The attempts claimed and not yet taken by a worker, in all and by
	// tenant and priority (hand).
	waitingN    int
	waitingBy   map[string]int
	waitingPrio map[int]int
	// toMark are the attempts a worker began, not yet marked in the store
	// (begun.go); begun signals one.
	toMark []*attempt
	begun  chan struct{}
}

// attempt is one running attempt.
type attempt struct {
	claimed    tasks.Claimed
	waiting    bool // claimed, no worker has taken it (under Pool.mu: hand)
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
	started    time.Time     // when a worker started it
	setup      time.Duration // of started's attempt, spent loading and compiling its module
	ended      bool          // its completion is queued (counted in Pool.awaiting); under Pool.mu

	// mounts are the task's mounts as this runner grants them: their
	// directories open and checked (grantMounts), closed when the attempt
	// ends (releaseMounts).
	mounts []tasks.GrantedMount
	// input is the attempt's stdin from Config.Input (hasInput), in
	// place of the task's stored Input (loadInput).
	input    []byte
	hasInput bool

	// Snapshots (snapshot.go): suspend asks its guest to suspend;
	// suspendable says its guest can be (set before it runs), and ran is
	// closed once such a guest has returned; resumedFrom is the stored
	// snapshot the attempt resumed from (nil: none); unstored is why a suspended
	// attempt's snapshot was not stored (set by its worker before record).
	suspend     chan struct{}
	suspendOnce sync.Once
	suspendable atomic.Bool
	ran         chan struct{}
	resumedFrom atomic.Pointer[tasks.SnapshotInfo]
	unstored    error
}

func (a *attempt) softStop()   { a.stopOnce.Do(func() { close(a.stop) }) }
func (a *attempt) suspendNow() { a.suspendOnce.Do(func() { close(a.suspend) }) }

type completion struct {
	c    tasks.Completion
	a    *attempt
	kind ending // endFinished, endInterrupted or endForced
}

// New builds a pool over a store and an executor (a *sandbox.Runtime);
// Start runs it.
func New(store tasks.Store, exec Executor, cfg Config) (*Pool, error) {
	if store == nil || exec == nil {
		return nil, errors.New("pool: New needs a store and an executor")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	forceCtx, forceCancel := context.WithCancelCause(context.Background())
	_, cc := store.(tasks.CompletingClaimer)
	return &Pool{
		claimsWithCompletions: cc,
		store:                 store, exec: exec, cfg: cfg, log: cfg.Logger,
		intakeStopped: make(chan struct{}), stopRequested: make(chan struct{}),
		forceCtx: forceCtx, forceCancel: forceCancel,
		wake: make(chan struct{}, 1), done: make(chan struct{}), begun: make(chan struct{}, 1),
		// Both channels hold every attempt the pool may have in flight
		// (maxInflight), so neither a worker nor the claimer ever blocks
		// on them.
		completions: make(chan completion, maxInflight(cfg)),
		ready:       make(chan *attempt, maxInflight(cfg)),
		urgent:      make(chan *attempt, maxInflight(cfg)),
		running:     map[int64]*attempt{}, perQueue: map[string]int{}, waiters: map[int64][]chan struct{}{},
		waitingBy: map[string]int{}, waitingPrio: map[int]int{},
	}, nil
}

// Owner is the pool's lease owner id.
func (p *Pool) Owner() string { return p.cfg.Owner }

// Lease is how long the pool's claims hold before they must be renewed.
func (p *Pool) Lease() time.Duration { return p.cfg.Lease }

// Start starts claiming and running tasks. It does not block; ctx only
// bounds the start itself. Safe to call twice.
func (p *Pool) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.startOnce.Do(func() {
		p.wg.Add(4 + p.cfg.Workers)
		for range p.cfg.Workers {
			go p.worker()
		}
		go p.claimLoop()
		go p.heartbeatLoop()
		go p.completeLoop()
		go p.beginLoop()
	})
	return nil
}

// Submit queues a task through the pool's store and wakes the pool. It
// checks the spec against the pool's limits and mount allow-list.
func (p *Pool) Submit(ctx context.Context, spec tasks.Spec) (tasks.Task, bool, error) {
	if err := p.checkSpec(spec); err != nil {
		return tasks.Task{}, false, err
	}
	t, existing, err := p.store.Submit(ctx, spec)
	if err == nil {
		p.Wake()
	}
	return t, existing, err
}

// checkSpec enforces the pool's Policy.
func (p *Pool) checkSpec(s tasks.Spec) error {
	return tasks.CheckSpec(s, p.cfg.Policy)
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Running = p.inflight
	s.Held = p.held()
	if lc, ok := p.store.(lostCounter); ok {
		s.LostToCrashes = int(lc.LostAttempts())
	}
	return s
}

// lostCounter is a store that counts the attempts it recorded as lost
// (Stats.LostToCrashes).
type lostCounter interface{ LostAttempts() int64 }
