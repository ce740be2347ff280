package pool

import (
	"context"
	"errors"
	"time"

	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

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
	leases := make([]tasks.Lease, 0, len(p.running))
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
		// The store is unreachable or failing: the guests keep running
		// and the next heartbeats try again (a lease nobody took over
		// meanwhile is renewed even when expired). Said once per
		// doubling of the failures, not at every heartbeat.
		p.hbFailures++
		if p.hbFailures&(p.hbFailures-1) == 0 {
			p.log.Warn("heartbeat failed; the attempts keep running", zap.Int("failures", p.hbFailures),
				zap.Int("attempts", len(leases)), zap.Error(err))
		}
		return
	}
	if p.hbFailures > 0 {
		p.log.Info("heartbeats work again", zap.Int("failures", p.hbFailures))
		p.hbFailures = 0
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

// cancelAttempt handles a requested cancellation: stop_requested, then
// forced after CancelGrace.
func (p *Pool) cancelAttempt(a *attempt) {
	if a.cancelled.Swap(true) {
		return
	}
	a.softStop()
	time.AfterFunc(p.cfg.CancelGrace, func() { a.cancel(errors.New("task cancelled")) })
}
