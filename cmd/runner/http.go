package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

// httpConfig is the API server's configuration, from the http.* keys.
func (a *app) httpConfig() server.Config {
	// A task spec carries its input in base64: room for limits.max_input.
	bodyCap := max(server.DefaultMaxModuleBytes, a.cfg.Policy.MaxInput/3*4+1<<20)
	return server.Config{Addr: a.cfg.HTTPAddr, Token: a.cfg.HTTPToken, MaxModuleBytes: bodyCap,
		MaxInflightBytes: a.cfg.HTTPMaxInflightBytes, MaxConcurrent: a.cfg.HTTPMaxConcurrent, MaxConnections: a.cfg.HTTPMaxConnections,
		MetricsPublic: a.cfg.HTTPMetricsPublic, SessionIdle: a.cfg.HTTPSessionIdle, SessionMax: a.cfg.HTTPSessionMax,
		Logger: a.log.Named("http")}
}

// checkHTTP refuses, as a configuration error (exit 2) before anything is
// opened, an API that would start exposed: a non-loopback http.addr
// without http.token.
func (a *app) checkHTTP() error {
	if a.cfg.HTTPAddr == "" {
		return nil
	}
	if err := a.httpConfig().WithDefaults().Validate(); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	return nil
}

// startHTTP starts the API server when http.addr is set, and registers its
// graceful stop as the first cleanup hook (before the workers and the store).
func (a *app) startHTTP(ctx context.Context, coord *shutdown.Coordinator, r *stint.Runner) error {
	if a.cfg.HTTPAddr == "" {
		return nil
	}
	srv, err := server.New(a.httpConfig(),
		server.Deps{Store: r.Store(), Submit: r.Submit, Ready: readiness(coord.Ready, r.Store()),
			Stats:        func() server.PoolStats { return server.PoolStats(r.PoolStats()) },
			SandboxStats: func() server.SandboxStats { return serverSandboxStats(r.Runtime().Stats()) },
			Phase:        coord.Phase, Version: readVersionInfo().Version,
			CheckSpec: func(spec tasks.Spec) error { return tasks.CheckSpec(spec, a.cfg.Policy) }})
	if err != nil {
		if errors.Is(err, server.ErrNoToken) {
			return &exitError{code: exitUsage, err: err}
		}
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	a.api.Store(srv)
	a.log.Info("HTTP API listening", zap.String("addr", srv.Addr()))
	return coord.AddHook(shutdown.Hook{Name: "http", Priority: shutdown.PriorityHTTP, Timeout: a.cfg.Shutdown.Hooks["http"], Run: srv.Shutdown})
}

// observeEvent feeds the API server's attempt metrics (queue wait,
// duration, outcomes) from the pool's events, once the server runs.
func (a *app) observeEvent(e pool.Event) {
	srv := a.api.Load()
	if srv == nil {
		return
	}
	switch e.Kind {
	case pool.EventStarted:
		srv.ObserveAttemptStart(e.Queue, e.Waited)
	case pool.EventEnded:
		if e.Attempt != nil {
			srv.ObserveAttemptEnd(e.Queue, e.Tenant, e.Attempt.Outcome, e.Attempt.Duration(), e.Attempt.Work)
		}
	}
}

// readyPing bounds the store's Ping in a readiness probe.
const readyPing = 2 * time.Second

// readiness is ready and, for a store that can tell (tasks.Pinger: a
// database server), its answering a Ping.
func readiness(ready func() bool, store tasks.Store) func() bool {
	p, ok := store.(tasks.Pinger)
	if !ok {
		return ready
	}
	return func() bool {
		if !ready() {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), readyPing)
		defer cancel()
		return p.Ping(ctx) == nil
	}
}

// serverSandboxStats is what the server exports of the runtime's counters.
func serverSandboxStats(st sandbox.Stats) server.SandboxStats {
	return server.SandboxStats{
		Modules: st.Modules, Compilations: st.Compilations, Evictions: st.Evictions, CacheFailures: st.CacheFailures,
		Compiling: st.Compiling, CompilingAbandoned: st.CompilingAbandoned, CompileWaiting: st.CompileWaiting, CompileTimeouts: st.CompileTimeouts,
		Abandoned: st.Abandoned, Stray: st.Stray, Refused: st.Refused,
	}
}

// startingHTTP answers http.addr while runner serve waits for its store
// (server.StartingHandler: alive, not ready), until stop.
type startingHTTP struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// startStartingHTTP listens on http.addr (none when it is empty) with
// server.StartingHandler.
func (a *app) startStartingHTTP(ctx context.Context) (*startingHTTP, error) {
	if a.cfg.HTTPAddr == "" {
		return nil, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", a.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s while waiting for the store: %w", a.cfg.HTTPAddr, err)
	}
	h := &startingHTTP{addr: ln.Addr().String(), done: make(chan struct{}),
		srv: &http.Server{Handler: server.StartingHandler("the runner is starting: its store cannot be reached yet"),
			ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(a.log.Named("http"))}}
	go func() {
		defer close(h.done)
		_ = h.srv.Serve(ln)
	}()
	a.log.Info("HTTP probes listening while the runner waits for its store (/healthz ok, /readyz not ready)",
		zap.String("addr", h.addr))
	return h, nil
}

// stop closes the listener and its connections, and returns the address
// it listened on (with the real port when http.addr asked for port 0).
func (h *startingHTTP) stop() string {
	_ = h.srv.Close()
	<-h.done
	return h.addr
}
