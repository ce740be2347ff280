package pool

import (
	"context"
	"runtime/trace"
	"time"

	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

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
		p.giveBackHeld()
		n, err := p.claimOnce(func() {
			// Said when a claim works again, before what it claimed
			// runs: not at the next empty poll, which may come after the
			// task has ended.
			if failures > 0 {
				p.log.Info("claims work again", zap.Int("failures", failures))
				failures = 0
			}
		})
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
	return aheadFor(p.cfg.Workers, p.cfg.ClaimBatch, p.cfg.ClaimAhead, time.Duration(p.avgRun.Load()))
}

// aheadFor is how many tasks a pool of workers holds claimed beyond them
// when its attempts last avg: what they run in horizon (ClaimAhead), at
// most batch (ClaimBatch); none while avg is unknown (0), when horizon is
// not positive, or when an attempt lasts horizon or more. It adapts to
// the rate the workers run at: the shorter the tasks, the more are held,
// so that a claim's round trip never leaves a worker waiting.
func aheadFor(workers, batch int, horizon, avg time.Duration) int {
	if horizon <= 0 || avg <= 0 || avg >= horizon || batch <= 0 || workers <= 0 {
		return 0
	}
	per := int64(horizon / avg) // >= 1
	if per >= int64(batch) {
		return batch
	}
	return int(min(int64(batch), int64(workers)*per))
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

// claimOnce claims what the pool has room for and hands it to the workers
// (calling worked first when the store's claim succeeded); it returns how
// many tasks it claimed, and the store's error.
func (p *Pool) claimOnce(worked func()) (int, error) {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	req, ok := p.claimRequest(nil)
	if !ok {
		return 0, nil
	}
	// Until what it claims is registered (newAttempt), the pool is not
	// idle: a claim committed in the store but not yet in flight here
	// would otherwise let Idle report no attempt in flight while the store
	// says its tasks run (a claim beside the completion that made the pool
	// empty).
	p.mu.Lock()
	p.claiming++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.claiming--
		p.closeIdleLocked()
		p.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease/2)
	region := trace.StartRegion(ctx, "pool.claim")
	claimed, err := p.store.Claim(ctx, req)
	region.End()
	if trace.IsEnabled() {
		trace.Logf(ctx, "pool.claim", "room %d claimed %d", req.Max, len(claimed))
	}
	cancel()
	if err != nil {
		return 0, err
	}
	worked()
	if len(claimed) > 0 {
		p.moved.Store(p.cfg.Now().UnixNano())
	}
	for _, c := range claimed {
		a := p.newAttempt(c)
		p.hand(a) <- a
	}
	return len(claimed), nil
}

// holdsTenantsLocked reports whether a task of a named tenant waits here
// for a worker; call it with mu held.
func (p *Pool) holdsTenantsLocked() bool {
	for t := range p.waitingBy {
		if t != "" {
			return true
		}
	}
	return false
}

// holdLimit is how long tasks claimed ahead may wait while no worker
// takes one: 5 ClaimAhead (100ms by default), at least a Poll.
func (p *Pool) holdLimit() time.Duration { return max(5*p.cfg.ClaimAhead, p.cfg.Poll) }

// giveBackHeld gives the tasks claimed ahead back to the queue once no
// worker has taken one for holdLimit: every worker is then busy with
// attempts longer than claiming ahead assumed (the average it sizes the
// claims by moves only as attempts end), and the tasks held would wait
// for them while another runner, or this one later, could start them.
// Their attempts are not counted. The average is raised to holdLimit, so
// that nothing is claimed ahead again until short attempts end. A pool
// that Adopt handed tasks to (runner batch: its caller claimed them to
// run them here) gives none back.
func (p *Pool) giveBackHeld() {
	if p.held() == 0 || p.adopts.Load() || p.cfg.Now().Sub(time.Unix(0, p.moved.Load())) < p.holdLimit() {
		return
	}
	p.claimMu.Lock()
	held := p.drainHeld()
	p.claimMu.Unlock()
	if len(held) == 0 {
		return
	}
	if old := p.avgRun.Load(); old < int64(p.holdLimit()) {
		p.avgRun.CompareAndSwap(old, int64(p.holdLimit()))
	}
	p.moved.Store(p.cfg.Now().UnixNano())
	p.mu.Lock()
	p.stats.GivenBack += len(held)
	p.mu.Unlock()
	p.log.Info("tasks claimed ahead given back to the queue: no worker took one in time, each is busy with a longer attempt",
		zap.Int("tasks", len(held)), zap.Duration("waited", p.holdLimit()))
	p.release(held)
}

// maxInflight bounds the attempts a pool holds at once: claimed, running,
// or ended and waiting for their completion to be written. Twice what it
// keeps in hand (its workers and ClaimBatch claimed ahead), so that it
// claims the next tasks while the completions of as many are written.
func maxInflight(cfg Config) int { return 2 * (cfg.Workers + cfg.ClaimBatch) }

// claimRequest sizes a claim to the pool's room, counting the attempts of
// ending as ended already (their completions go with the claim); false
// when there is no room. Call it with claimMu held.
//
// The room is what the work in hand (attempts claimed and not yet ended)
// lacks to reach the target, Workers plus claimAhead: attempts that ended
// and whose completions are still being written do not count, so that a
// claim goes to the store beside those writes (on another connection)
// rather than after them. maxInflight bounds the whole.
func (p *Pool) claimRequest(ending []completion) (tasks.ClaimRequest, bool) {
	p.mu.Lock()
	target := p.cfg.Workers + p.claimAhead()
	room := min(target-(p.inflight-p.awaiting), maxInflight(p.cfg)-p.inflight+len(ending))
	// Short tasks claimed ahead: refill in batches, once half the held
	// work is used up, rather than one claim (one transaction) per task
	// ended. A worker never waits for it: with nothing claimed ahead left
	// waiting for a worker, any room is claimed. Except after a Wake
	// while tenants' tasks are held: the store may have a task of another
	// tenant, which hand starts before what is held, so it is claimed now,
	// beyond the target if need be (within maxInflight), not after up to
	// half of ClaimAhead. Two at least: a fair claim takes a newly queued
	// tenant's first task behind at most one of another's (tasks/fair.go).
	// Wake-ups coalesce (one pending in p.wake, one news flag), so a flood
	// of submits adds at most one such claim per claim's round trip.
	news := p.news.Swap(false)
	if news && p.held() > 0 && p.holdsTenantsLocked() {
		room = max(room, min(2, maxInflight(p.cfg)-p.inflight+len(ending)))
	} else if room > 0 && 2*room < target && p.held() > 0 {
		room = 0
	}
	var queues map[string]int
	if p.cfg.Queues != nil {
		queues = map[string]int{}
		for q, n := range p.cfg.Queues {
			if n == 0 {
				n = p.cfg.Workers
			}
			avail := n - p.perQueue[q]
			for _, c := range ending {
				if c.a.queue == q {
					avail++
				}
			}
			if avail > 0 {
				queues[q] = avail
			}
		}
	}
	p.mu.Unlock()
	room = min(room, p.cfg.ClaimBatch)
	if room <= 0 || (queues != nil && len(queues) == 0) {
		return tasks.ClaimRequest{}, false
	}
	return tasks.ClaimRequest{Owner: p.cfg.Owner, Queues: queues, Max: room, Lease: p.cfg.Lease, LostLimit: p.cfg.LostLimit}, true
}

// newAttempt registers a claimed task: from here on it is in flight, its
// lease is renewed, and a stop or cancel reaches it.
func (p *Pool) newAttempt(c tasks.Claimed) *attempt {
	ctx, cancel := context.WithCancelCause(p.forceCtx)
	a := &attempt{claimed: c, queue: c.Task.Queue, stop: make(chan struct{}), ctx: ctx, cancel: cancel,
		suspend: make(chan struct{}), ran: make(chan struct{})}
	p.mu.Lock()
	p.running[c.Task.ID] = a
	p.perQueue[a.queue]++
	p.inflight++
	a.waiting = true
	p.waitingN++
	p.waitingBy[c.Task.Tenant]++
	p.waitingPrio[c.Task.Priority]++
	p.mu.Unlock()
	if c.Task.CancelRequested {
		p.cancelAttempt(a)
	}
	return a
}

// hand returns the channel a claimed attempt waits in for a worker:
// urgent, which workers take first, when no other attempt of its tenant
// waits here while another tenant's do (claimed ahead of it) and none of
// those has a higher priority; else ready. So another tenant's backlog
// claimed ahead (claimAhead) delays a tenant's next task by at most the
// attempts running, as the store's fair claims order it (tasks/fair.go);
// with no tenants, every attempt goes to ready, in claim order.
func (p *Pool) hand(a *attempt) chan<- *attempt {
	t := a.claimed.Task
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitingBy[t.Tenant] != 1 || p.waitingN == 1 {
		return p.ready
	}
	for prio, n := range p.waitingPrio {
		if n > 0 && prio > t.Priority {
			return p.ready
		}
	}
	return p.urgent
}

// taken notes that a claimed attempt no longer waits for a worker: one
// took it, or it is given back.
func (p *Pool) taken(a *attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !a.waiting {
		return
	}
	a.waiting = false
	t := a.claimed.Task
	p.waitingN--
	if p.waitingBy[t.Tenant]--; p.waitingBy[t.Tenant] == 0 {
		delete(p.waitingBy, t.Tenant)
	}
	if p.waitingPrio[t.Priority]--; p.waitingPrio[t.Priority] == 0 {
		delete(p.waitingPrio, t.Priority)
	}
}

// held is how many claimed attempts wait for a worker.
func (p *Pool) held() int { return len(p.ready) + len(p.urgent) }

// drainHeld takes every claimed attempt that waits for a worker.
func (p *Pool) drainHeld() []*attempt {
	var held []*attempt
	for {
		select {
		case a := <-p.urgent:
			held = append(held, a)
		case a := <-p.ready:
			held = append(held, a)
		default:
			return held
		}
	}
}

// releaseWaiting gives back every claimed attempt no worker has started.
func (p *Pool) releaseWaiting() {
	p.claimMu.Lock() // a claim with completions puts none in ready after this
	defer p.claimMu.Unlock()
	p.release(p.drainHeld())
}

// release returns attempts that never started to the queue, as if they
// had not been claimed. If the store cannot be reached their leases expire
// (or the next start recovers them): nothing is lost.
func (p *Pool) release(as []*attempt) {
	if len(as) == 0 {
		return
	}
	leases := make([]tasks.Lease, len(as))
	for i, a := range as {
		leases[i] = a.claimed.Lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease/2)
	defer cancel()
	if err := p.store.Release(ctx, leases); err != nil {
		p.log.Warn("releasing tasks claimed ahead failed; their leases will expire", zap.Int("tasks", len(as)), zap.Error(err))
	}
	for _, a := range as {
		p.taken(a)
		a.cancel(nil)
		p.finish(a, endReleased)
	}
}

// Adopt runs tasks the caller stored already claimed by this pool's
// owner (tasks.ClaimingSubmitter), as if the pool had claimed them: from
// the call on they are in flight, their leases renewed, a stop or cancel
// reaches them. It waits while every worker is busy and the claimed
// tasks already wait for one; once the pool's intake stopped it gives
// back (Store.Release) those it could not hand to a worker, and returns
// how many it handed over. Call it after Start.
func (p *Pool) Adopt(cs []tasks.Claimed) int {
	as := make([]*attempt, len(cs))
	for i, c := range cs {
		as[i] = p.newAttempt(c)
	}
	p.adopts.Store(true)
	for i, a := range as {
		select {
		case <-p.intakeStopped:
		case <-p.done:
		default:
			select {
			case p.ready <- a:
				p.moved.Store(p.cfg.Now().UnixNano())
				continue
			case <-p.intakeStopped:
			case <-p.done:
			}
		}
		p.release(as[i:])
		return i
	}
	return len(as)
}
