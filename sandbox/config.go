package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Config configures a Runtime; a zero field takes its default.
type Config struct {
	CacheDir           string          // the on-disk compilation cache; "": memory only
	MaxMemoryBytes     int64           // the memory no task may exceed (limits.max_memory)
	Defaults           Limits          // the limits of a task that leaves a field at zero
	CompilationWorkers int             // compile a module's functions in parallel (2)
	DebugInfo          bool            // DWARF source lines in trap stack traces (slower forced stops)
	MaxModules         int             // compiled modules kept (DefaultMaxModules; negative: no limit)
	MaxModuleBytes     int64           // their estimated memory (DefaultMaxModuleBytes; negative: no limit)
	CompileTimeout     time.Duration   // the compile budget: a module over it is refused until its compilation ends
	CompileMemory      int64           // what compilations may take together, estimated; a module over it is refused (DefaultCompileMemory; negative: no limit)
	StopWatchdog       time.Duration   // a guest not returned this long after its forced stop is abandoned
	Interrupt          InterruptMode   // how a forced stop reaches a computing guest (InterruptChecks)
	Resumable          bool            // make modules resumable, so that a run can be suspended (Spec.Suspend) and resumed (Spec.Resume)
	ModuleLimits       ModuleLimits    // what a module may declare (DefaultModuleLimits)
	HostModules        []HostModuleDef // the embedder's host functions
	Logger             *zap.Logger     // the runtime's logs (zap.NewNop())
}

// Names, sizes, and the defaults of Config's fields (docs/configuration.md).
const (
	HostModule                  = "stint"                // the name of Stint's host module (docs/guest-abi.md)
	PageSize                    = 64 * 1024              // one WebAssembly memory page
	MaxMemoryBytes        int64 = 65536 * PageSize       // all a wasm32 guest addresses (4 GiB): Config.MaxMemoryBytes' default and ceiling
	DefaultMaxModules           = 64                     // Config.MaxModules
	DefaultMaxModuleBytes       = 1 << 30                // Config.MaxModuleBytes
	DefaultCompileTimeout       = 60 * time.Second       // Config.CompileTimeout
	DefaultCompileMemory  int64 = 1 << 30                // Config.CompileMemory
	DefaultStopWatchdog         = 500 * time.Millisecond // Config.StopWatchdog

	defaultCompilationWorkers = 2 // Config.CompilationWorkers
)

// DefaultLimits returns Config.Defaults' default (the limits.* keys).
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
		c.CompilationWorkers = defaultCompilationWorkers
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
	if c.CompileMemory == 0 {
		c.CompileMemory = DefaultCompileMemory
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
	if err := c.Defaults.validate(); err != nil {
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

// Limits bound one run; a zero field takes Config.Defaults'.
type Limits struct {
	MemoryBytes                         int64         // the guest's linear memory (KindMemoryLimit)
	Timeout                             time.Duration // the attempt's wall-clock budget (KindTimedOut); negative: none
	Grace                               time.Duration // how long before Timeout stop_requested returns 1
	MaxStdout, MaxStderr, MaxCheckpoint int64         // caps of stdout, stderr (KindOutputLimit) and one checkpoint
	MaxDiskBytes, MaxDiskFiles          int64         // the disk budget of the run's writable mounts (ENOSPC past it)
	Work                                int64         // the work budget, in work units (KindWorkLimit; checks mode only)
}

// Or returns l with every zero field taken from d.
func (l Limits) Or(d Limits) Limits {
	l.MemoryBytes = cmp.Or(l.MemoryBytes, d.MemoryBytes)
	l.Timeout = cmp.Or(l.Timeout, d.Timeout)
	l.Grace = cmp.Or(l.Grace, d.Grace)
	l.MaxStdout = cmp.Or(l.MaxStdout, d.MaxStdout)
	l.MaxStderr = cmp.Or(l.MaxStderr, d.MaxStderr)
	l.MaxCheckpoint = cmp.Or(l.MaxCheckpoint, d.MaxCheckpoint)
	l.MaxDiskBytes = cmp.Or(l.MaxDiskBytes, d.MaxDiskBytes)
	l.MaxDiskFiles = cmp.Or(l.MaxDiskFiles, d.MaxDiskFiles)
	l.Work = cmp.Or(l.Work, d.Work)
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

// validate reports negative limits (Config.Validate, Spec.Validate, Run).
func (l Limits) validate() error {
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
