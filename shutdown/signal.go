package shutdown

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.uber.org/zap"
)

// HandleSignals listens for sigs (default SIGTERM and SIGINT) and drives the
// stop: the first signal starts Shutdown on a goroutine of its own (with
// ctx's values but not its cancellation), and every later one calls
// Escalate, as does a first signal that arrives when a stop is already
// running. Wait on Done for the stop to finish.
//
// Listening ends when ctx ends or when the returned stop func is called,
// whichever comes first; the signals then get their default behaviour back
// (see signal.Stop). stop waits for the listening goroutine to exit, does
// not wait for a stop it started, and is safe to call more than once.
func (c *Coordinator) HandleSignals(ctx context.Context, sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGTERM, os.Interrupt}
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer signal.Stop(ch)
		n := 0
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case s := <-ch:
				n++
				c.mu.Lock()
				started := c.started
				c.mu.Unlock()
				if n == 1 && !started {
					c.log.Info("shutdown: signal received, stopping", zap.Stringer("signal", s))
					go c.Shutdown(context.WithoutCancel(ctx))
				} else {
					c.log.Info("shutdown: signal received again, escalating", zap.Stringer("signal", s))
					c.Escalate()
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-exited
		})
	}
}
