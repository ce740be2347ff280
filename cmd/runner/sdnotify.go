package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
)

// sdNotify is what runner serve tells the service manager that started it
// (sd_notify(3), through go-systemd's daemon package) when it runs under
// a systemd unit of Type=notify (deploy/systemd/stint-runner.service):
// READY=1 once it serves (its store reached), STOPPING=1 when the phased
// stop begins, STATUS= lines for systemctl status, and, when the unit sets
// WatchdogSec=, WATCHDOG=1 every half of it for as long as the runner is
// healthy (watch). Without NOTIFY_SOCKET it sends nothing; without
// WATCHDOG_USEC (or with a WATCHDOG_PID that is another process) it sends
// no WATCHDOG=1.
type sdNotify struct {
	log *zap.Logger
	// send writes one notification: daemon.SdNotify, or a test's.
	send func(state string) (bool, error)
	// on: NOTIFY_SOCKET is set.
	on bool
	// watchdog is the watchdog interval systemd gave (WATCHDOG_USEC);
	// 0: none.
	watchdog time.Duration
	// failing: a failed send was logged; said once until one succeeds.
	failing atomic.Bool
}

// newSDNotify reads NOTIFY_SOCKET and WATCHDOG_USEC. It leaves them set:
// the runner starts no child process, and its guests see no environment
// but their task's.
func newSDNotify(log *zap.Logger) *sdNotify {
	n := &sdNotify{log: log, on: os.Getenv("NOTIFY_SOCKET") != "",
		send: func(state string) (bool, error) { return daemon.SdNotify(false, state) }}
	if !n.on {
		return n
	}
	wd, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("ignoring the watchdog systemd asked for: its WATCHDOG_USEC is not a duration; no WATCHDOG=1 will be sent", zap.Error(err))
	}
	n.watchdog = wd
	return n
}

// notify sends state (NAME=VALUE lines) when NOTIFY_SOCKET is set. A
// failure is logged once until a send succeeds again.
func (n *sdNotify) notify(state string) {
	if !n.on {
		return
	}
	if _, err := n.send(state); err != nil {
		if !n.failing.Swap(true) {
			n.log.Warn("cannot notify systemd (NOTIFY_SOCKET); trying again at the next notification (said once until it works)", zap.Error(err))
		}
		return
	}
	if n.failing.Swap(false) {
		n.log.Info("notifying systemd works again")
	}
}

// ready says the runner serves: its store reached, its workers started.
func (n *sdNotify) ready() {
	n.notify(daemon.SdNotifyReady + "\nSTATUS=serving")
}

// stopping says the phased stop began.
func (n *sdNotify) stopping() {
	n.notify(daemon.SdNotifyStopping + "\nSTATUS=stopping in phases (docs/shutdown.md)")
}

// status sets the line systemctl status shows.
func (n *sdNotify) status(s string) { n.notify("STATUS=" + s) }

// watch sends WATCHDOG=1 every half of the watchdog interval, each time
// only after healthy has said the runner is healthy: a runner whose
// health check fails or does not return stops pinging, and systemd ends
// it (WatchdogSignal, SIGABRT, then SIGKILL) and restarts it. A frozen
// process (a stop-the-world that never ends) runs no goroutine and so
// pings no more either. healthy gets a context that ends a quarter of the
// interval later; it must return by then. stop ends the loop and waits
// for it. Without a watchdog, watch does nothing.
func (n *sdNotify) watch(healthy func(context.Context) error) (stop func()) {
	if !n.on || n.watchdog <= 0 {
		return func() {}
	}
	every := n.watchdog / 2
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		sick := false // an unhealthy check was logged; said once until healthy again
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cctx, ccancel := context.WithTimeout(ctx, every/2)
			err := healthy(cctx)
			ccancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				if !sick {
					sick = true
					n.log.Warn("not pinging the systemd watchdog: the runner is not healthy; systemd restarts it after WatchdogSec without a ping",
						zap.Duration("watchdog", n.watchdog), zap.Error(err))
				}
				continue
			}
			if sick {
				sick = false
				n.log.Info("healthy again: pinging the systemd watchdog")
			}
			n.notify(daemon.SdNotifyWatchdog)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// healthProbe asks a handler GET /healthz in process, as a liveness probe
// asks it over HTTP (the request is counted in stint_http_requests_total
// like a probe's): the watchdog's health check when runner serve has an
// API. One request at a time: while one has not returned, the next check
// fails at once.
type healthProbe struct {
	inFlight atomic.Bool
}

// check serves GET /healthz with h and wants 200 within ctx.
func (p *healthProbe) check(ctx context.Context, h http.Handler) error {
	if !p.inFlight.CompareAndSwap(false, true) {
		return errors.New("the previous GET /healthz has not returned yet")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost/healthz", nil)
	if err != nil {
		p.inFlight.Store(false)
		return err
	}
	code := make(chan int, 1)
	go func() {
		w := &probeWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		c := w.status()
		p.inFlight.Store(false) // before the answer: a check made once this one returns never finds it in flight
		code <- c
	}()
	select {
	case c := <-code:
		if c != http.StatusOK {
			return fmt.Errorf("GET /healthz answered %d", c)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("GET /healthz did not answer: %w", context.Cause(ctx))
	}
}

// probeWriter is the http.ResponseWriter of an in-process probe: it keeps
// the status and drops the body.
type probeWriter struct {
	header http.Header
	code   int
}

func (w *probeWriter) Header() http.Header { return w.header }

func (w *probeWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *probeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

func (w *probeWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// healthy is runner serve's health check for the watchdog, the one
// /healthz makes: its API's handler answers GET /healthz 200 (when
// http.addr is set; without an API, that the check runs at all is what
// /healthz would say).
func (a *app) healthy(ctx context.Context) error {
	srv := a.api.Load()
	if srv == nil {
		return nil
	}
	return a.probe.check(ctx, srv.Handler())
}
