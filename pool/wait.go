package pool

import (
	"context"
	"time"

	"github.com/stint-run/stint/tasks"
)

// Wait blocks until the task reaches a terminal state (or ctx ends) and
// returns it.
func (p *Pool) Wait(ctx context.Context, id int64) (tasks.Task, error) {
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

// WakeOn makes the pool look for work each time ch gets a value (wake-ups
// from other processes: the store's ListenWakeups), until the
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

// Wake tells the pool that tasks may wait in the store (submitted, or
// made ready): an idle pool looks for work now, and a pool holding tasks
// of tenants claimed ahead claims now too, whatever it holds, so that a
// task of another tenant starts before that held backlog (claimRequest)
// rather than at the next refill.
func (p *Pool) Wake() {
	p.news.Store(true)
	p.wakeClaims()
}

// wakeClaims makes the claim loop size a claim now: the pool's own
// wake-up, when its work in hand fell or an attempt ended.
func (p *Pool) wakeClaims() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
