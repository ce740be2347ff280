package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// Timeouts and limits of the http.Server that Start runs. Reading a body
// and writing a response have no server-wide timeout: each request gets
// deadlines sized to what it sends or receives (see transferTime).
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 60 * time.Second
	// maxHeaderBytes bounds a request's header block (the default is 1 MiB).
	maxHeaderBytes = 64 << 10
)

// Server is Stint's HTTP API: the task and module endpoints under /v1/,
// /healthz, /readyz and /metrics. Create one with New; serve it with Start
// and Shutdown, or mount Handler in a server of your own.
type Server struct {
	cfg     Config
	deps    Deps
	log     *zap.Logger
	reg     *prometheus.Registry
	handler http.Handler
	// inflight is the budget of bytes held by requests (MaxInflightBytes),
	// slots the semaphore of /v1/ requests (MaxConcurrent).
	inflight *budget
	slots    chan struct{}
	// tokenSum is the sha256 of Config.Token; dash the dashboard's state.
	tokenSum [sha256.Size]byte
	dash     *dashboard
	// attempts are the attempt metrics ObserveAttempt* feed.
	attempts *attemptMetrics
	// tp counts the attempts ObserveAttemptEnd saw, per minute, for the
	// overview's graph (throughput.go).
	tp throughput
	// tenantsNow and queuesNow keep what the store said of the tenants
	// and the queues, for throttle (handlers.go).
	tenantsNow limitsNow[map[string]tasks.Tenant]
	queuesNow  limitsNow[map[string]tasks.SharedLimits]

	mu      sync.Mutex
	srv     *http.Server
	ln      net.Listener
	served  chan struct{} // closed when Serve returns
	closing bool          // Shutdown was called
	stopped chan struct{} // closed when the first Shutdown has returned
	stopErr error
}

// New builds a Server. It does not listen yet (see Start). It fails when
// cfg is not valid or deps has no Store.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if deps.Submit == nil {
		deps.Submit = deps.Store.Submit
	}
	if deps.Ready == nil {
		deps.Ready = func() bool { return true }
	}
	s := &Server{cfg: cfg, deps: deps, log: cfg.Logger, stopped: make(chan struct{}),
		inflight: &budget{max: cfg.MaxInflightBytes}, slots: make(chan struct{}, cfg.MaxConcurrent)}
	reg, requests, err := newRegistry(deps, s.inflight.inUse, func() int { return len(s.slots) })
	if err != nil {
		return nil, err
	}
	s.attempts = newAttemptMetrics()
	for _, c := range []prometheus.Collector{s.attempts.ended, s.attempts.duration, s.attempts.wait, s.attempts.work,
		newStoreCollector(deps.Store, cfg.Logger.Named("metrics")), buildInfo(deps.Version)} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: metrics: %w", err)
		}
	}
	s.reg = reg
	if cfg.Token != "" {
		s.tokenSum = sha256.Sum256([]byte(cfg.Token))
	}
	s.dash = newDashboard(cfg)
	s.handler = s.routes(requests)
	return s, nil
}

// Handler returns the server's handler: every endpoint with its
// authentication, error mapping and metrics. It works without Start (in an
// httptest.Server, or mounted in a mux of your own).
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the dedicated Prometheus registry behind /metrics, so a
// host application can register collectors of its own there.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Start listens on Config.Addr and serves in a goroutine; it does not
// block. ctx bounds only the listen. It fails with a clear message when the
// address is taken. Calling it again after a successful Start does
// nothing; after Shutdown it fails with an error wrapping
// http.ErrServerClosed.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return fmt.Errorf("server: start: %w", http.ErrServerClosed)
	}
	if s.srv != nil {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("server: listen on %s: the address is already in use (is another runner, or another program, on this port? choose another http.addr): %w", s.cfg.Addr, err)
		}
		return fmt.Errorf("server: listen on %s: %w", s.cfg.Addr, err)
	}
	ln = newLimitListener(ln, s.cfg.MaxConnections)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
	}
	s.srv, s.ln, s.served = srv, ln, make(chan struct{})
	go func(served chan<- struct{}) {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", zap.String("addr", ln.Addr().String()), zap.Error(err))
		}
	}(s.served)
	s.log.Info("http server listening", zap.String("addr", ln.Addr().String()))
	return nil
}

// Addr returns the address the server listens on once started (the real
// port when Config.Addr asked for port 0), and Config.Addr before.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.cfg.Addr
}

// Shutdown stops the server gracefully: it stops listening, lets requests
// in progress finish until ctx is done, then closes the connections left
// and returns ctx's error. It is safe to call twice (a second call waits
// for the first and returns its result) and before Start (the server then
// never starts). Its signature fits shutdown.Hook.Run.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		select {
		case <-s.stopped:
			return s.stopErr
		case <-ctx.Done():
			return fmt.Errorf("server: shutdown: %w", ctx.Err())
		}
	}
	s.closing = true
	srv, served := s.srv, s.served
	s.mu.Unlock()

	var err error
	if srv != nil {
		if err = srv.Shutdown(ctx); err != nil {
			err = errors.Join(fmt.Errorf("server: shutdown: %w", err), srv.Close())
		}
		<-served
	}
	s.stopErr = err
	close(s.stopped)
	return err
}
