package pool

import (
	"context"
	"time"

	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

// BegunEvery is how often, at most, a pool writes which of its claimed
// attempts a worker began (tasks.Store.MarkBegun), in one write: until
// then the store shows them claimed (tasks.StateClaimed). An attempt that
// ends within it is never marked (its end is written instead), so that
// short tasks cost no write of their own.
const BegunEvery = 50 * time.Millisecond

// begin notes that a worker began a: beginLoop marks it in the store.
func (p *Pool) begin(a *attempt) {
	p.mu.Lock()
	p.toMark = append(p.toMark, a)
	p.mu.Unlock()
	select {
	case p.begun <- struct{}{}:
	default:
	}
}

// beginLoop marks the attempts workers began (begin) in the store, at most
// every BegunEvery, those still running in one write. A failed write is
// tried again with the next.
func (p *Pool) beginLoop() {
	defer p.wg.Done()
	failures := 0
	for {
		select {
		case <-p.begun:
		case <-p.done:
			return
		}
		t := time.NewTimer(BegunEvery)
		select {
		case <-t.C:
		case <-p.done:
			t.Stop()
			return
		}
		p.mu.Lock()
		as := p.toMark
		p.toMark = nil
		live := as[:0]
		for _, a := range as {
			if !a.ended && p.running[a.claimed.Task.ID] == a {
				live = append(live, a)
			}
		}
		p.mu.Unlock()
		if len(live) == 0 {
			continue
		}
		leases := make([]tasks.Lease, len(live))
		for i, a := range live {
			leases[i] = a.claimed.Lease
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Heartbeat)
		err := p.store.MarkBegun(ctx, leases)
		cancel()
		if err == nil {
			failures = 0
			continue
		}
		// The tasks are shown claimed meanwhile; said once per doubling
		// of the failures.
		if failures++; failures&(failures-1) == 0 {
			p.log.Warn("marking begun attempts failed; they are shown claimed until it works", zap.Int("attempts", len(live)),
				zap.Int("failures", failures), zap.Error(err))
		}
		p.mu.Lock()
		p.toMark = append(p.toMark, live...)
		p.mu.Unlock()
		select {
		case p.begun <- struct{}{}:
		default:
		}
	}
}
