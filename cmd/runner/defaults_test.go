package main

import (
	"os"
	"testing"

	"go.uber.org/zap"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/shortdur"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks/sqlite"
)

// defaultConfig loads the configuration with no file, variable or flag.
func defaultConfig(t *testing.T) *Config {
	t.Helper()
	v, err := newViper(pflag.NewFlagSet("none", pflag.ContinueOnError), "")
	require.NoError(t, err)
	c, err := loadConfig(v)
	require.NoError(t, err)
	return c
}

// TestCLIDefaultsArePackageDefaults: every default a package documents
// (sandbox, server, shutdown) is the CLI's default too, read from the
// package, so the two cannot drift.
func TestCLIDefaultsArePackageDefaults(t *testing.T) {
	for _, k := range configKeys {
		t.Setenv(envName(k.name), "") // restored after the test
		require.NoError(t, os.Unsetenv(envName(k.name)))
	}
	c := defaultConfig(t)
	a := &app{cfg: c, log: zap.NewNop()}

	require.Equal(t, shutdown.Config{}.WithDefaults(), a.shutdownConfig())

	sc := sandbox.Config{}.WithDefaults()
	got := a.sandboxConfig()
	require.Equal(t, sc.Defaults, got.Defaults, "limits.* against sandbox.DefaultLimits()")
	require.Equal(t, sandbox.DefaultLimits(), got.Defaults)
	require.Equal(t, sc.MaxModules, got.MaxModules, "max_compiled_modules")
	require.Equal(t, sc.CompileTimeout, got.CompileTimeout, "sandbox.compile_timeout")
	require.Equal(t, sc.CompileMemory, got.CompileMemory, "limits.compile_memory")
	require.Equal(t, sc.StopWatchdog, got.StopWatchdog, "sandbox.stop_watchdog")
	require.Equal(t, sc.Interrupt, got.Interrupt, "sandbox.interrupt")
	require.Equal(t, sc.ModuleLimits, got.ModuleLimits.WithDefaults(), "sandbox.module_limits")

	srv := server.Config{}.WithDefaults()
	require.Equal(t, srv.Addr, c.HTTPAddr, "http.addr")
	require.Equal(t, srv.MaxInflightBytes, c.HTTPMaxInflightBytes, "http.max_inflight_bytes")
	require.Equal(t, srv.MaxConcurrent, c.HTTPMaxConcurrent, "http.max_concurrent")
	require.Equal(t, srv.MaxConnections, c.HTTPMaxConnections, "http.max_connections")
	require.Equal(t, srv.MetricsPublic, c.HTTPMetricsPublic, "http.metrics_public")
	require.Equal(t, srv.SessionIdle, c.HTTPSessionIdle, "http.session_idle")
	require.Equal(t, srv.SessionMax, c.HTTPSessionMax, "http.session_max")

	require.Equal(t, string(sqlite.SyncNormal), c.StoreSync, "store_sync")

	// The task model's limits and the sandbox's hold the same defaults.
	require.Equal(t, sandbox.DefaultLimits().MemoryBytes, c.Limits.MemoryBytes)
	require.Equal(t, sandbox.DefaultLimits().MaxStdout, c.Limits.Stdout)
}

// TestCompileMemoryKey: limits.compile_memory sets sandbox.Config's
// CompileMemory; 0 is no limit.
func TestCompileMemoryKey(t *testing.T) {
	for val, want := range map[string]int64{"2GiB": 2 << 30, "512MiB": 512 << 20, "0": -1} {
		t.Setenv("RUNNER_LIMITS_COMPILE_MEMORY", val)
		a := &app{cfg: defaultConfig(t), log: zap.NewNop()}
		require.Equal(t, want, a.sandboxConfig().CompileMemory, val)
	}
}

// TestFormatDuration: the key table prints package defaults as a person
// would type them.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[string]string{"0s": "0", "1m0s": "1m", "1h0m0s": "1h", "500ms": "500ms", "1m30s": "1m30s", "25s": "25s", "1h30m0s": "1h30m"} {
		dd, err := parseDuration(d)
		require.NoError(t, err)
		require.Equal(t, want, shortdur.Format(dd), d)
	}
}
