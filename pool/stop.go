package pool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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
//
// A guest that can be suspended (snapshot.go) is suspended first, its
// snapshot stored, and only what is still running once every such guest
// has returned, or after suspendWait, is forced.
func (p *Pool) ForceStop() {
	p.RequestStop()
	p.forceOnce.Do(func() {
		p.suspending.Store(true)
		suspended := p.suspendRunning()
		if suspended == nil {
			p.forceCancel(errors.New("pool forced to stop"))
			return
		}
		go func() {
			t := time.NewTimer(suspendWait)
			defer t.Stop()
			select {
			case <-suspended:
			case <-t.C:
			}
			p.forceCancel(errors.New("pool forced to stop"))
		}()
	})
}

// Idle returns a channel closed once no attempt is in flight (claimed and
// not yet recorded in the store) and no claim is under way.
func (p *Pool) Idle() <-chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight == 0 && p.claiming == 0 {
		close(ch)
	} else {
		p.idle = append(p.idle, ch)
	}
	return ch
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
			return fmt.Errorf("pool: %d attempts not recorded %s after the forced stop", p.Stats().Running, forceRecordWait)
		}
	}
	p.ForceStop() // nothing is running: this only releases the context
	p.stopOnce()  // also ends the WakeOn goroutines of a pool never started
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
