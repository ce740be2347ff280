package pool

import (
	"context"
	"errors"
	"runtime/trace"
	"sync"
	"time"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

// record decides what an attempt's outcome means for its task and queues
// the completion.
func (p *Pool) record(a *attempt, out *sandbox.Outcome) {
	t := a.claimed.Task
	now := p.cfg.Now()
	p.observe(max(now.Sub(a.started)-a.setup, 1))
	kind := endFinished
	stopped := a.byPool.Load()
	if stopped && out.Kind == sandbox.KindInterrupted || out.Kind == sandbox.KindSuspended && !out.Deadline {
		kind = endInterrupted
	} else if out.Kind == sandbox.KindForced && p.forceCtx.Err() != nil {
		kind, stopped = endForced, true
	}
	d := decide(p.cfg.Retry, p.cfg.CompileRetry, t, out, stopped, a.cancelled.Load(), now)
	att := AttemptOf(out, a.started, now)
	att.ResumedFrom = a.resumedFrom.Load()
	att.Counted, att.Resumed = d.counted, a.claimed.Checkpoint != nil || att.ResumedFrom != nil
	if out.Kind == sandbox.KindSuspended {
		att.Reason = suspendedReason(out.Deadline, a.unstored)
	} else if out.Kind == sandbox.KindInterrupted && stopped {
		att.Reason = "stopped cooperatively (runner shutdown)"
	} else if kind == endForced && !out.Abandoned {
		att.Reason = "forced (runner shutdown)"
	}
	comp := tasks.Completion{Lease: a.claimed.Lease, State: d.state, RunAt: d.runAt, Attempt: att}
	if d.state == tasks.StateSucceeded {
		comp.Result = out.Stdout
	}
	if a.lost.Load() {
		p.finish(a, endLost)
		return
	}
	if d.counted && d.state == tasks.StateQueued && t.OnRetry == tasks.OnRetryRestart {
		p.dropForRestart(a) // snapshot.go: a retry after a failure starts afresh
	}
	p.flushProgress(a)
	// The attempt's payload is not needed past its run: an attempt
	// waiting for its completion to be written holds none of it.
	a.claimed.Task.Input, a.claimed.Checkpoint, a.input = nil, nil, nil
	p.mu.Lock()
	a.ended = true
	p.awaiting++
	// The work in hand fell under half the target: claim the next now
	// (claimRequest's rule). With a store that claims with completions
	// and no write under way, this completion is written at once and
	// claims with it, in one transaction; otherwise the claim loop claims,
	// beside the writes.
	low := 2*(p.inflight-p.awaiting) <= p.cfg.Workers+p.claimAhead() &&
		(!p.claimsWithCompletions || p.writing.Load() > 0)
	p.mu.Unlock()
	p.completions <- completion{c: comp, a: a, kind: kind}
	if low {
		p.wakeClaims()
	}
}

// suspendedReason is a suspended attempt's reason: where the next attempt
// resumes, and, when its snapshot could not be stored (unstored: a write
// that failed, one over limits.snapshot), why not: the next attempt then
// resumes from the task's last stored snapshot or checkpoint, if it has
// one, else starts afresh.
func suspendedReason(deadline bool, unstored error) string {
	why, next := "suspended (runner shutdown)", "the next attempt"
	if deadline {
		why, next = "suspended at its attempt timeout", "the next attempt, if any,"
	}
	if unstored != nil {
		return why + ", but its snapshot was not stored (" + unstored.Error() + "); " + next +
			" resumes from the task's last stored snapshot or checkpoint, or starts afresh if it has neither"
	}
	return why + "; " + next + " resumes where it stopped"
}

// finish forgets an attempt once it is recorded (or lost).
func (p *Pool) finish(a *attempt, kind ending) {
	id := a.claimed.Task.ID
	if ce := p.log.Check(zap.DebugLevel, "attempt ended"); ce != nil {
		ce.Write(zap.Int64("task", id), zap.Int("attempt", a.claimed.Lease.Token), zap.String("as", string(kind)))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[id] == a {
		delete(p.running, id)
	}
	p.perQueue[a.queue]--
	p.inflight--
	if a.ended {
		p.awaiting--
	}
	switch kind {
	case endFinished:
		p.stats.Finished++
	case endInterrupted:
		p.stats.Interrupted++
	case endForced:
		p.stats.Forced++
	case endLost:
		p.stats.Lost++
	}
	for _, ch := range p.waiters[id] {
		close(ch)
	}
	delete(p.waiters, id)
	p.closeIdleLocked()
	p.wakeClaims()
}

// closeIdleLocked closes the Idle channels once no attempt is in flight
// and no claim is being registered. Called with p.mu held.
func (p *Pool) closeIdleLocked() {
	if p.inflight != 0 || p.claiming != 0 {
		return
	}
	for _, ch := range p.idle {
		close(ch)
	}
	p.idle = nil
}

// completeWriters is how many batches of completions may be written at
// once, each on a connection of its own: while one waits for its commit
// (a WAL flush) the next is written, and the database works on both.
const completeWriters = 2

// completeLoop writes completions in batches: whatever has arrived while
// the previous batches were being written goes in the next transaction.
// Up to completeWriters batches are written at once; a batch starts beside
// another only once it holds minPipelined completions (a handful each
// would cost a transaction each), and at once when none is being written.
func (p *Pool) completeLoop() {
	defer p.wg.Done()
	var writing sync.WaitGroup
	defer writing.Wait()
	written := make(chan struct{}, completeWriters)
	busy := 0 // batches being written
	var batch []completion
	for {
		if len(batch) > 0 && (busy == 0 || busy < completeWriters && len(batch) >= p.minPipelined()) {
			busy++
			writing.Add(1)
			p.writing.Add(1)
			go func(b []completion) {
				defer writing.Done()
				p.writeBatch(b)
				p.writing.Add(-1)
				written <- struct{}{}
			}(batch)
			batch = nil
			continue
		}
		in := p.completions
		if len(batch) >= p.cfg.ClaimBatch {
			in = nil // full: wait for a writer
		}
		select {
		case c := <-in:
			if batch == nil {
				batch = make([]completion, 0, p.cfg.ClaimBatch)
			}
			batch = append(batch, c)
		drain:
			for len(batch) < p.cfg.ClaimBatch {
				select {
				case c := <-p.completions:
					batch = append(batch, c)
				default:
					break drain
				}
			}
		case <-written:
			busy--
		case <-p.done:
			return
		}
	}
}

// minPipelined is the size a batch of completions needs to be written
// beside another: a quarter of ClaimBatch, at most 64 (a transaction
// costs the database about as much as a few tens of completions).
func (p *Pool) minPipelined() int { return max(1, min(64, p.cfg.ClaimBatch/4)) }

func (p *Pool) writeBatch(batch []completion) {
	defer trace.StartRegion(context.Background(), "pool.complete").End()
	cs := make([]tasks.Completion, len(batch))
	for i, c := range batch {
		cs[i] = c.c
	}
	stoppingTries := 0 // tries since the pool began to stop
	for try := 0; ; try++ {
		var errs []error
		var err error
		if try == 0 {
			errs, err = p.completeAndClaim(cs, batch)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease/2)
			errs, err = p.store.Complete(ctx, cs)
			cancel()
		}
		if err == nil {
			for i, c := range batch {
				kind := c.kind
				if errs[i] != nil {
					kind = endLost
					p.log.Warn("attempt result refused", zap.Int64("task", c.c.Lease.TaskID), zap.Error(errs[i]))
				}
				if kind != endLost && p.cfg.OnEvent != nil {
					att := c.c.Attempt
					att.TaskID, att.Number, att.Owner = c.c.Lease.TaskID, c.c.Lease.Token, c.c.Lease.Owner
					p.emit(Event{Kind: EventEnded, TaskID: c.c.Lease.TaskID, Number: c.c.Lease.Token, Queue: c.a.claimed.Task.Queue,
						Tenant: c.a.claimed.Task.Tenant, State: c.c.State, Attempt: &att, Result: c.c.Result})
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

// completeAndClaim writes a batch's completions, and, when the store can
// (tasks.CompletingClaimer) and no other claim is under way, claims in the
// same round trip the room they leave, handing what it claimed to the
// workers.
func (p *Pool) completeAndClaim(cs []tasks.Completion, batch []completion) ([]error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease/2)
	defer cancel()
	cc, ok := p.store.(tasks.CompletingClaimer)
	if !ok || !p.claimMu.TryLock() {
		if trace.IsEnabled() {
			trace.Logf(ctx, "pool.complete", "completions %d", len(cs))
		}
		return p.store.Complete(ctx, cs)
	}
	defer p.claimMu.Unlock()
	req, ok := p.claimRequest(batch)
	select {
	case <-p.intakeStopped:
		ok = false
	default:
	}
	if !ok {
		return p.store.Complete(ctx, cs)
	}
	errs, claimed, err := cc.CompleteAndClaim(ctx, cs, req)
	if trace.IsEnabled() {
		trace.Logf(ctx, "pool.completeAndClaim", "completions %d room %d claimed %d", len(cs), req.Max, len(claimed))
	}
	if len(claimed) == 0 {
		return errs, err
	}
	as := make([]*attempt, len(claimed))
	for i, c := range claimed {
		as[i] = p.newAttempt(c)
	}
	select {
	case <-p.intakeStopped: // claimLoop may have given back ready already
		p.release(as)
	default:
		// ready has room for them (the room claimRequest counted), unless
		// Adopt filled it meanwhile: then they are given back rather
		// than block the completions the workers wait on.
		p.moved.Store(p.cfg.Now().UnixNano())
		for i, a := range as {
			select {
			case p.hand(a) <- a:
				continue
			default:
				p.release(as[i:])
			}
			break
		}
	}
	return errs, err
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
		p.finish(c.a, endLost)
	}
}

// decision is what the pool does with an attempt's outcome.
type decision struct {
	state   tasks.State
	counted bool
	runAt   time.Time
}

// decide applies r and the state machine to one outcome. stopped reports that
// the pool (shutdown) asked the attempt to stop or forced it; cancelled
// that the task's cancellation was requested; compileRetry is
// Config.CompileRetry.
func decide(r tasks.RetryPolicy, compileRetry time.Duration, t tasks.Task, out *sandbox.Outcome, stopped, cancelled bool, now time.Time) decision {
	// A guest that a forced stop could not end (the sandbox abandoned it)
	// is the guest's fault even when the pool stopped it: counted.
	stopped = stopped && !out.Abandoned
	switch {
	case out.Kind == sandbox.KindSucceeded:
		return decision{state: tasks.StateSucceeded}
	case cancelled:
		return decision{state: tasks.StateCancelled}
	case errors.Is(out.Err, sandbox.ErrSnapshotMismatch):
		// Resumed from a snapshot that did not lead its guest back (a
		// damaged one, dropped): not the guest's fault. Again at once,
		// afresh, not counted.
		return decision{state: tasks.StateQueued, runAt: now}
	case out.Kind == sandbox.KindSuspended && !out.Deadline:
		// Suspended by a drain (ForceStop), its snapshot stored: back in
		// the queue at once, attempt not counted, to resume where it was.
		return decision{state: tasks.StateQueued, runAt: now}
	case stopped && (out.Kind == sandbox.KindInterrupted || out.Kind == sandbox.KindForced):
		// Shutdown: not the task's fault. Back in the queue at once, with
		// its checkpoint, attempt not counted.
		return decision{state: tasks.StateQueued, runAt: now}
	case (out.Kind == sandbox.KindInterrupted || out.Kind == sandbox.KindSuspended) && out.Deadline && out.CheckpointsSaved > 0:
		// A time-sliced task: it made progress and saved it before its
		// attempt deadline. Resume at once, not counted.
		return decision{state: tasks.StateQueued, runAt: now}
	case errors.Is(out.Err, sandbox.ErrCompileTimeout):
		// Past the compile budget, maybe only because the machine is
		// loaded: the compilation goes on, and a later attempt runs the
		// module once it ends. Counted, so that one that never ends does
		// not loop.
		if t.Failures+1 >= t.MaxAttempts {
			return decision{state: tasks.StateDead, counted: true}
		}
		return decision{state: tasks.StateQueued, counted: true, runAt: now.Add(max(r.Backoff(t.Failures+1), compileRetry))}
	case out.Kind.Permanent() || out.Kind == KindRefused || out.Kind == KindInputUnavailable:
		return decision{state: tasks.StateDead, counted: true}
	case out.Kind == sandbox.KindWorkLimit && out.CheckpointsSaved == 0:
		// The work budget ends the same module on the same input at the
		// same point: another attempt would too, unless it resumes from
		// a checkpoint this one saved (then it is retried as a failure).
		return decision{state: tasks.StateDead, counted: true}
	}
	failures := t.Failures + 1
	if failures >= t.MaxAttempts {
		return decision{state: tasks.StateDead, counted: true}
	}
	return decision{state: tasks.StateQueued, counted: true, runAt: now.Add(r.Backoff(failures))}
}
