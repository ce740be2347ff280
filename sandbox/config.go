package sandbox

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// PageSize is the size of one WebAssembly memory page.
const PageSize = 64 * 1024

// MaxMemoryBytes is the most memory a wasm32 guest can address (65,536
// pages, 4 GiB): Config.MaxMemoryBytes' default and ceiling.
const MaxMemoryBytes int64 = 65536 * PageSize

// Config configures a Runtime. The zero value works: WithDefaults fills it.
type Config struct {
	// CacheDir is the on-disk compilation cache; "" keeps compiled code in
	// memory only (every process start compiles again).
	CacheDir string
	// MaxMemoryBytes is the memory ceiling no task may exceed
	// (limits.max_memory), in bytes (rounded down to whole 64 KiB pages).
	// A module whose declared minimum is over it fails to compile.
	// Default MaxMemoryBytes (4 GiB, the wasm32 maximum).
	MaxMemoryBytes int64
	// Defaults are the limits of a task that leaves a field at zero.
	// Default: see DefaultLimits.
	Defaults Limits
	// CompilationWorkers compiles a module's functions in parallel.
	// Default: 2.
	CompilationWorkers int
	// DebugInfo keeps DWARF-based source lines in trap stack traces; it
	// makes a forced stop of a guest with DWARF slower (about 2 ms against
	// 0.2 ms). Default false.
	DebugInfo bool
	// MaxModules is how many compiled modules the registry keeps. Past it,
	// compiling a new module drops the least recently used one from the
	// registry; its machine code is released once no caller holds its
	// *Module (a later task compiles it again, from the on-disk cache if
	// there is one). Default DefaultMaxModules; negative: no limit.
	MaxModules int
	// MaxModuleBytes bounds the registry in bytes as well: the estimated
	// memory of the compiled modules it keeps (Module.MemoryEstimate:
	// machine code, wazero's structures, memory images). Past it,
	// compiling a new module drops the least recently used others as
	// MaxModules does; the module just compiled stays, even alone over
	// it. Default DefaultMaxModuleBytes; negative: no limit.
	MaxModuleBytes int64
	// CompileTimeout is the compile budget (sandbox.compile_timeout): a
	// module whose compilation takes longer is refused for good as
	// KindInvalidModule, and later compiles of the same bytes fail at once.
	// wazero cannot stop a compilation: past the budget it goes on in the
	// background (Stats.CompilingAbandoned) and its result is dropped.
	// Default DefaultCompileTimeout (60s); a Go guest takes 1.5-3 s.
	CompileTimeout time.Duration
	// StopWatchdog is the last line of the forced stop
	// (sandbox.stop_watchdog): a run whose guest has not returned this long
	// after its hard context ended is abandoned. Run's caller is told at
	// once (Spec.OnAbandon, RunBounded; Plugin.Call returns) with a
	// KindTimedOut or KindForced outcome, the guest's goroutine is left
	// running (Stats.Stray) and the module gets a strike. Strikes count
	// over the Runtime's life, also those of strays that ended since: at
	// the second the run is KindUnstoppable and the module is refused for
	// good (every later Run, Call, Compile or LoadPlugin of it). A forced stop
	// takes microseconds to a few milliseconds; keep the watchdog under
	// the shutdown's force wait. Default DefaultStopWatchdog (500ms);
	// negative: no watchdog.
	StopWatchdog time.Duration
	// Interrupt says how a forced stop reaches a computing guest:
	// InterruptChecks (Stint's checks at loop headers and function
	// entries, close-on-context-done off) or InterruptWazero
	// (close-on-context-done, plus Stint's checks at function entries:
	// tight loops tens of times slower, docs/benchmarks.md section 4).
	// Both end every guest. Default InterruptChecks.
	Interrupt InterruptMode
	// ModuleLimits bound what a module may declare; a module over one is
	// refused before it is compiled. Default: see DefaultModuleLimits.
	ModuleLimits ModuleLimits
	// HostModules are the embedder's host functions (hostfunc.go): a task
	// may import any of them, a plugin those its Manifest grants. None by
	// default.
	HostModules []HostModuleDef
	// Logger receives the runtime's logs. Default: zap.NewNop().
	Logger *zap.Logger
}

// DefaultMaxModules is Config.MaxModules' default. A compiled Go guest
// takes about 10 MB, a small C or Rust module far less.
const DefaultMaxModules = 64

// DefaultMaxModuleBytes is Config.MaxModuleBytes' default: 1 GiB, which
// holds DefaultMaxModules Go guests (about 13 MB each, estimated) and
// about 16 modules of the most functions DefaultModuleLimits allows.
const DefaultMaxModuleBytes = 1 << 30

// DefaultLimits returns the per-task limits used when neither the task nor
// the Config says otherwise (the limits.* keys of docs/configuration.md).
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes:   64 << 20,
		Timeout:       time.Minute,
		MaxStdout:     1 << 20,
		MaxStderr:     64 << 10,
		MaxCheckpoint: 1 << 20,
		MaxDiskBytes:  1 << 30,
		MaxDiskFiles:  10_000,
	}
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.MaxMemoryBytes == 0 {
		c.MaxMemoryBytes = MaxMemoryBytes
	}
	c.Defaults = c.Defaults.Or(DefaultLimits())
	if c.CompilationWorkers == 0 {
		c.CompilationWorkers = 2
	}
	if c.MaxModules == 0 {
		c.MaxModules = DefaultMaxModules
	}
	if c.MaxModuleBytes == 0 {
		c.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if c.CompileTimeout == 0 {
		c.CompileTimeout = DefaultCompileTimeout
	}
	if c.StopWatchdog == 0 {
		c.StopWatchdog = DefaultStopWatchdog
	}
	if c.Interrupt == "" {
		c.Interrupt = InterruptChecks
	}
	c.ModuleLimits = c.ModuleLimits.WithDefaults()
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.MaxMemoryBytes > MaxMemoryBytes || c.MaxMemoryBytes < 0 {
		errs = append(errs, fmt.Errorf("sandbox: max memory of %d bytes is negative or over the wasm32 maximum of 4 GiB", c.MaxMemoryBytes))
	}
	if c.Defaults.MemoryBytes > c.MaxMemoryBytes && c.MaxMemoryBytes > 0 {
		errs = append(errs, fmt.Errorf("sandbox: default memory limit of %d bytes is over the maximum of %d bytes", c.Defaults.MemoryBytes, c.MaxMemoryBytes))
	}
	if err := c.Defaults.Validate(); err != nil {
		errs = append(errs, err)
	}
	if m, err := ParseInterruptMode(string(c.Interrupt)); err != nil {
		errs = append(errs, err)
	} else if c.Defaults.Work > 0 && !m.loopChecks() {
		errs = append(errs, fmt.Errorf("sandbox: %w", ErrWorkNeedsChecks))
	}
	if err := c.ModuleLimits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateHostModules(c.HostModules); err != nil {
		errs = append(errs, err)
	}
	if c.CompilationWorkers < 0 {
		errs = append(errs, fmt.Errorf("sandbox: compilation workers must not be negative, got %d", c.CompilationWorkers))
	}
	if c.CompileTimeout < 0 {
		errs = append(errs, fmt.Errorf("sandbox: compile timeout must not be negative, got %s", c.CompileTimeout))
	}
	return errors.Join(errs...)
}

// Limits bound one run. A zero field means "the runtime's default".
type Limits struct {
	// MemoryBytes caps the guest's linear memory, in bytes (rounded up to
	// whole 64 KiB pages). A guest that grows past it sees memory.grow
	// fail; the outcome is KindMemoryLimit if it then dies.
	MemoryBytes int64
	// Timeout is the attempt's wall-clock budget; the guest is forced at
	// Timeout. A negative Timeout means none.
	Timeout time.Duration
	// Grace is how long before Timeout the guest is asked to stop
	// (stop_requested = 1) so it can save a checkpoint. Default: a tenth of
	// Timeout, at most 5s.
	Grace time.Duration
	// MaxStdout, MaxStderr and MaxCheckpoint cap bytes written to stdout,
	// stderr and one checkpoint. Output over a cap ends the task with
	// KindOutputLimit; it is never silently cut. A checkpoint over its cap
	// is refused (checkpoint_save returns -1).
	MaxStdout, MaxStderr, MaxCheckpoint int64
	// MaxDiskBytes and MaxDiskFiles are the disk budget of the run's
	// writable mounts, all of them together: the bytes the guest may write
	// or add to files (a sparse file's hole counts at its size), and the
	// files, directories, symlinks and links it may create (mountfs.Budget
	// says exactly what counts). Past either, the call fails with ENOSPC
	// and does nothing; the run goes on. Deleting gives nothing back.
	// Negative: no budget.
	MaxDiskBytes, MaxDiskFiles int64
	// Work is the run's work budget, in work units (Outcome.WorkUnits,
	// work.go): past it, the guest is ended at its next interrupt call
	// (within about 65,536 units) with KindWorkLimit. Deterministic, like
	// wasmtime's fuel: the same module and input end at the same point.
	// Zero: the runtime's default (none unless set); negative: none. Only
	// in InterruptChecks mode (Run refuses it in InterruptWazero mode:
	// ErrWorkNeedsChecks).
	Work int64
}

// Or returns l with every zero field taken from d.
func (l Limits) Or(d Limits) Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.Grace == 0 {
		l.Grace = d.Grace
	}
	if l.MaxStdout == 0 {
		l.MaxStdout = d.MaxStdout
	}
	if l.MaxStderr == 0 {
		l.MaxStderr = d.MaxStderr
	}
	if l.MaxCheckpoint == 0 {
		l.MaxCheckpoint = d.MaxCheckpoint
	}
	if l.MaxDiskBytes == 0 {
		l.MaxDiskBytes = d.MaxDiskBytes
	}
	if l.MaxDiskFiles == 0 {
		l.MaxDiskFiles = d.MaxDiskFiles
	}
	if l.Work == 0 {
		l.Work = d.Work
	}
	return l
}

// grace is the effective warning time before a forced deadline stop.
func (l Limits) grace() time.Duration {
	if l.Timeout <= 0 {
		return 0
	}
	g := l.Grace
	if g <= 0 {
		g = min(l.Timeout/10, 5*time.Second)
	}
	return min(g, l.Timeout)
}

// Validate reports negative limits.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"memory", l.MemoryBytes}, {"max stdout", l.MaxStdout}, {"max stderr", l.MaxStderr}, {"max checkpoint", l.MaxCheckpoint}, {"grace", int64(l.Grace)}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("sandbox: %s must not be negative, got %d", f.name, f.v))
		}
	}
	if l.MaxCheckpoint > 1<<31-1 {
		errs = append(errs, fmt.Errorf("sandbox: max checkpoint %d bytes is over 2 GiB", l.MaxCheckpoint))
	}
	return errors.Join(errs...)
}

// pagesFor returns the number of 64 KiB pages that hold n bytes (rounded
// up), at most 65536: wazero counts memory in pages.
func pagesFor(n int64) uint32 {
	if n <= 0 {
		return 0
	}
	return uint32(min((n+PageSize-1)/PageSize, 65536))
}
