package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/internal/shortdur"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// keyKind says how a configuration value is parsed.
type keyKind int

const (
	kindString keyKind = iota
	kindInt
	kindDuration
	kindSize
	kindList
)

// configKey is one configuration key: its three spellings come from the
// name (shutdown.budget, RUNNER_SHUTDOWN_BUDGET, --shutdown-budget).
type configKey struct {
	name  string
	def   string
	kind  keyKind
	usage string
}

// configKeys lists every key, in the order `runner config` prints them.
// A default that a package documents (sandbox, pool, server, shutdown) is
// read from that package's exported default, never typed again here; the
// others (data_dir, the limits.max_* policy, ...) are the CLI's own and
// defined only here. `runner config init` writes this table.
var configKeys = []configKey{
	{"data_dir", "./stint-data", kindString, "directory of the embedded store, its lock and the compilation cache"},
	{"store", "", kindString, `task store: empty for SQLite in data_dir, a sqlite file path (or sqlite:PATH), or postgres://... for a store several runners share`},
	{"store_sync", string(sqlite.SyncNormal), kindString, "how hard a SQLite store pushes each commit to the disk: normal (survives a crash of the runner; a power loss may lose the last commits) or full (a committed task, checkpoint or result survives a power loss; slower commits). Ignored for PostgreSQL (its synchronous_commit decides)"},
	{"store_wait", "5m", kindDuration, "how long runner serve waits at start for a store it cannot reach (PostgreSQL down, restarting or not up yet), trying again with backoff (100ms doubling to 5s) and logging each try; /healthz answers meanwhile and /readyz says not ready. 0: exit 1 at once"},
	{"owner", "", kindString, "this runner's lease owner id, stable across restarts: at start it recovers the attempts its previous process left running on a shared store (default: hostname-<hash of the absolute data_dir>)"},
	{"lease", shortdur.Format(pool.DefaultLease), kindDuration, "how long a claimed task stays this runner's without a heartbeat (renewed every third of it); a runner that dies loses its tasks to the others this long after its last heartbeat. At least 1s"},
	{"workers", "", kindInt, "tasks run at once (default: number of CPUs)"},
	{"queues", "", kindList, "queues to work, with optional per-queue concurrency: default,slow=2 (default: all queues)"},
	{"tenant_weights", "", kindList, "tenants' weights in fair claims, written to the store when runner serve starts: acme=3,beta=2 (1 to 1000; others keep what the store holds, 1 by default; see runner tenants --help)"},
	{"tenant_max_running", "", kindList, "the most tasks of a tenant running at once (claimed ones count) across every runner of the store, written to the store when runner serve starts: acme=10 (0: no limit; see runner tenants --help)"},
	{"retention", "0", kindDuration, "runner serve deletes tasks that ended (succeeded, dead, cancelled) longer ago than this, hourly (0: keeps them all)"},
	{"max_compiled_modules", fmt.Sprint(sandbox.DefaultMaxModules), kindInt, "compiled modules kept in memory; past it the least recently used is dropped (-1: no limit)"},
	{"max_compiled_module_bytes", bytesize.Format(sandbox.DefaultMaxModuleBytes), kindSize, "estimated memory the compiled modules kept may hold; past it the least recently used is dropped (0: no limit)"},
	{"sandbox.compile_timeout", shortdur.Format(sandbox.DefaultCompileTimeout), kindDuration, "compile budget: a module whose compilation takes longer is refused (invalid_module) until its compilation, which goes on in the background, ends; a queued task is retried this long after (its attempt counted), so that a budget passed on a loaded machine costs an attempt, not the task; compiling is not the attempt: the attempt's timeout counts from the guest's start"},
	{"sandbox.stop_watchdog", shortdur.Format(sandbox.DefaultStopWatchdog), kindDuration, "a guest still running this long after its forced stop is abandoned: recorded as timed_out or forced, its goroutine left running (counted); a module abandoned twice, over the runner's life, is refused until it restarts (unstoppable). Under shutdown.force_wait"},
	{"sandbox.interrupt", string(sandbox.InterruptChecks), kindString, "how a forced stop reaches a computing guest: checks (Stint's checks at loop headers and function entries, close-on-context-done off: a bounded amount of work between two calls out on every path, compute at near full speed) or wazero (wazero's close-on-context-done at every loop iteration, plus Stint's checks at function entries: tight loops tens of times slower). Both end every guest"},
	{"sandbox.cache_dir", "", kindString, "the compilation cache's directory for every command (created 0700); empty: the user's cache directory (stint under $XDG_CACHE_HOME, ~/.cache by default) unless data_dir is set, then data_dir/cache (see runner cache --help)"},
	{"sandbox.user_cache", "on", kindString, "on: with sandbox.cache_dir and data_dir unset, every command keeps compiled modules in the user's cache directory, so that run, call, batch and serve share them; off: data_dir/cache (runner run and runner call, which create nothing in a missing data_dir, then compile in memory each time)"},
	{"sandbox.cache_max_bytes", "2GiB", kindSize, "size cap of the compilation cache: past it the least recently used entries (by the later of a file's access and modification times) are deleted, when a command that compiles starts, and by runner cache prune (0: no cap)"},
	{"sandbox.module_limits", "", kindList, "module limits over their defaults, checked before compiling: max_br_table_targets=65536,max_block_depth=16384 (names in docs/security.md)"},
	{"snapshots.enabled", "false", kindString, "true: guests are made resumable (docs/sandbox.md, \"Suspend and resume\"; they run slower: docs/benchmarks.md) so that none loses its work, whoever wrote it: a drain suspends a running task instead of forcing it, an attempt timeout suspends it, a snapshot is stored every snapshots.every, and the next attempt, on any runner, resumes where it stopped. Tasks with a writable mount are not suspended"},
	{"snapshots.every", "30s", kindDuration, "with snapshots.enabled, how often (of a task's run time) its snapshot is stored while it runs: a runner killed (SIGKILL, out of memory, power loss) costs a task at most this much (0: only drains and timeouts store one)"},
	{"snapshots.lost_limit", fmt.Sprint(tasks.DefaultLostLimit), kindInt, "a task whose attempts are lost this many times in a row without progress (its runners died while running it, no snapshot or checkpoint stored between) is dead, so that a task that kills its runner is not retried for ever; lost attempts are not counted against max_attempts"},
	{"schedules.max", fmt.Sprint(tasks.DefaultMaxSchedules), kindInt, "how many schedules the store holds at most: adding one more is refused until one is removed (-1: no limit); every runner looks at each schedule when its period starts"},
	{"limits.snapshot", bytesize.Format(pool.DefaultMaxSnapshot), kindSize, "the largest snapshot stored (encoded, compressed); a larger one is not stored, and the log says so"},
	{"http.addr", server.DefaultAddr, kindString, "API listener address (empty: no HTTP)"},
	{"http.token", "", kindString, "bearer token the API requires (empty: none, allowed only when http.addr is loopback)"},
	{"http.max_inflight_bytes", bytesize.Format(server.DefaultMaxInflightBytes), kindSize, "bytes that API requests in flight may hold (bodies, stored inputs and results being sent); past it a request gets 503"},
	{"http.max_concurrent", fmt.Sprint(server.DefaultMaxConcurrent), kindInt, "API requests served at once; past it a request gets 503"},
	{"http.max_connections", fmt.Sprint(server.DefaultMaxConnections), kindInt, "connections open at once, idle ones included; past it new ones wait in the kernel's backlog until one closes (bounds the descriptors clients can take)"},
	{"http.metrics_public", "false", kindString, "true: /metrics answers every address without the token (a scraper that cannot send it); false: with http.token set, only requests from loopback go without it, others need the bearer token"},
	{"http.session_idle", shortdur.Format(server.DefaultSessionIdle), kindDuration, "a dashboard session (its cookie) ends after this long without a request"},
	{"http.session_max", shortdur.Format(server.DefaultSessionMax), kindDuration, "a dashboard session ends this long after its sign-in, however busy (POST /v1/sessions/revoke, or a restart, ends them all at once)"},
	{"shutdown.budget", shortdur.Format(shutdown.DefaultBudget), kindDuration, "total time a graceful stop may take (keep it under the orchestrator's grace period)"},
	{"shutdown.drain", shortdur.Format(shutdown.DefaultDrain), kindDuration, "phase 2: how long running tasks may finish normally"},
	{"shutdown.cancel", shortdur.Format(shutdown.DefaultCancel), kindDuration, "phase 3: how long guests have to checkpoint and exit after stop_requested"},
	{"shutdown.force_wait", shortdur.Format(shutdown.DefaultForceWait), kindDuration, "phase 4: how long forced tasks have to be recorded"},
	{"shutdown.hook_timeout", shortdur.Format(shutdown.DefaultHookTimeout), kindDuration, "phase 5: default timeout of each cleanup hook"},
	{"shutdown.hooks", "", kindList, "per-hook timeouts, overriding hook_timeout: http=5s,workers=3s,sandbox=1s,store=2s,logs=1s"},
	{"limits.memory", bytesize.Format(sandbox.DefaultLimits().MemoryBytes), kindSize, "default memory limit of a task"},
	{"limits.timeout", shortdur.Format(sandbox.DefaultLimits().Timeout), kindDuration, "default timeout of one attempt"},
	{"limits.grace", shortdur.Format(sandbox.DefaultLimits().Grace), kindDuration, "how long before the attempt timeout the guest is asked to stop (0: a tenth of the timeout, at most 5s)"},
	{"limits.stdout", bytesize.Format(sandbox.DefaultLimits().MaxStdout), kindSize, "default cap on a task's stdout"},
	{"limits.stderr", bytesize.Format(sandbox.DefaultLimits().MaxStderr), kindSize, "default cap on a task's stderr"},
	{"limits.checkpoint", bytesize.Format(sandbox.DefaultLimits().MaxCheckpoint), kindSize, "default cap on one checkpoint"},
	{"limits.disk", bytesize.Format(sandbox.DefaultLimits().MaxDiskBytes), kindSize, "default disk budget of a task's writable mounts, all together, per attempt: bytes written or added to files (a sparse file's hole counts at its size); past it the guest gets ENOSPC"},
	{"limits.disk_files", fmt.Sprint(sandbox.DefaultLimits().MaxDiskFiles), kindInt, "default number of files, directories, symlinks and links a task may create in its writable mounts per attempt; past it the guest gets ENOSPC"},
	{"limits.work", fmt.Sprint(sandbox.DefaultLimits().Work), kindInt, "default work budget of one attempt, in work units (the work_units each attempt reports; not instructions): past it the guest ends with outcome work_limit, at the same point for the same module and input (0: none). Needs sandbox.interrupt=checks"},
	{"limits.max_memory", "1GiB", kindSize, "the most memory a task may ask for"},
	{"limits.compile_memory", bytesize.Format(sandbox.DefaultCompileMemory), kindSize, "the memory compiling modules may take, estimated before compiling from each module's functions and instructions: a module estimated over it is refused (invalid_module, naming the estimate); compilations run two at a time while their estimates fit within it together (0: no limit). A large program (the Go compiler, a 30 MB C++ program) needs about 2GiB; its refusal names its estimate"},
	{"limits.max_timeout", "1h", kindDuration, "the longest attempt timeout a task may ask for"},
	{"limits.max_stdout", "64MiB", kindSize, "the largest stdout cap a task may ask for (the runner holds a task's stdout in memory)"},
	{"limits.max_stderr", "16MiB", kindSize, "the largest stderr cap a task may ask for"},
	{"limits.max_checkpoint", "64MiB", kindSize, "the largest checkpoint cap a task may ask for"},
	{"limits.max_disk", "16GiB", kindSize, "the largest disk budget a task may ask for"},
	{"limits.max_disk_files", "1000000", kindInt, "the most files a task may ask to create"},
	{"limits.max_input", "64MiB", kindSize, "the largest input a queued task may carry (the store keeps it, the runner holds it in memory while the task runs)"},
	{"limits.max_args", fmt.Sprint(tasks.MaxCaps.Args), kindInt, "the most arguments a task may carry (every store refuses more)"},
	{"limits.max_args_bytes", bytesize.Format(tasks.MaxCaps.ArgsBytes), kindSize, "the most bytes a task's arguments may hold in all (every store refuses more)"},
	{"limits.max_env", fmt.Sprint(tasks.MaxCaps.Env), kindInt, "the most environment variables a task may carry (every store refuses more)"},
	{"limits.max_env_bytes", bytesize.Format(tasks.MaxCaps.EnvBytes), kindSize, "the most bytes a task's environment may hold in all, each variable counted as NAME=value (every store refuses more)"},
	{"limits.max_queue", fmt.Sprint(tasks.MaxCaps.Queue), kindInt, "the longest queue name a task may name, in bytes (every store refuses longer)"},
	{"limits.max_idempotency_key", fmt.Sprint(tasks.MaxCaps.IdempotencyKey), kindInt, "the longest idempotency key a task may carry, in bytes (every store refuses longer)"},
	{"limits.max_mounts", fmt.Sprint(tasks.MaxCaps.Mounts), kindInt, "the most mounts a task may ask for (every store refuses more)"},
	{"mounts.allow", "", kindList, "host directories queued tasks may mount, symlinks resolved; the runner that runs a task checks it again (comma-separated; empty: none)"},
	{"log.level", "info", kindString, "debug, info, warn or error"},
	{"log.format", "", kindString, "console or json (default: console on a terminal, json otherwise)"},
}

func flagName(key string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(key)
}

func envName(key string) string {
	return "RUNNER_" + strings.ToUpper(strings.NewReplacer(".", "_").Replace(key))
}

// Config is the runner's effective configuration.
type Config struct {
	DataDir string
	// DataDirSet reports that data_dir was set (flag, env or file), not
	// its default: the compilation cache then lives in it (cache.go).
	DataDirSet bool
	Store      string
	// StoreSync is storeurl.Options.Sync (store_sync): normal or full.
	StoreSync string
	// MaxSchedules is storeurl.Options.MaxSchedules (schedules.max).
	MaxSchedules int
	// StoreWait is stint.Config.StoreWait (store_wait), for runner serve.
	StoreWait time.Duration
	// Owner is the owner key (empty: derived, see owner()).
	Owner   string
	Workers int
	// Lease is pool.Config.Lease: how long a claim holds without a
	// heartbeat.
	Lease time.Duration
	// Retention is how long runner serve keeps tasks after they end (0:
	// for ever).
	Retention time.Duration
	// MaxCompiledModules is sandbox.Config.MaxModules (-1: no limit).
	MaxCompiledModules int
	// MaxCompiledModuleBytes is sandbox.Config.MaxModuleBytes (-1: no
	// limit, from 0 in the configuration).
	MaxCompiledModuleBytes int64
	Queues                 map[string]int
	// TenantWeights and TenantMaxRunning are written to the store when
	// runner serve starts (tenant_weights, tenant_max_running).
	TenantWeights, TenantMaxRunning map[string]int
	HTTPAddr                        string
	HTTPToken                       string
	// HTTPMaxInflightBytes and HTTPMaxConcurrent are server.Config's
	// MaxInflightBytes and MaxConcurrent.
	HTTPMaxInflightBytes int64
	HTTPMaxConcurrent    int
	// HTTPMaxConnections is server.Config's MaxConnections.
	HTTPMaxConnections int
	// HTTPMetricsPublic, HTTPSessionIdle and HTTPSessionMax are
	// server.Config's MetricsPublic, SessionIdle and SessionMax.
	HTTPMetricsPublic               bool
	HTTPSessionIdle, HTTPSessionMax time.Duration
	Shutdown                        struct {
		Budget, Drain, Cancel, ForceWait, HookTimeout time.Duration
		Hooks                                         map[string]time.Duration
	}
	// Limits are a task's default limits (limits.memory, limits.timeout,
	// limits.stdout, limits.stderr, limits.checkpoint), in the task
	// model's shape, bytes for memory; Grace is limits.grace.
	Limits tasks.Limits
	Grace  time.Duration
	// Policy is what a task may ask for (tasks.CheckSpec): Policy.Max the
	// limits.max_* keys of the limits, Policy.MaxInput limits.max_input,
	// Policy.Caps limits.max_args, _args_bytes, _env, _env_bytes, _queue,
	// _idempotency_key and _mounts, Policy.MountsAllow mounts.allow.
	Policy    tasks.Policy
	LogLevel  string
	LogFormat string
	// Snapshots are the snapshots.* keys and limits.snapshot
	// (pool.Config's SnapshotEvery, LostLimit and MaxSnapshot; Enabled is
	// sandbox.Config.Resumable).
	Snapshots struct {
		Enabled   bool
		Every     time.Duration
		LostLimit int
		MaxBytes  int64
	}
	// Sandbox holds sandbox.Config's compile budget and stop watchdog.
	Sandbox struct {
		CompileTimeout, StopWatchdog time.Duration
		// CompileMemory is sandbox.Config.CompileMemory
		// (limits.compile_memory; -1: no limit, from 0).
		CompileMemory int64
		// ModuleLimits holds the limits sandbox.module_limits sets; zero
		// fields take sandbox.DefaultModuleLimits().
		ModuleLimits sandbox.ModuleLimits
		// Interrupt is sandbox.Config.Interrupt (sandbox.interrupt).
		Interrupt sandbox.InterruptMode
		// CacheDir (sandbox.cache_dir) is the compilation cache of every
		// command; "": chosen by compileCacheDir (cache.go).
		CacheDir string
		// UserCache (sandbox.user_cache) lets commands use the user's
		// cache directory when data_dir is not set (cache.go).
		UserCache bool
		// CacheMaxBytes (sandbox.cache_max_bytes) caps the compilation
		// cache (0: no cap).
		CacheMaxBytes int64
	}
}

// newViper builds the one explicit viper instance: defaults, then the
// file (--config or RUNNER_CONFIG), then RUNNER_* env, then flags.
func newViper(flags *pflag.FlagSet, configFile string) (*viper.Viper, error) {
	v := viper.New()
	// An empty RUNNER_* variable is a value (RUNNER_HTTP_ADDR= means no
	// HTTP), not "unset": the key's own rules say what empty means.
	v.AllowEmptyEnv(true)
	for _, k := range configKeys {
		v.SetDefault(k.name, k.def)
		if err := v.BindEnv(k.name, envName(k.name)); err != nil {
			return nil, err
		}
		if f := flags.Lookup(flagName(k.name)); f != nil {
			if err := v.BindPFlag(k.name, f); err != nil {
				return nil, err
			}
		}
	}
	if configFile == "" {
		configFile = os.Getenv("RUNNER_CONFIG")
	}
	if configFile != "" {
		v.SetConfigFile(configFile)
		if err := v.ReadInConfig(); err != nil {
			return nil, usageErrorf("config file %s: %v", configFile, err)
		}
		known := map[string]bool{}
		for _, k := range configKeys {
			known[k.name] = true
		}
		for _, k := range v.AllKeys() {
			if !known[k] && v.InConfig(k) {
				return nil, usageErrorf("config file %s: unknown key %q (see `runner config` for the keys)", configFile, k)
			}
		}
	}
	return v, nil
}

// source tells where a key's effective value came from.
func source(v *viper.Viper, flags *pflag.FlagSet, key string) string {
	if f := flags.Lookup(flagName(key)); f != nil && f.Changed {
		return "flag --" + flagName(key)
	}
	if _, ok := os.LookupEnv(envName(key)); ok {
		return "env " + envName(key)
	}
	if v.InConfig(key) {
		return "file " + v.ConfigFileUsed()
	}
	return "default"
}

// loadConfig parses and validates every key.
func loadConfig(v *viper.Viper) (*Config, error) {
	c := &Config{}
	var errs []error
	str := func(k string) string { return strings.TrimSpace(v.GetString(k)) }
	dur := func(k string) time.Duration {
		d, err := parseDuration(str(k))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		} else if d < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %s", k, d))
		}
		return d
	}
	size := func(k string) int64 {
		n, err := parseSize(str(k))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
		return n
	}
	count := func(k string) int64 {
		var n int
		if m := str(k); !isInt(m, &n) || n < 0 {
			errs = append(errs, fmt.Errorf("%s: want a number, 0 or more, got %q", k, m))
		}
		return int64(n)
	}
	c.DataDir = str("data_dir")
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir: must not be empty"))
	}
	c.Store = str("store")
	switch c.StoreSync = str("store_sync"); c.StoreSync {
	case "normal", "full":
	default:
		errs = append(errs, fmt.Errorf("store_sync: want normal or full, got %q", c.StoreSync))
	}
	c.StoreWait = dur("store_wait")
	c.Owner = str("owner")
	c.Workers = runtime.NumCPU()
	if w := str("workers"); w != "" {
		if _, err := fmt.Sscanf(w, "%d", &c.Workers); err != nil || c.Workers < 1 || fmt.Sprint(c.Workers) != w {
			errs = append(errs, fmt.Errorf("workers: want a positive number, got %q", w))
		}
	}
	if m := str("max_compiled_modules"); !isInt(m, &c.MaxCompiledModules) || c.MaxCompiledModules < -1 || c.MaxCompiledModules == 0 {
		errs = append(errs, fmt.Errorf("max_compiled_modules: want a positive number, or -1 for no limit, got %q", m))
	}
	if c.MaxCompiledModuleBytes = size("max_compiled_module_bytes"); c.MaxCompiledModuleBytes == 0 {
		c.MaxCompiledModuleBytes = -1
	}
	c.Queues = map[string]int{}
	for _, q := range splitList(v.Get("queues")) {
		name, n := q, 0
		if i := strings.IndexByte(q, '='); i >= 0 {
			name = q[:i]
			if _, err := fmt.Sscanf(q[i+1:], "%d", &n); err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("queues: %q: want name or name=N with N >= 1", q))
			}
		}
		c.Queues[name] = n
	}
	var err error
	if c.TenantWeights, err = parseTenantNumbers("tenant_weights", splitList(v.Get("tenant_weights")), tasks.CheckTenantWeight); err != nil {
		errs = append(errs, err)
	}
	if c.TenantMaxRunning, err = parseTenantNumbers("tenant_max_running", splitList(v.Get("tenant_max_running")), tasks.CheckTenantMaxRunning); err != nil {
		errs = append(errs, err)
	}
	c.Retention = dur("retention")
	if c.Lease = dur("lease"); c.Lease >= 0 && c.Lease < time.Second {
		if _, err := parseDuration(str("lease")); err == nil {
			errs = append(errs, fmt.Errorf("lease: %s is too short: want at least 1s (the heartbeat renews it every third of it)", c.Lease))
		}
	}
	c.HTTPAddr, c.HTTPToken = str("http.addr"), str("http.token")
	if c.HTTPMaxInflightBytes = size("http.max_inflight_bytes"); c.HTTPMaxInflightBytes == 0 {
		if _, err := parseSize(str("http.max_inflight_bytes")); err == nil {
			errs = append(errs, errors.New("http.max_inflight_bytes: must not be 0 (no request could be served)"))
		}
	}
	if m := str("http.max_concurrent"); !isInt(m, &c.HTTPMaxConcurrent) || c.HTTPMaxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("http.max_concurrent: want a positive number, got %q", m))
	}
	if m := str("http.max_connections"); !isInt(m, &c.HTTPMaxConnections) || c.HTTPMaxConnections < 1 {
		errs = append(errs, fmt.Errorf("http.max_connections: want a positive number, got %q", m))
	}
	switch mp := str("http.metrics_public"); mp {
	case "true", "false":
		c.HTTPMetricsPublic = mp == "true"
	default:
		errs = append(errs, fmt.Errorf("http.metrics_public: want true or false, got %q", mp))
	}
	switch se := str("snapshots.enabled"); se {
	case "true", "false":
		c.Snapshots.Enabled = se == "true"
	default:
		errs = append(errs, fmt.Errorf("snapshots.enabled: want true or false, got %q", se))
	}
	c.Snapshots.Every = dur("snapshots.every")
	if m := str("schedules.max"); !isInt(m, &c.MaxSchedules) || c.MaxSchedules == 0 || c.MaxSchedules < -1 {
		errs = append(errs, fmt.Errorf("schedules.max: want a positive number, or -1 for no limit, got %q", m))
	}
	if m := str("snapshots.lost_limit"); !isInt(m, &c.Snapshots.LostLimit) || c.Snapshots.LostLimit < 1 {
		errs = append(errs, fmt.Errorf("snapshots.lost_limit: want a positive number, got %q", m))
	}
	if c.Snapshots.MaxBytes = size("limits.snapshot"); c.Snapshots.MaxBytes == 0 {
		if _, err := parseSize(str("limits.snapshot")); err == nil {
			errs = append(errs, errors.New("limits.snapshot: must not be 0 (no snapshot could be stored; set snapshots.enabled=false instead)"))
		}
	} else if c.Snapshots.MaxBytes > sqlite.MaxSnapshot {
		// Both stores' cap (tasks/postgres' MaxSnapshot is the same).
		errs = append(errs, fmt.Errorf("limits.snapshot: %s is over %d bytes, the largest snapshot a store takes",
			str("limits.snapshot"), sqlite.MaxSnapshot))
	}
	c.HTTPSessionIdle, c.HTTPSessionMax = dur("http.session_idle"), dur("http.session_max")
	for k, d := range map[string]time.Duration{"http.session_idle": c.HTTPSessionIdle, "http.session_max": c.HTTPSessionMax} {
		if _, err := parseDuration(str(k)); err == nil && d == 0 {
			errs = append(errs, fmt.Errorf("%s: must not be 0 (every session would end at once)", k))
		}
	}
	c.Shutdown.Budget, c.Shutdown.Drain = dur("shutdown.budget"), dur("shutdown.drain")
	c.Shutdown.Cancel, c.Shutdown.HookTimeout = dur("shutdown.cancel"), dur("shutdown.hook_timeout")
	c.Shutdown.ForceWait = dur("shutdown.force_wait")
	c.Sandbox.CompileTimeout, c.Sandbox.StopWatchdog = dur("sandbox.compile_timeout"), dur("sandbox.stop_watchdog")
	switch uc := str("sandbox.user_cache"); uc {
	case "on", "off":
		c.Sandbox.UserCache = uc == "on"
	default:
		errs = append(errs, fmt.Errorf("sandbox.user_cache: want on or off, got %q", uc))
	}
	c.Sandbox.CacheMaxBytes = size("sandbox.cache_max_bytes")
	c.Sandbox.CacheDir = str("sandbox.cache_dir")
	if c.Sandbox.CompileMemory = size("limits.compile_memory"); c.Sandbox.CompileMemory == 0 {
		c.Sandbox.CompileMemory = -1
	}
	for _, k := range []struct {
		name string
		d    time.Duration
	}{{"sandbox.compile_timeout", c.Sandbox.CompileTimeout}, {"sandbox.stop_watchdog", c.Sandbox.StopWatchdog}} {
		if k.d == 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", k.name))
		}
	}
	if c.Sandbox.StopWatchdog >= c.Shutdown.ForceWait && c.Shutdown.ForceWait > 0 {
		errs = append(errs, fmt.Errorf("sandbox.stop_watchdog (%s) must be shorter than shutdown.force_wait (%s): the forced stop waits that long for abandoned attempts to be recorded",
			c.Sandbox.StopWatchdog, c.Shutdown.ForceWait))
	}
	if m, err := sandbox.ParseInterruptMode(str("sandbox.interrupt")); err != nil {
		errs = append(errs, fmt.Errorf("sandbox.interrupt: %q: want checks (the default) or wazero", str("sandbox.interrupt")))
	} else {
		c.Sandbox.Interrupt = m
	}
	for _, l := range splitList(v.Get("sandbox.module_limits")) {
		name, val, ok := strings.Cut(l, "=")
		n, err := parseSize(val)
		if ok && err == nil {
			err = c.Sandbox.ModuleLimits.SetByName(strings.TrimSpace(name), uint64(n))
		}
		if !ok || err != nil {
			errs = append(errs, fmt.Errorf("sandbox.module_limits: %q: want name=number with a name among %s", l, strings.Join(sandbox.ModuleLimitNames(), ", ")))
		}
	}
	if err := c.Sandbox.ModuleLimits.WithDefaults().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sandbox.module_limits: %w", err))
	}
	c.Shutdown.Hooks = map[string]time.Duration{}
	for _, h := range splitList(v.Get("shutdown.hooks")) {
		name, val, ok := strings.Cut(h, "=")
		d, err := parseDuration(val)
		if !ok || !knownHooks[name] || err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("shutdown.hooks: %q: want name=duration with a name among http, workers, sandbox, store, logs", h))
			continue
		}
		c.Shutdown.Hooks[name] = d
	}
	c.Limits = tasks.Limits{MemoryBytes: size("limits.memory"), Timeout: dur("limits.timeout"),
		Stdout: size("limits.stdout"), Stderr: size("limits.stderr"), Checkpoint: size("limits.checkpoint"),
		DiskBytes: size("limits.disk"), DiskFiles: count("limits.disk_files"), Work: count("limits.work")}
	if c.Limits.Work > 0 && c.Sandbox.Interrupt == sandbox.InterruptWazero {
		errs = append(errs, errors.New("limits.work: a work budget needs sandbox.interrupt=checks (in wazero mode loops are not counted)"))
	}
	c.Grace = dur("limits.grace")
	c.Policy.Max = tasks.Limits{MemoryBytes: size("limits.max_memory"), Timeout: dur("limits.max_timeout"),
		Stdout: size("limits.max_stdout"), Stderr: size("limits.max_stderr"), Checkpoint: size("limits.max_checkpoint"),
		DiskBytes: size("limits.max_disk"), DiskFiles: count("limits.max_disk_files")}
	c.Policy.MaxInput = size("limits.max_input")
	c.Policy.Caps = loadCaps(size, count, &errs)
	if c.Policy.Max.MemoryBytes > sandbox.MaxMemoryBytes {
		errs = append(errs, fmt.Errorf("limits.max_memory (%s) is over the wasm32 maximum of %s", bytesize.Format(c.Policy.Max.MemoryBytes), bytesize.Format(sandbox.MaxMemoryBytes)))
	}
	// The defaults must fit the maxima; the errors name both keys.
	for _, l := range []struct {
		name     string
		def, max int64
		format   func(int64) string
	}{
		{"memory", c.Limits.MemoryBytes, c.Policy.Max.MemoryBytes, bytesize.Format},
		{"timeout", int64(c.Limits.Timeout), int64(c.Policy.Max.Timeout), func(n int64) string { return time.Duration(n).String() }},
		{"stdout", c.Limits.Stdout, c.Policy.Max.Stdout, bytesize.Format},
		{"stderr", c.Limits.Stderr, c.Policy.Max.Stderr, bytesize.Format},
		{"checkpoint", c.Limits.Checkpoint, c.Policy.Max.Checkpoint, bytesize.Format},
		{"disk", c.Limits.DiskBytes, c.Policy.Max.DiskBytes, bytesize.Format},
		{"disk_files", c.Limits.DiskFiles, c.Policy.Max.DiskFiles, func(n int64) string { return fmt.Sprint(n) }},
	} {
		if l.def > l.max {
			errs = append(errs, fmt.Errorf("limits.%s (%s) is over limits.max_%s (%s)", l.name, l.format(l.def), l.name, l.format(l.max)))
		}
	}
	for _, m := range splitList(v.Get("mounts.allow")) {
		abs, err := filepath.Abs(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("mounts.allow: %q: %w", m, err))
			continue
		}
		c.Policy.MountsAllow = append(c.Policy.MountsAllow, abs)
	}
	c.LogLevel, c.LogFormat = str("log.level"), str("log.format")
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level: want debug, info, warn or error, got %q", c.LogLevel))
	}
	switch c.LogFormat {
	case "", "console", "json":
	default:
		errs = append(errs, fmt.Errorf("log.format: want console or json, got %q", c.LogFormat))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("invalid configuration:\n%w", err)}
	}
	return c, nil
}

// loadCaps reads the limits.max_* keys of tasks.Caps: each from 1 to its
// value in tasks.MaxCaps, which every store enforces anyway.
func loadCaps(size, count func(string) int64, errs *[]error) tasks.Caps {
	var c tasks.Caps
	m := tasks.MaxCaps
	for _, k := range []struct {
		name  string
		get   func(string) int64
		v     *int64
		max   int64
		bytes bool
	}{
		{"limits.max_args", count, &c.Args, m.Args, false},
		{"limits.max_args_bytes", size, &c.ArgsBytes, m.ArgsBytes, true},
		{"limits.max_env", count, &c.Env, m.Env, false},
		{"limits.max_env_bytes", size, &c.EnvBytes, m.EnvBytes, true},
		{"limits.max_queue", count, &c.Queue, m.Queue, false},
		{"limits.max_idempotency_key", count, &c.IdempotencyKey, m.IdempotencyKey, false},
		{"limits.max_mounts", count, &c.Mounts, m.Mounts, false},
	} {
		before := len(*errs)
		if *k.v = k.get(k.name); len(*errs) > before {
			continue // not a number: reported
		}
		f := func(n int64) string { return fmt.Sprint(n) }
		if k.bytes {
			f = bytesize.Format
		}
		if *k.v < 1 || *k.v > k.max {
			*errs = append(*errs, fmt.Errorf("%s: %s is out of range: want 1 to %s (the most any store takes)", k.name, f(*k.v), f(k.max)))
		}
	}
	return c
}

// isInt parses s, in its canonical decimal form, into n.
func isInt(s string, n *int) bool {
	_, err := fmt.Sscanf(s, "%d", n)
	return err == nil && fmt.Sprint(*n) == s
}

// knownHooks are the cleanup hooks of `runner serve`, by name.
var knownHooks = map[string]bool{"http": true, "workers": true, "sandbox": true, "store": true, "logs": true}

// splitList accepts a YAML list or a comma-separated string.
func splitList(v any) []string {
	var parts []string
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			parts = append(parts, fmt.Sprint(x))
		}
	case []string:
		parts = t
	case string:
		parts = strings.Split(t, ",")
	}
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// storeURL is the store's URL (package storeurl): the store key, or the
// SQLite file in data_dir.
func (c *Config) storeURL() string {
	if c.Store != "" {
		return c.Store
	}
	return filepath.Join(c.DataDir, "stint.db")
}

// owner is the runner's lease owner id: the owner key, or the host name
// and a hash of the absolute data directory, so that the same runner
// (host and data_dir) has the same id after a restart, and two runners
// with different data directories on one host differ.
func (c *Config) owner() string {
	if c.Owner != "" {
		return c.Owner
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "runner"
	}
	dir, err := filepath.Abs(c.DataDir)
	if err != nil {
		dir = c.DataDir
	}
	sum := sha256.Sum256([]byte(dir))
	return host + "-" + hex.EncodeToString(sum[:4])
}

// cacheDir is wazero's compilation cache.
func (c *Config) cacheDir() string { return filepath.Join(c.DataDir, "cache") }
