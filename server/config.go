package server

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
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
)

// Config configures a Server. Every zero field takes the default documented
// on it.
type Config struct {
	// Addr is the TCP address to listen on, host:port (http.addr in the
	// runner's configuration). Port 0 picks a free port; Server.Addr then
	// tells which. Default DefaultAddr ("127.0.0.1:8080").
	Addr string
	// Token, when set, is the bearer token every request under /v1/ must
	// carry ("Authorization: Bearer <token>"); it is compared in constant
	// time. /healthz, /readyz and /metrics stay open. Default: none (the
	// API is open; keep Addr on loopback then).
	Token string
	// MaxModuleBytes caps the body of a request: a module upload or a task
	// spec (whose input is part of it). A bigger body gets 413. Default
	// DefaultMaxModuleBytes (64 MiB).
	MaxModuleBytes int64
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
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Validate reports a setting that cannot work.
func (c Config) Validate() error {
	if c.MaxModuleBytes < 0 {
		return fmt.Errorf("server: config: max module bytes %d is negative", c.MaxModuleBytes)
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
	// wakes the pool. Nil: Store.Submit.
	Submit func(ctx context.Context, spec tasks.Spec) (tasks.Task, bool, error)
	// Ready reports readiness for /readyz and the stint_ready gauge; pass
	// the shutdown coordinator's Ready (false from the first shutdown phase
	// on). Nil: always ready.
	Ready func() bool
	// Stats returns the pool's counters for the stint_pool_* metrics, read
	// at every scrape; pass the pool's Stats. Nil: those metrics are not
	// exported.
	Stats func() pool.Stats
	// SandboxStats returns the sandbox runtime's counters for the
	// stint_sandbox_* metrics; pass the runtime's Stats. Nil: not exported.
	SandboxStats func() sandbox.Stats
}

func (d Deps) validate() error {
	if d.Store == nil {
		return errors.New("server: deps: a store is required")
	}
	return nil
}
