package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

// Defaults applied by Config.WithDefaults.
const (
	// DefaultAddr is the listen address when Config.Addr is empty: the
	// loopback interface only, so an unconfigured runner is not reachable
	// from other machines.
	DefaultAddr = "127.0.0.1:8080"
	// DefaultMaxModuleBytes caps a request body (a module upload or a
	// task spec) when Config.MaxModuleBytes is zero: 64 MiB.
	DefaultMaxModuleBytes int64 = 64 << 20
	// DefaultMaxInflightBytes is the budget of bytes held by requests in
	// flight when Config.MaxInflightBytes is zero: 256 MiB.
	DefaultMaxInflightBytes int64 = 256 << 20
	// DefaultMaxConcurrent is how many API requests are served at once
	// when Config.MaxConcurrent is zero.
	DefaultMaxConcurrent = 64
	// DefaultMaxConnections is how many connections may be open at once
	// when Config.MaxConnections is zero.
	DefaultMaxConnections = 256
	// DefaultSessionIdle is how long a dashboard session lasts without a
	// request when Config.SessionIdle is zero.
	DefaultSessionIdle = time.Hour
	// DefaultSessionMax is how long a dashboard session lasts after its
	// sign-in when Config.SessionMax is zero.
	DefaultSessionMax = 12 * time.Hour
)

// ErrNoToken is returned (wrapped) by Config.Validate, and so by New, for a
// listen address that is not loopback without a token: anyone who could
// reach the port could run code on the machine and read every task.
var ErrNoToken = errors.New("a non-loopback listen address needs a token")

// Config configures a Server. Every zero field takes the default documented
// on it.
type Config struct {
	// Addr is the TCP address to listen on, host:port (http.addr in the
	// runner's configuration). Port 0 picks a free port; Server.Addr then
	// tells which. Default DefaultAddr ("127.0.0.1:8080").
	Addr string
	// Token, when set, is the bearer token every request under /v1/ must
	// carry ("Authorization: Bearer <token>"); it is compared in constant
	// time. /healthz and /readyz stay open, /metrics to loopback addresses
	// (see MetricsPublic). Default: none, which
	// is only allowed on a loopback Addr (localhost, 127.0.0.0/8, ::1; an
	// empty host such as ":8080" is every interface, not loopback): New
	// fails with ErrNoToken otherwise. Without a token, requests must name a
	// loopback host (Host header), so that a web page cannot reach the API
	// through DNS rebinding.
	Token string
	// MaxModuleBytes caps the body of a request: a module upload or a task
	// spec (whose input is part of it). A bigger body gets 413. Default
	// DefaultMaxModuleBytes (64 MiB).
	MaxModuleBytes int64
	// MaxInflightBytes is the budget of bytes that requests in flight may
	// hold (http.max_inflight_bytes): request bodies being read and
	// processed (by Content-Length, or MaxModuleBytes when the length is
	// not sent), and the stored input and result bytes read to serve
	// /input, /result, /cancel and /retry. A request that would go over it
	// gets 503 with Retry-After before its body is read. One request
	// bigger than the whole budget is served only when nothing else is in
	// flight. Default DefaultMaxInflightBytes (256 MiB).
	MaxInflightBytes int64
	// MaxConcurrent caps the /v1/ requests served at once
	// (http.max_concurrent); past it a request gets 503 with Retry-After.
	// The probes and /metrics are not counted. Default DefaultMaxConcurrent
	// (64).
	MaxConcurrent int
	// MaxConnections caps the connections open at once
	// (http.max_connections), idle keep-alive ones included: past it the
	// server accepts no more until one closes (the kernel queues them in
	// its listen backlog). Every connection is a descriptor; this bounds
	// what clients that open many and send nothing can take. The probes
	// and /metrics share it. Default DefaultMaxConnections (256).
	MaxConnections int
	// MetricsPublic serves /metrics to every address without the token
	// (http.metrics_public), for a scraper that cannot send it. Default
	// false: with a Token, /metrics answers a request from a loopback
	// address (the runner's own machine) without it, and one from any
	// other address only with "Authorization: Bearer <token>" (its series
	// name queues, tenants' labels and schedules). Without a Token the
	// server listens on loopback only, and /metrics is open as every
	// endpoint is.
	MetricsPublic bool
	// SessionIdle ends a dashboard session that sent no request for this
	// long (http.session_idle). Default DefaultSessionIdle.
	SessionIdle time.Duration
	// SessionMax ends a dashboard session this long after its sign-in,
	// however busy (http.session_max). Default DefaultSessionMax.
	SessionMax time.Duration
	// Logger receives request errors (5xx) at error level and one line per
	// request at debug level. Default zap.NewNop().
	Logger *zap.Logger
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxModuleBytes == 0 {
		c.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if c.MaxInflightBytes == 0 {
		c.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.SessionIdle == 0 {
		c.SessionIdle = DefaultSessionIdle
	}
	if c.SessionMax == 0 {
		c.SessionMax = DefaultSessionMax
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Validate reports a setting that cannot work, or that would expose the
// API: a non-loopback Addr without a Token (ErrNoToken). Call it on a
// config with its defaults (WithDefaults), as New does.
func (c Config) Validate() error {
	if c.MaxModuleBytes < 0 {
		return fmt.Errorf("server: config: max module bytes %d is negative", c.MaxModuleBytes)
	}
	if c.MaxInflightBytes < 0 {
		return fmt.Errorf("server: config: http.max_inflight_bytes %d is negative", c.MaxInflightBytes)
	}
	if c.MaxConcurrent < 0 {
		return fmt.Errorf("server: config: http.max_concurrent %d is negative", c.MaxConcurrent)
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("server: config: http.max_connections %d is negative", c.MaxConnections)
	}
	if c.SessionIdle < 0 || c.SessionMax < 0 {
		return fmt.Errorf("server: config: http.session_idle %s and http.session_max %s must not be negative", c.SessionIdle, c.SessionMax)
	}
	if c.Token == "" && !LoopbackAddr(c.Addr) {
		return fmt.Errorf("server: http.addr %q is not a loopback address and http.token is empty: anyone who can "+
			"reach the port could run code on this machine and read every task. Set a token (http.token in the "+
			"config file, RUNNER_HTTP_TOKEN or --http-token; e.g. the output of `openssl rand -hex 32`), which "+
			"clients send as \"Authorization: Bearer <token>\", or listen on 127.0.0.1: %w", c.Addr, ErrNoToken)
	}
	return nil
}

// Deps are what the server serves: the store, and optional hooks into the
// worker pool and the shutdown coordinator.
type Deps struct {
	// Store is the task store. Required.
	Store tasks.Store
	// Submit queues a task; pass the pool's Submit (pool.Pool.Submit),
	// which checks mounts and limits against the runner's policy and
	// wakes the pool. Nil: Store.Submit. The server itself never touches
	// the host's file system: the pool's Submit does, to check a mount
	// (tasks.CheckSpec: internal/hostdir resolves the host path, opens it
	// without links, compares it with mounts.allow by device and inode,
	// and closes it), because only that is the answer the runner will
	// give at the task's first attempt (docs/configuration.md, Mounts).
	Submit func(ctx context.Context, spec tasks.Spec) (tasks.Task, bool, error)
	// Ready reports readiness for /readyz and the stint_ready gauge; pass
	// the shutdown coordinator's Ready (false from the first shutdown phase
	// on). Nil: always ready.
	Ready func() bool
	// Stats returns the pool's counters for the stint_pool_* metrics and
	// the dashboard, read at every scrape and page; pass the pool's Stats,
	// converted (func() server.PoolStats { return server.PoolStats(p.Stats()) }).
	// Nil: those metrics are not exported.
	Stats func() PoolStats
	// SandboxStats returns the sandbox runtime's counters for the
	// stint_sandbox_* metrics; fill it from the runtime's Stats. Nil: not
	// exported.
	SandboxStats func() SandboxStats
	// Phase returns the shutdown phase, shown on the dashboard (draining,
	// stopping, ...); pass the shutdown coordinator's Phase. Nil: the
	// dashboard shows readiness alone.
	Phase func() shutdown.Phase
	// CheckSpec checks the spec of a schedule added through the API
	// against the runner's policy (tasks.CheckSpec with it), as Submit
	// does a task's. Nil: the spec is only validated (tasks.Spec.Validate);
	// the runner checks each task when it submits it.
	CheckSpec func(tasks.Spec) error
	// Version is the runner's version, the label of stint_build_info
	// ("unknown" when empty).
	Version string
}

func (d Deps) validate() error {
	if d.Store == nil {
		return errors.New("server: deps: a store is required")
	}
	return nil
}
