package shutdown

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ErrStopping is returned by Register and AddHook once the stop has started.
var ErrStopping = errors.New("shutdown: stop already started")

// Options are the collaborators of a Coordinator. The zero value is ready to
// use.
type Options struct {
	// Logger receives progress lines and the final report. Nil means
	// zap.NewNop().
	Logger *zap.Logger
	// Clock measures and waits. Nil means the system clock; tests pass a
	// fake one.
	Clock Clock
}

// Coordinator runs a phased stop of its workloads and hooks, once, within
// one budget. Its methods are safe for concurrent use.
type Coordinator struct {
	cfg   Config
	log   *zap.Logger
	clock Clock

	cut  chan struct{} // closed to jump to phase 4
	done chan struct{} // closed when the stop finished

	onPhase func(Phase) // test seam: called when a phase begins

	mu        sync.Mutex
	workloads []Workload
	hooks     []Hook
	phase     Phase
	started   bool
	forcing   bool // phase 4 reached: cutting short changes nothing any more
	cutDone   bool // cut is closed
	escalated bool
	canceled  bool
	report    Report
}

// New returns a Coordinator for cfg, after applying its defaults
// ([Config.WithDefaults]) and validating it ([Config.Validate]).
func New(cfg Config, opts Options) (*Coordinator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	return &Coordinator{
		cfg:   cfg,
		log:   opts.Logger,
		clock: opts.Clock,
		cut:   make(chan struct{}),
		done:  make(chan struct{}),
	}, nil
}

// Config returns the configuration in use, defaults applied.
func (c *Coordinator) Config() Config { return c.cfg }

// Register adds a workload to stop. All workloads go through the phases
// together. It returns [ErrStopping] once Shutdown has started (the workload
// would never be stopped), and an error for a nil workload.
func (c *Coordinator) Register(w Workload) error {
	if w == nil {
		return errors.New("shutdown: nil workload")
	}
	return c.beforeShutdown(func() { c.workloads = append(c.workloads, w) })
}

// AddHook adds a cleanup hook for phase 5. It returns [ErrStopping] once
// Shutdown has started, and an error for a hook without Run or with a
// negative Timeout.
func (c *Coordinator) AddHook(h Hook) error {
	if h.Run == nil {
		return fmt.Errorf("shutdown: hook %q has no Run func", h.Name)
	}
	if h.Timeout < 0 {
		return fmt.Errorf("shutdown: hook %q has a negative timeout (%s)", h.Name, h.Timeout)
	}
	return c.beforeShutdown(func() { c.hooks = append(c.hooks, h) })
}

// beforeShutdown runs add under c.mu, or returns [ErrStopping] once
// Shutdown has started.
func (c *Coordinator) beforeShutdown(add func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return ErrStopping
	}
	add()
	return nil
}

// Ready reports whether the process should receive new work: true until
// phase 1 starts, false from then on. Wire it to a readiness probe.
func (c *Coordinator) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.started
}

// Phase returns the phase the stop is in: PhaseNone before Shutdown,
// PhaseDone once it finished.
func (c *Coordinator) Phase() Phase {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.phase
}

// Done returns a channel closed when the stop finished and its report is
// ready.
func (c *Coordinator) Done() <-chan struct{} { return c.done }

// Report returns the report of the finished stop, and false if the stop has
// not finished (or not started).
func (c *Coordinator) Report() (Report, bool) {
	select {
	case <-c.done:
	default:
		return Report{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.report.clone(), true
}

// Escalate skips to the forced stop (phase 4) now if the stop is in phase 1,
// 2 or 3: the waits of those phases end at once and the phases not yet
// begun are skipped (phase 1's StopIntake calls are still made first). Called
// before Shutdown, it makes the coming stop run phase 1 and then go straight
// to phase 4. From phase 4 on it does nothing. It does not block.
func (c *Coordinator) Escalate() { c.cutShort(true) }

func (c *Coordinator) cutShort(escalate bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forcing || c.cutDone {
		return
	}
	c.cutDone = true
	reason := "context done"
	if escalate {
		c.escalated = true
		reason = "escalated"
	} else {
		c.canceled = true
	}
	close(c.cut)
	c.log.Info("shutdown: skipping to the forced stop", zap.String("reason", reason), zap.Stringer("phase", c.phase))
}

// Shutdown runs the stop, phases 1 to 5, and returns its report (see the
// package documentation). It returns within Config.Budget, give or take the
// coordinator's own bookkeeping, whatever the workloads and hooks do.
//
// Only the first call runs the stop; a later or concurrent call waits for it
// and returns the same report. If ctx (of any caller) ends while the stop is
// in phase 1, 2 or 3, the stop skips to the forced stop as with Escalate;
// Shutdown still waits for phases 4 and 5, which are bounded by ForceWait and
// the hook timeouts. Hooks get a context with ctx's values but not its
// cancellation. The report is also logged to the Coordinator's logger.
func (c *Coordinator) Shutdown(ctx context.Context) Report {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			c.cutShort(false)
			<-c.done
		}
		rep, _ := c.Report()
		return rep
	}
	c.started = true
	c.phase = PhaseIntake
	ws := slices.Clone(c.workloads)
	hooks := slices.Clone(c.hooks)
	c.mu.Unlock()
	slices.SortStableFunc(hooks, func(a, b Hook) int { return cmp.Compare(a.Priority, b.Priority) })

	if ctx.Err() != nil {
		c.cutShort(false)
	}
	stopWatching := context.AfterFunc(ctx, func() { c.cutShort(false) })
	rep := c.run(context.WithoutCancel(ctx), ws, hooks)
	stopWatching()

	c.mu.Lock()
	c.report = rep
	c.phase = PhaseDone
	c.mu.Unlock()
	rep.Log(c.log)
	close(c.done)
	return rep.clone()
}

func (c *Coordinator) setPhase(p Phase) {
	c.mu.Lock()
	c.phase = p
	c.mu.Unlock()
	if c.onPhase != nil {
		c.onPhase(p)
	}
}

func (c *Coordinator) isCut() bool {
	select {
	case <-c.cut:
		return true
	default:
		return false
	}
}

// run is the stop itself; it runs once, on the first Shutdown's goroutine.
func (c *Coordinator) run(ctx context.Context, ws []Workload, hooks []Hook) Report {
	cfg := c.cfg
	t0 := c.clock.Now()
	end := t0.Add(cfg.Budget)
	rep := Report{Start: t0, Budget: cfg.Budget, Phases: make([]PhaseReport, 0, 5)}
	rec := &recorder{c: c, ws: ws, rep: &rep, last: snapshot(ws)}
	seqs := make([]*sequence, len(ws))
	for i, w := range ws {
		seqs[i] = &sequence{idx: i, w: w}
	}
	callAll := func(op string, f func(Workload)) []<-chan struct{} {
		dones := make([]<-chan struct{}, len(seqs))
		for i, s := range seqs {
			dones[i] = c.call(s, op, f)
		}
		return dones
	}

	c.log.Info("shutdown started",
		zap.Duration("budget", cfg.Budget),
		zap.Duration("drain", cfg.Drain),
		zap.Duration("cancel", cfg.Cancel),
		zap.Duration("force_wait", cfg.ForceWait),
		zap.Int("workloads", len(ws)),
		zap.Int("hooks", len(hooks)),
		zap.Int("running", rec.last.Running),
	)

	// Each deadline is the phase's own duration, clipped so that the later
	// phases keep their reserve before the budget ends.

	// Phase 1: stop intake. Phases 1 and 2 share the drain window.
	drainEnd := earliest(t0.Add(cfg.Drain), end.Add(-addSat(cfg.Cancel, cfg.ForceWait, cfg.HookTimeout)))
	start := rec.begin(PhaseIntake)
	c.wait(drainEnd, c.cut, callAll("StopIntake", Workload.StopIntake))
	rec.end(PhaseIntake, start)

	// Phase 2: drain.
	var idle bool
	if c.isCut() {
		rec.skip(PhaseDrain)
	} else {
		start = rec.begin(PhaseDrain)
		idle = c.wait(drainEnd, c.cut, idleChans(ws)) == allDone
		rec.end(PhaseDrain, start)
	}

	// Phase 3: cooperative stop.
	if idle || c.isCut() {
		rec.skip(PhaseCancel)
	} else {
		start = rec.begin(PhaseCancel)
		callAll("RequestStop", Workload.RequestStop)
		cancelEnd := earliest(start.Add(cfg.Cancel), end.Add(-addSat(cfg.ForceWait, cfg.HookTimeout)))
		idle = c.wait(cancelEnd, c.cut, idleChans(ws)) == allDone
		rec.end(PhaseCancel, start)
	}

	// Phase 4: forced stop. From here on Escalate and ctx change nothing.
	c.mu.Lock()
	c.forcing = true
	rep.Escalated, rep.Canceled = c.escalated, c.canceled
	c.mu.Unlock()
	if !idle {
		idle = allClosed(idleChans(ws))
	}
	if idle {
		rec.skip(PhaseForce)
	} else {
		start = rec.begin(PhaseForce)
		callAll("ForceStop", Workload.ForceStop)
		forceEnd := earliest(start.Add(cfg.ForceWait), end.Add(-cfg.HookTimeout))
		c.wait(forceEnd, nil, idleChans(ws))
		rec.end(PhaseForce, start)
	}
	rep.NotEnded = rec.last.Running
	for _, p := range rep.Phases {
		rep.Finished += p.Finished
		rep.Cooperative += p.Interrupted
		rep.Forced += p.Forced
	}

	// Phase 5: hooks.
	if len(hooks) == 0 {
		rec.skip(PhaseHooks)
	} else {
		start = rec.begin(PhaseHooks)
		for _, h := range hooks {
			rep.Hooks = append(rep.Hooks, c.runHook(ctx, h, end))
		}
		rec.end(PhaseHooks, start)
	}
	rep.Total = c.clock.Now().Sub(t0)
	return rep
}

// runHook runs one hook with its timeout, clipped to the budget's end.
func (c *Coordinator) runHook(ctx context.Context, h Hook, end time.Time) HookReport {
	hr := HookReport{Name: h.Name, Priority: h.Priority, Timeout: h.Timeout}
	if hr.Timeout == 0 {
		hr.Timeout = c.cfg.HookTimeout
	}
	start := c.clock.Now()
	left := end.Sub(start)
	if left <= 0 {
		hr.Skipped, hr.Err = true, ErrBudgetExhausted
		return hr
	}
	limit := hr.Timeout
	timeoutErr := fmt.Errorf("%w after %s", ErrHookTimeout, limit)
	if left < limit {
		limit = left
		timeoutErr = fmt.Errorf("%w after %s: %w", ErrHookTimeout, limit, ErrBudgetExhausted)
	}
	c.log.Debug("shutdown hook started", zap.String("hook", h.Name), zap.Duration("timeout", limit))

	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if _, ok := c.clock.(systemClock); ok {
		var cancelDeadline context.CancelFunc
		hctx, cancelDeadline = context.WithDeadlineCause(hctx, start.Add(limit), timeoutErr)
		defer cancelDeadline()
	}
	// Buffered, so an abandoned hook's goroutine can still send and exit.
	result := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				result <- fmt.Errorf("%w: %v", ErrHookPanicked, r)
			}
		}()
		result <- h.Run(hctx)
	}()
	// returned records what the hook returned. The hook's deadline and the
	// coordinator's timer end together, so a hook that saw its deadline
	// and returned with it may be noticed in either branch below.
	returned := func(err error) {
		hr.Err = err
		if err != nil && context.Cause(hctx) == timeoutErr {
			hr.TimedOut, hr.Err = true, fmt.Errorf("%w: %w", timeoutErr, err)
		}
	}
	select {
	case err := <-result:
		returned(err)
	case <-c.clock.After(limit):
		select {
		case err := <-result:
			returned(err)
		default:
			hr.TimedOut, hr.Err = true, timeoutErr
			cancel(timeoutErr)
		}
	}
	hr.Duration = c.clock.Now().Sub(start)
	return hr
}

// sequence serializes the calls made to one workload: each call starts once
// the previous one returned, on a goroutine of its own.
type sequence struct {
	idx  int
	w    Workload
	last <-chan struct{}
}

// call runs f(s.w) after s's previous call and returns a channel closed
// when it returned. A panic is logged, not propagated.
func (c *Coordinator) call(s *sequence, op string, f func(Workload)) <-chan struct{} {
	prev := s.last
	done := make(chan struct{})
	s.last = done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		defer func() {
			if r := recover(); r != nil {
				c.log.Error("shutdown: workload panicked",
					zap.String("call", op), zap.Int("workload", s.idx),
					zap.Any("panic", r), zap.Stack("stack"))
			}
		}()
		f(s.w)
	}()
	return done
}

type outcome int

const (
	allDone outcome = iota
	timedOut
	wasCut
)

// wait waits until every channel in chans is closed, deadline passes (by
// the clock), or cut is closed (a nil cut never is). If the channels are all
// closed when it gives up, it still reports allDone.
func (c *Coordinator) wait(deadline time.Time, cut <-chan struct{}, chans []<-chan struct{}) outcome {
	if allClosed(chans) {
		return allDone
	}
	d := deadline.Sub(c.clock.Now())
	if d <= 0 {
		return timedOut
	}
	timer := c.clock.After(d)
	for _, ch := range chans {
		select {
		case <-ch:
		case <-timer:
			if allClosed(chans) {
				return allDone
			}
			return timedOut
		case <-cut:
			if allClosed(chans) {
				return allDone
			}
			return wasCut
		}
	}
	return allDone
}

func allClosed(chans []<-chan struct{}) bool {
	for _, ch := range chans {
		select {
		case <-ch:
		default:
			return false
		}
	}
	return true
}

func idleChans(ws []Workload) []<-chan struct{} {
	chans := make([]<-chan struct{}, len(ws))
	for i, w := range ws {
		chans[i] = w.Idle()
	}
	return chans
}

func snapshot(ws []Workload) Stats {
	var s Stats
	for _, w := range ws {
		s = s.add(w.Stats())
	}
	return s
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// recorder builds the per-phase reports from Stats snapshots taken at the
// phase boundaries.
type recorder struct {
	c    *Coordinator
	ws   []Workload
	rep  *Report
	last Stats
}

// begin marks p as started and returns its start time, read before p is
// visible (see Coordinator.Phase).
func (r *recorder) begin(p Phase) time.Time {
	start := r.c.clock.Now()
	r.c.log.Debug("shutdown phase started", zap.Stringer("phase", p))
	r.c.setPhase(p)
	return start
}

func (r *recorder) end(p Phase, start time.Time) {
	now := snapshot(r.ws)
	r.rep.Phases = append(r.rep.Phases, PhaseReport{
		Phase:       p,
		Duration:    r.c.clock.Now().Sub(start),
		Finished:    now.Finished - r.last.Finished,
		Interrupted: now.Interrupted - r.last.Interrupted,
		Forced:      now.Forced - r.last.Forced,
		Running:     now.Running,
	})
	r.last = now
}

func (r *recorder) skip(p Phase) {
	r.rep.Phases = append(r.rep.Phases, PhaseReport{Phase: p, Skipped: true, Running: r.last.Running})
}
