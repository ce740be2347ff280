package sandbox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// abandonStrikes is how many abandoned runs (or plugin calls) of a module,
// over the Runtime's life, refuse it for good.
const abandonStrikes = 2

// maxStruck bounds how many modules with a strike the Runtime remembers
// (each strike left a goroutine behind, so the bound is never reached in
// a process that still works; it only keeps the map finite).
const maxStruck = 4096

// unstoppableMessage is the reason of a module refused by its strikes.
const unstoppableMessage = "module could not be stopped twice (the stop watchdog abandoned two of its runs); refused until the runner restarts"

// watchState is the stop watchdog: a list of the runs in flight that can
// be forced, swept by one goroutine (started by the first such run, ended
// by Close) that abandons those whose hard context ended StopWatchdog ago
// and whose guest has not returned. Watching a run costs two list
// operations under a mutex, no allocation and no goroutine.
type watchState struct {
	mu      sync.Mutex
	head    runWatch // sentinel of the circular list of watched runs
	started bool     // the sweeper was started
	stopped bool     // Close stopped it: start no other
	quit    chan struct{}
	done    chan struct{}

	abandoned atomic.Int64
	stray     atomic.Int64
	strikes   map[string]int // abandoned runs by module sha256, over the Runtime's life (under Runtime.mu)
}

// Watch states of a run.
const (
	watchOff       int32 = iota // not watched (no watchdog, or a hard context that never ends)
	watchRunning                // watched, the guest has not returned
	watchReturned               // the guest returned in time
	watchAbandoned              // the watchdog gave up on it
)

// runWatch is one run's entry in the watchdog, part of its runState.
type runWatch struct {
	prev, next *runWatch
	st         *runState
	caller     context.Context
	mod        *Module
	onAbandon  func(*Outcome)
	start      int64 // monoNow's reading at the run's start
	timeout    time.Duration
	doneSince  time.Time // the sweep that first saw the hard context done (sweeper only)
	state      atomic.Int32
	mu         sync.Mutex // held from abandonment until out is set
	out        *Outcome   // the abandoned outcome
}

// refusedOutcome is the outcome of running a module refused since it was
// compiled (nil: it is not).
func refusedOutcome(mod *Module) *Outcome {
	if me := mod.refused.Load(); me != nil {
		return &Outcome{Kind: me.Kind, Message: me.Message, Err: me}
	}
	return nil
}

// watchRun puts a run under the watchdog, if it has one and the run's hard
// context can end. Called by Run before the guest starts.
func (r *Runtime) watchRun(caller context.Context, st *runState, mod *Module, spec *Spec, start int64, lim Limits) {
	if r.cfg.StopWatchdog < 0 || endless(st.hard) {
		return
	}
	w := &st.watch
	w.st, w.caller, w.mod, w.onAbandon, w.start, w.timeout = st, caller, mod, spec.OnAbandon, start, lim.Timeout
	w.state.Store(watchRunning)
	ws := &r.watch
	ws.mu.Lock()
	if !ws.started && !ws.stopped {
		ws.started = true
		ws.head.next, ws.head.prev = &ws.head, &ws.head
		ws.quit, ws.done = make(chan struct{}), make(chan struct{})
		go r.sweep(ws.quit, ws.done)
	}
	if ws.head.next == nil { // stopped before it ever started
		ws.head.next, ws.head.prev = &ws.head, &ws.head
	}
	w.prev, w.next = &ws.head, ws.head.next
	ws.head.next.prev = w
	ws.head.next = w
	ws.mu.Unlock()
}

// endless reports whether a hard context can never end (so no stop can
// come for the watchdog to enforce), without making a plugin call's
// context arm its timers.
func endless(hard context.Context) bool {
	if c, ok := hard.(*callContext); ok {
		return c.endless()
	}
	return hard.Done() == nil
}

// unwatchRun takes a run whose guest has returned off the watchdog. If the
// watchdog had abandoned it, it returns the outcome its caller was given.
func (r *Runtime) unwatchRun(st *runState) *Outcome {
	w := &st.watch
	if w.state.CompareAndSwap(watchRunning, watchReturned) {
		r.watch.mu.Lock()
		w.unlink()
		r.watch.mu.Unlock()
		return nil
	}
	if w.state.Load() != watchAbandoned {
		return nil
	}
	w.mu.Lock() // the sweeper holds it until out is set
	out := w.out
	w.mu.Unlock()
	r.strayEnded(w)
	return out
}

func (w *runWatch) unlink() {
	w.prev.next, w.next.prev = w.next, w.prev
	w.prev, w.next = nil, nil
}

// stopWatchdog ends the sweeper (Close). Runs still watched are no longer.
func (r *Runtime) stopWatchdog() {
	ws := &r.watch
	ws.mu.Lock()
	ws.stopped = true
	started := ws.started
	ws.mu.Unlock()
	if started {
		close(ws.quit)
		<-ws.done
	}
}

// sweep checks the watched runs a few times per StopWatchdog until quit.
func (r *Runtime) sweep(quit, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(max(r.cfg.StopWatchdog/5, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case now := <-t.C:
			r.sweepOnce(now)
		}
	}
}

// sweepOnce abandons every watched run whose hard context ended at least
// StopWatchdog ago (as seen by the sweeps) and whose guest still runs.
func (r *Runtime) sweepOnce(now time.Time) {
	ws := &r.watch
	var due []*runWatch
	ws.mu.Lock()
	for w := ws.head.next; w != &ws.head; {
		next := w.next
		if w.st.hard.Err() != nil {
			switch {
			case w.doneSince.IsZero():
				w.doneSince = now
			case now.Sub(w.doneSince) >= r.cfg.StopWatchdog:
				w.mu.Lock()
				if w.state.CompareAndSwap(watchRunning, watchAbandoned) {
					w.unlink()
					due = append(due, w) // abandon unlocks w.mu
				} else {
					w.mu.Unlock()
				}
			}
		}
		w = next
	}
	ws.mu.Unlock()
	for _, w := range due {
		r.abandon(w)
	}
}

// abandon gives up on a run whose guest did not end after its forced stop:
// it builds the outcome, strikes the module (refusing it for good at the
// second strike, whether or not the first stray has ended since: a module
// that escapes its stop and ends later must not run again and again),
// logs, and tells the caller. Called with w.mu held; unlocks it.
func (r *Runtime) abandon(w *runWatch) {
	wd := r.cfg.StopWatchdog
	sha := w.mod.SHA256
	r.mu.Lock()
	strikes := r.strikeLocked(sha)
	refusedNow := strikes >= abandonStrikes && w.mod.refused.Load() == nil
	if refusedNow {
		me := &ModuleError{Kind: KindUnstoppable, Err: ErrUnstoppable, Message: unstoppableMessage}
		w.mod.refused.Store(me)
		r.refuseLocked(sha, me)
	}
	r.mu.Unlock()

	out := &Outcome{Abandoned: true, StopRequested: w.st.sawStop.Load(), Duration: time.Duration(monoNow() - w.start)}
	tail := fmt.Sprintf("the guest did not end within %s of its forced stop; abandoned (its goroutine still runs)", wd)
	if w.st.inline.Load() {
		tail = fmt.Sprintf("the guest did not end within %s of its forced stop; abandoned (Call waited for its guest: a NonBlocking host function blocked)", wd)
	}
	if w.caller.Err() != nil {
		out.Kind = KindForced
		out.Message = "stopped by force: " + context.Cause(w.caller).Error() + "; " + tail
	} else {
		out.Kind, out.Deadline = KindTimedOut, true
		out.Message = fmt.Sprintf("%s timeout of %s reached; forced, but %s", w.st.noun(), w.timeout, tail)
	}
	if me := w.mod.refused.Load(); me != nil {
		out.Kind, out.Err = KindUnstoppable, me
		out.Message += fmt.Sprintf("; abandoned run %d of this module: %s", strikes, me.Message)
	}
	w.out = out
	r.watch.abandoned.Add(1)
	r.watch.stray.Add(1)
	w.mu.Unlock()

	r.log.Error("run abandoned: the guest did not end after its forced stop; its goroutine still runs",
		zap.String("module", sha), zap.String("outcome", string(out.Kind)), zap.Duration("stop_watchdog", wd),
		zap.Int("strikes", strikes), zap.Bool("module_refused", refusedNow), zap.Int64("stray_runs", r.watch.stray.Load()))
	if w.onAbandon != nil {
		w.onAbandon(out)
	}
}

// strikeLocked counts one more abandoned run of the module sha and
// returns its strikes. Strikes are never withdrawn: an abandoned guest
// that ends later still escaped its stop. Called with r.mu held.
func (r *Runtime) strikeLocked(sha string) int {
	ws := &r.watch
	if ws.strikes == nil {
		ws.strikes = map[string]int{}
	}
	if _, ok := ws.strikes[sha]; !ok && len(ws.strikes) >= maxStruck {
		for old := range ws.strikes { // forget one, any one
			delete(ws.strikes, old)
			break
		}
	}
	ws.strikes[sha]++
	return ws.strikes[sha]
}

// strayEnded accounts for an abandoned run whose guest ended after all. Its
// strike stays: the guest did not end when it was stopped.
func (r *Runtime) strayEnded(w *runWatch) {
	sha := w.mod.SHA256
	r.mu.Lock()
	r.watch.stray.Add(-1)
	strikes := r.watch.strikes[sha]
	closeNow := r.closeIfLastLocked() // a Close waited for this run
	r.mu.Unlock()
	r.log.Warn("an abandoned guest ended after all", zap.String("module", sha), zap.Duration("after", time.Duration(monoNow()-w.start)),
		zap.Int("strikes", strikes))
	if closeNow {
		if err := r.closeRuntimes(context.Background()); err != nil {
			r.log.Warn("closing the sandbox runtime after the last abandoned run", zap.Error(err))
		}
	}
}

// watchStats fills the watchdog fields of st.
func (r *Runtime) watchStats(st *Stats) {
	st.Abandoned = r.watch.abandoned.Load()
	st.Stray = int(r.watch.stray.Load())
}

// RunBounded is Run that returns, with the abandoned outcome, as soon as
// the stop watchdog abandons the run, leaving the guest's goroutine behind.
func (r *Runtime) RunBounded(ctx context.Context, mod *Module, spec Spec) (*Outcome, error) {
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	abandoned := make(chan *Outcome, 1)
	onAbandon := spec.OnAbandon
	spec.OnAbandon = func(out *Outcome) {
		if onAbandon != nil {
			onAbandon(out)
		}
		abandoned <- out
	}
	go func() {
		out, err := r.Run(ctx, mod, spec)
		done <- result{out, err}
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case out := <-abandoned:
		return out, nil
	}
}
