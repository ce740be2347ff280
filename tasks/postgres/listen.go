package postgres

import (
	"context"
	"errors"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// ListenWakeups listens for the wake-ups that Submit, Retry, Release,
// RecoverOwn and RecoverRunning (and Complete, for a task requeued ready at
// once) send on the schema's NOTIFY channel from any Store on the schema,
// in any process, and returns a channel that gets a value (coalesced: one
// pending at most) after each, and a func that stops listening.
//
// It does not block: the listener runs on a connection of its own (not
// one of the pool's), which it opens in the background. When that
// connection fails or is lost, it connects again after a wait that starts
// at Options.ReconnectMin and doubles up to Options.ReconnectMax (with
// jitter), logging at the 1st, 2nd, 4th, 8th... failure in a row. Each
// time it is listening again, and the first time, the channel gets a value:
// notifications sent while it was not listening are lost, so a claim then
// finds what they announced. A runner still polls, more slowly, as a
// fallback. The error is non-nil only for a closed Store. Close stops the
// listeners too.
func (s *Store) ListenWakeups() (<-chan struct{}, func() error, error) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{s: s, ch: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.listeners == nil {
		s.mu.Unlock()
		cancel()
		return nil, nil, errors.New("postgres: listen for wake-ups: the store is closed")
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	go l.run(ctx)
	return l.ch, func() error {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.stop()
		return nil
	}, nil
}

// Channel is the NOTIFY channel of the store's schema, on which Submit
// and the other writes that make a task ready send wake-ups (with an empty
// payload). Another program may listen on it, or notify it.
func (s *Store) Channel() string { return s.channel }

// listener is one ListenWakeups.
type listener struct {
	s      *Store
	ch     chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// stop ends the listener and waits for it.
func (l *listener) stop() {
	l.cancel()
	<-l.done
}

// wake gives the channel a value unless one is pending.
func (l *listener) wake() {
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

// run listens, connecting again whenever the connection fails, until ctx
// ends.
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	log := l.s.log.With(zap.String("channel", l.s.channel))
	wait := l.s.opts.ReconnectMin
	failures := 0
	for {
		err := l.listen(ctx, func() {
			if failures > 0 {
				log.Info("listening for wake-ups again", zap.Int("failed_attempts", failures))
			}
			failures, wait = 0, l.s.opts.ReconnectMin
			l.wake() // notifications sent meanwhile are lost
		})
		if ctx.Err() != nil {
			return
		}
		failures++
		if bits.OnesCount(uint(failures)) == 1 { // 1, 2, 4, 8...: once per doubling
			log.Warn("wake-ups from other runners paused: the listener lost its connection to PostgreSQL; "+
				"connecting again (tasks are still found by polling)",
				zap.Int("failed_attempts", failures), zap.Duration("next_wait", wait), zap.Error(l.s.dbErr("listen", err)))
		}
		// Jitter: runners that lost their connections together (a restart
		// of PostgreSQL) do not all come back at once.
		d := time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, l.s.opts.ReconnectMax)
	}
}

// listen opens a connection, LISTENs on the channel, calls listening, and
// wakes for each notification until the connection fails or ctx ends.
func (l *listener) listen(ctx context.Context, listening func()) error {
	cfg := l.s.pool.Config().ConnConfig
	cfg.RuntimeParams["application_name"] = "stint wake-ups"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.s.channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		l.wake()
	}
}
