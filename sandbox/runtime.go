package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/resume"
	"github.com/stint-run/stint/sandbox/internal/rewrite"
)

// Runtime compiles modules once and runs tasks in fresh instances; safe for
// concurrent use, one per process.
type Runtime struct {
	cfg   Config
	log   *zap.Logger
	rt    wazero.Runtime
	cache wazero.CompilationCache
	prep  *preparedCache // prepared modules on disk (preparedcache.go); nil without Config.CacheDir
	pool  memory.Pool
	slots sync.Pool // *ioSlot
	base  wazero.ModuleConfig

	rtConfig wazero.RuntimeConfig // rt's configuration, for the uncached fallback

	mu       sync.Mutex
	uncached wazero.Runtime // compiles without the cache when it fails; nil until then
	modules  map[string]*moduleEntry
	tick     uint64 // counts registry uses, for least-recently-used eviction
	closed   bool
	closing  atomic.Bool // closed, readable without mu (Run checks it)

	onRelease *atomic.Pointer[func()] // test hook: a compiled module was released

	compilations, evictions, cacheFailures atomic.Int64 // for Stats

	hosts hostRegistry // the embedder's host modules (Config.HostModules, hostfunc.go)

	comp   compileState // compilations running aside from their callers (compile.go)
	watch  watchState   // the stop watchdog (watchdog.go)
	guests guestWorkers // goroutines that run plugin calls' guests (guestworker.go)

	// rtReady is closed once rt is set, importsDone once its host modules
	// are instantiated: New does both on a goroutine of its own, while
	// the first module is read and prepared (and, for the host modules,
	// compiled). importsErr is then their error. See waitRuntime and
	// waitImports.
	rtReady, importsDone chan struct{}
	importsErr           error

	// hostMods and uncachedMods resolve guests' imports of the host
	// modules of rt and uncached without wazero's store lock
	// (hostresolve.go).
	hostMods, uncachedMods *hostModules
}

// Module is a compiled module, ready to run any number of tasks.
type Module struct {
	SHA256         string // the hex sha256 of the module's bytes
	Size           int    // the module's size in bytes
	MinMemoryBytes int64  // the memory minimum the module declares, in bytes
	Command        bool   // it exports _start (Run runs it); else it can only be a plugin
	compiled       wazero.CompiledModule
	rt             wazero.Runtime // the runtime that compiled it, where it is instantiated
	hostMods       *hostModules   // rt's host modules, for its instantiations (hostresolve.go)
	image          *memory.Image  // its initial memory, when it has one (memimage_runtime.go)
	// embedderImports: it imports a function of an embedder's host
	// module, which may keep its context (plugin.go does not reuse it).
	// blockingImports: one of them is not HostFunc.NonBlocking, so it may
	// ignore its context (plugin.go hands such a call's guest to a
	// goroutine of its own).
	embedderImports, blockingImports bool
	refused                          atomic.Pointer[ModuleError] // set once the module is refused (watchdog.go)
	// cost estimates what the compiled module and its image hold in
	// memory (modulecost.go), for Config.MaxModuleBytes.
	cost int64
	// resumable: prepared with sandbox/internal/resume (Config.Resumable),
	// resumeGlobals the exports of its mutable globals, for snapshots.
	resumable     bool
	resumeGlobals []string
	hostPoints    bool // its blocking host calls are points (blockingImports): a sleep or a read of stdin can suspend it
	// cacheKey is its prepared-module cache key, when cacheKeyed (compiled
	// with Config.CacheDir set): NameInCache's record goes by it.
	cacheKey   [32]byte
	cacheKeyed bool
	cacheName  atomic.Pointer[string] // its record's latest name, as last read or written: NameInCache skips it
}

type moduleEntry struct {
	ready    chan struct{} // closed once settled
	mod      *Module
	err      error
	lastUsed uint64 // Runtime.tick when last compiled or looked up
	settled  bool   // mod or err is final (under Runtime.mu)
	waiters  int    // Compile calls waiting for it (under Runtime.mu)
	// abandon is closed (and abandonClosed set) when the last caller
	// gives up before wazero began (started): a compilation waiting for
	// its turn is then dropped (waitAtGate). Under Runtime.mu.
	abandon                chan struct{}
	abandonClosed, started bool
}

// compiledCode is what releaseCompiled needs of a *Module: not the
// *Module, nor the Runtime whose registry may hold it (a cleanup's
// argument must not keep its object reachable).
type compiledCode struct {
	cm        wazero.CompiledModule
	onRelease *atomic.Pointer[func()]
	image     *memory.Image
}

// releaseCompiled closes a compiled module once its *Module is
// unreachable: dropped from the registry and held by no caller. (wazero
// counts references to the code of identical modules, so a module
// compiled again meanwhile keeps its own.)
func releaseCompiled(c compiledCode) {
	_ = c.cm.Close(context.Background())
	c.image.Release()
	if f := c.onRelease.Load(); f != nil {
		(*f)()
	}
}

// New builds a Runtime: wazero, the compilation cache and the host modules
// (made while the first module is prepared: docs/sandbox.md).
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(cfg.Interrupt.closeOnContextDone()).
		WithMemoryLimitPages(uint32(cfg.MaxMemoryBytes / PageSize)).
		WithDebugInfoEnabled(cfg.DebugInfo)
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache %s: %w", cfg.CacheDir, err)
		}
		cache = c
		rc = rc.WithCompilationCache(cache)
	}
	var prep *preparedCache
	if cfg.CacheDir != "" {
		p, err := openPreparedCache(cfg.CacheDir)
		if err != nil {
			return nil, errors.Join(err, cache.Close(ctx))
		}
		prep = p
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger, cache: cache, prep: prep, modules: map[string]*moduleEntry{},
		onRelease: new(atomic.Pointer[func()]), rtConfig: rc, hosts: newHostRegistry(cfg.HostModules)}
	r.comp.gate = newCompileGate(cfg.CompileMemory)
	// The wazero runtime is needed only once a module is prepared (its
	// engine compiles a few shared functions when it is made), and the
	// host modules (WASI, Stint's, the embedder's) only to instantiate:
	// wazero compiles a module without them, and checkImports uses
	// Stint's own tables. Together they take 5-25 ms of a cold start
	// (wazero compiles the host functions' trampolines), spent here on the
	// other core while the module is hashed, prepared or loaded from the
	// prepared-module cache, and compiled (waitRuntime, waitImports).
	r.rtReady, r.importsDone = make(chan struct{}), make(chan struct{})
	r.hostMods = newHostModules()
	go func(ctx context.Context) {
		defer close(r.importsDone)
		r.rt = wazero.NewRuntimeWithConfig(ctx, rc)
		close(r.rtReady)
		if r.importsErr = r.allImports(ctx, r.rt); r.importsErr == nil {
			r.hostMods.fill(r.rt, r.instantiatedHostModules())
		}
	}(context.WithoutCancel(ctx))
	r.base = wazero.NewModuleConfig().
		WithName(""). // instances are anonymous: any number may run at once
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader). // each run's slot reads it in chunks (slotRand)
		WithStartFunctions()         // _start is called explicitly, under the run's contexts
	return r, nil
}

// waitRuntime returns the runtime's main wazero runtime, once New's
// goroutine has made it.
func (r *Runtime) waitRuntime() wazero.Runtime {
	<-r.rtReady
	return r.rt
}

// waitImports waits until the host modules of the runtime's main wazero
// runtime are instantiated (New started it), and returns the error of
// that, if any: no module can be instantiated without them. The
// configuration is validated before, so none is expected.
func (r *Runtime) waitImports() error {
	<-r.importsDone
	return r.importsErr
}

// allImports instantiates Stint's host modules and the embedder's in rt.
func (r *Runtime) allImports(ctx context.Context, rt wazero.Runtime) error {
	if err := hostImports(ctx, rt); err != nil {
		return err
	}
	if err := instantiatePluginModule(ctx, rt); err != nil { // hostfunc_plugin.go
		return fmt.Errorf("sandbox: plugin module: %w", err)
	}
	if err := instantiateExtismModule(ctx, rt); err != nil { // extism.go
		return fmt.Errorf("sandbox: Extism module: %w", err)
	}
	return r.hosts.instantiate(ctx, rt, r.cfg.HostModules)
}

// hostImports instantiates WASI preview 1 and the "stint" host module in rt.
func hostImports(ctx context.Context, rt wazero.Runtime) error {
	// wasicounts.go: counts over their limits end the guest; diskerrno.go:
	// the disk budget's refusals reach the guest as ENOSPC.
	wctx := experimental.WithFunctionListenerFactory(ctx, wasiFactory{})
	// environ.go: Stint's environ functions replace wazero's.
	if _, err := newWASIBuilder(rt).Instantiate(wctx); err != nil {
		return fmt.Errorf("sandbox: WASI: %w", err)
	}
	if err := instantiateHostModule(ctx, rt); err != nil {
		return fmt.Errorf("sandbox: host module: %w", err)
	}
	if err := instantiateInterruptModule(ctx, rt); err != nil { // interrupt.go
		return fmt.Errorf("sandbox: interrupt module: %w", err)
	}
	if err := instantiateResumeModule(ctx, rt); err != nil { // resumable.go
		return fmt.Errorf("sandbox: resume module: %w", err)
	}
	return nil
}

// uncachedRuntime returns the runtime that compiles without the on-disk
// cache, made on first use: the fallback when the cache cannot be read or
// written (a corrupt entry, a full disk), so that a broken cache costs a
// compilation, never a task.
func (r *Runtime) uncachedRuntime(ctx context.Context) (wazero.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.uncached == nil {
		rt := wazero.NewRuntimeWithConfig(ctx, r.rtConfig.WithCompilationCache(nil))
		if err := r.allImports(ctx, rt); err != nil {
			return nil, errors.Join(err, rt.Close(ctx))
		}
		r.uncachedMods = newHostModules()
		r.uncachedMods.fill(rt, r.instantiatedHostModules())
		r.uncached = rt
	}
	return r.uncached, nil
}

// isCacheError reports whether a compilation failed in wazero's on-disk
// cache (reading a corrupt entry, or writing one) rather than on the
// module itself.
func isCacheError(err error) bool {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	return strings.Contains(err.Error(), "compilationcache") || errors.As(err, &pathErr) || errors.As(err, &linkErr)
}

// Config returns the runtime's effective configuration.
func (r *Runtime) Config() Config { return r.cfg }

// Close releases the compiled modules, wazero and the cache, not waiting
// for runs and compilations in progress (docs/sandbox.md); safe to call twice.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.closing.Store(true)
	close(r.comp.gate.closed) // compilations waiting for their turn end
	r.mu.Unlock()
	r.stopWatchdog() // no run is abandoned after this
	r.stopGuestWorkers()
	r.drainImages()
	// wazero's Close races with a compilation in progress and with a guest
	// still running in the runtime: an abandoned run (watchdog.go) that
	// has not ended. The last of them to end closes the runtimes; a guest
	// that never ends keeps them open (its goroutine holds them anyway).
	r.mu.Lock()
	pending := len(r.comp.running) > 0 || r.watch.stray.Load() > 0
	r.comp.closePending = pending
	r.mu.Unlock()
	if pending {
		return nil
	}
	return r.closeRuntimes(ctx)
}

// closeIfLastLocked reports whether a Close that waited for compilations
// and abandoned runs may now close the runtimes (and clears the wait).
// Called with r.mu held.
func (r *Runtime) closeIfLastLocked() bool {
	if r.comp.closePending && len(r.comp.running) == 0 && r.watch.stray.Load() == 0 {
		r.comp.closePending = false
		return true
	}
	return false
}

// closeRuntimes closes the wazero runtimes and the compilation cache.
func (r *Runtime) closeRuntimes(ctx context.Context) error {
	_ = r.waitImports() // wazero's Close must not race with their instantiation
	err := r.rt.Close(ctx)
	r.mu.Lock()
	uncached := r.uncached
	r.mu.Unlock()
	if uncached != nil {
		err = errors.Join(err, uncached.Close(ctx))
	}
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(ctx))
	}
	return err
}

// SHA256 returns the hex sha256 of wasm, the key modules are stored under.
func SHA256(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// evictLocked drops least recently used entries, compiled or failed,
// until the registry holds at most MaxModules entries and MaxModuleBytes
// of compiled modules (their estimates); entries still compiling stay,
// and so does keep (the entry just compiled or asked for). Called with
// r.mu held.
func (r *Runtime) evictLocked(keep *moduleEntry) {
	bytes := r.registryBytesLocked()
	for {
		overCount := r.cfg.MaxModules >= 0 && len(r.modules) > r.cfg.MaxModules
		overBytes := r.cfg.MaxModuleBytes >= 0 && bytes > r.cfg.MaxModuleBytes
		if !overCount && !overBytes {
			return
		}
		var oldest string
		var oldestEntry *moduleEntry
		for sha, e := range r.modules {
			if !e.settled || e == keep {
				continue // still compiling, or the one to keep
			}
			if oldestEntry == nil || e.lastUsed < oldestEntry.lastUsed {
				oldest, oldestEntry = sha, e
			}
		}
		if oldestEntry == nil {
			return
		}
		delete(r.modules, oldest)
		if oldestEntry.mod != nil {
			bytes -= oldestEntry.mod.cost
		}
		r.evictions.Add(1)
		r.log.Debug("module dropped from the registry", zap.String("sha256", oldest), zap.Int("max_modules", r.cfg.MaxModules),
			zap.Int64("max_module_bytes", r.cfg.MaxModuleBytes), zap.Int64("registry_bytes", bytes))
	}
}

// registryBytesLocked is the estimated memory of the compiled modules in
// the registry. Called with r.mu held.
func (r *Runtime) registryBytesLocked() int64 {
	var n int64
	for _, e := range r.modules {
		if e.settled && e.mod != nil {
			n += e.mod.cost
		}
	}
	return n
}

// moduleCount returns how many modules the registry holds (compiled,
// failed or compiling): Stats.Modules.
func (r *Runtime) moduleCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.modules)
}

// Stats are a Runtime's counters, for metrics (docs/sandbox.md, "Stats").
type Stats struct {
	Modules                                 int   // modules the registry holds now
	ModuleBytes                             int64 // the estimated memory of those compiled (Config.MaxModuleBytes)
	Compilations                            int64 // modules compiled (or loaded from the cache), successfully or not
	Evictions                               int64 // modules dropped from the registry to stay within its bounds
	CacheFailures                           int64 // compilations done without the on-disk cache, which failed
	PreparedCacheHits, PreparedCacheDamaged int64 // prepared forms loaded from the on-disk cache; entries found damaged there
	Compiling, CompilingAbandoned           int   // compilations running now; of them, those no caller waits for
	CompileTimeouts                         int64 // modules refused for compiling longer than Config.CompileTimeout
	CompileWaiting                          int   // of Compiling, those waiting for their turn or for compile memory (compilegate.go)
	Abandoned                               int64 // runs the stop watchdog gave up on
	Stray                                   int   // of them, those still running now
	Refused                                 int   // modules refused (compile budget: until their compilation ends; abandoned twice)
}

// Stats returns the runtime's counters.
func (r *Runtime) Stats() Stats {
	var st Stats
	r.mu.Lock()
	// The counters are read under the lock that evictions and settling
	// hold: a caller whose Compile returned sees the evictions that made
	// room for its module (compileAside evicts before it unlocks).
	st.Compilations, st.Evictions, st.CacheFailures = r.compilations.Load(), r.evictions.Load(), r.cacheFailures.Load()
	st.Modules, st.ModuleBytes = len(r.modules), r.registryBytesLocked()
	r.mu.Unlock()
	if r.prep != nil {
		st.PreparedCacheHits, st.PreparedCacheDamaged = r.prep.hits.Load(), r.prep.damaged.Load()
	}
	r.compileStats(&st)
	r.watchStats(&st)
	return st
}

// compile prepares and compiles src; admit is called between the two
// (compileAside's admitCompile), and what it returns once wazero is done.
func (r *Runtime) compile(ctx context.Context, src *moduleSource, admit func(wasm []byte) (func(), error)) (*Module, error) {
	sha := src.sha
	if src.size == 0 {
		return nil, &ModuleError{Kind: KindInvalidModule, Message: "empty module (0 bytes)"}
	}
	// Validate against the module limits, add the stop checks (internal/rewrite)
	// and build the memory image (internal/memory), or load all that from the
	// prepared-module cache (compileinput.go, preparedcache.go).
	start := time.Now()
	in, err := r.prepared(src)
	if err != nil {
		return nil, err
	}
	defer in.done() // on every path; first thing after backImage below
	prepared := time.Now()
	size := int(src.size) // the module's own size, before the rewrite
	wasm, image, minPages := in.wasm, in.image, in.minPages
	if maxPages := uint32(r.cfg.MaxMemoryBytes / PageSize); minPages > maxPages {
		return nil, &ModuleError{Kind: KindMemoryLimit, Message: fmt.Sprintf(
			"module declares a minimum memory of %d pages (%s), over the runner's maximum of %d pages (%s)",
			minPages, pagesString(minPages), maxPages, pagesString(maxPages))}
	}
	release, err := admit(wasm) // Config.CompileMemory, and this compilation's turn in wazero
	if err != nil {
		return nil, err
	}
	defer release()
	cctx := experimental.WithCompilationWorkers(ctx, r.cfg.CompilationWorkers)
	rt := r.waitRuntime()
	gotRuntime := time.Now()
	r.compilations.Add(1)
	cm, err := rt.CompileModule(cctx, wasm)
	if err != nil && ctx.Err() == nil && r.cache != nil && isCacheError(err) {
		r.cacheFailures.Add(1)
		r.log.Warn("the compilation cache failed; compiling without it (the task is not affected)",
			zap.String("sha256", sha), zap.String("cache_dir", r.cfg.CacheDir), zap.Error(err))
		if rt, err = r.uncachedRuntime(ctx); err == nil {
			cm, err = rt.CompileModule(cctx, wasm)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, &ModuleError{Kind: KindInvalidModule, Message: "compile: " + err.Error(), Err: err}
	}
	compiled := time.Now()
	_, command := cm.ExportedFunctions()["_start"]
	if ce := r.log.Check(zap.DebugLevel, "module compiled"); ce != nil {
		// prepare: the prepared-module cache's load (or the preparation);
		// wait_runtime: for New's goroutine to make the wazero runtime;
		// wazero: CompileModule (decode, validate, its own cache or compile).
		ce.Write(zap.String("sha256", sha), zap.Int("bytes", len(wasm)),
			zap.Duration("prepare", prepared.Sub(start)), zap.Duration("wait_runtime", gotRuntime.Sub(prepared)),
			zap.Duration("wazero", compiled.Sub(gotRuntime)))
	}
	var latestName string
	if in.keyed {
		latestName = r.noteCacheEntries(in.key, sha, wasm) // cachenames.go: which files hold it
	}
	r.backImage(sha, image)
	in.done() // the image is in its memfd now, or copied: free the load's buffer
	mod := &Module{SHA256: sha, Size: size, MinMemoryBytes: int64(minPages) * PageSize, Command: command, compiled: cm, rt: rt, hostMods: r.hostModsOf(rt), image: image,
		cacheKey: in.key, cacheKeyed: in.keyed,
		embedderImports: importsEmbedder(cm), blockingImports: r.hosts.importsBlocking(cm), cost: moduleCost(wasm, image)}
	mod.resumeGlobals, mod.resumable, mod.hostPoints = resume.GlobalExports(wasm)
	if latestName != "" {
		mod.cacheName.Store(&latestName)
	}
	runtime.AddCleanup(mod, releaseCompiled, compiledCode{cm, r.onRelease, image})
	return mod, nil
}

// importsBlocking reports whether cm imports an embedder's function that
// is not HostFunc.NonBlocking (or one nobody provides: checkImports
// refuses the module).
func (h hostRegistry) importsBlocking(cm wazero.CompiledModule) bool {
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); !isReservedModule(mod) {
			if info := h[mod][name]; info == nil || !info.nonBlocking {
				return true
			}
		}
	}
	return false
}

// Resumable reports whether the module's runs can suspend (Config.Resumable).
func (m *Module) Resumable() bool { return m.resumable }

// errNotCommand is Run's error for a module without _start and a run that
// names no export.
// importsEmbedder reports whether cm imports a function from a module
// Stint does not provide (an embedder's host module).
func importsEmbedder(cm wazero.CompiledModule) bool {
	for _, f := range cm.ImportedFunctions() {
		if mod, _, _ := f.Import(); !isReservedModule(mod) {
			return true
		}
	}
	return false
}

var errNotCommand = &ModuleError{Kind: KindInvalidModule, Message: "module exports no _start function (it must be a WASI command)"}

// checkImports refuses a module that uses a WebAssembly feature Stint
// does not run, or imports anything the runner does not provide, with the
// name of the first such import. It reads only the module's type, import
// and memory sections (rewrite.Imports), so it answers before the module
// limits, the rewrite and the compile, in milliseconds whatever the size.
func (r *Runtime) checkImports(wasm []byte) error {
	imports, err := rewrite.Imports(wasm)
	if err != nil {
		return moduleError(err)
	}
	for _, f := range imports {
		mod, name := f.Module, f.Name
		if f.Memory {
			return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports memory %s.%s; a task must define its own memory", mod, name)}
		}
		params, results := valueTypes(f.Params), valueTypes(f.Results)
		if ok, err := r.hosts.check(mod, name, params, results); ok { // hostfunc.go
			if err != nil {
				return err
			}
			continue
		}
		switch {
		case mod == HostModule && hostFuncs[name]:
		case mod == PluginModule && pluginFuncs[name]: // hostfunc_plugin.go
		case mod == ExtismModule: // extism.go
			if err := checkExtismImport(name, params, results); err != nil {
				return err
			}
		case mod == interruptModule && (name == interruptFunc || name == callStackFunc): // added by prepareModule
		case mod == resume.ImportModule && (name == resume.PushFunc || name == resume.PopFunc): // added by prepareModule
		case mod == wasi_snapshot_preview1.ModuleName:
		case mod == extismUserModule: // package sandbox/extism
			return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports %s.%s, which no host function provides "+
				"(the host app gives Extism plugins its own functions with extism.HostModules, package sandbox/extism; docs/plugins.md)", mod, name)}
		default:
			return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports %s.%s, which Stint does not provide", mod, name)}
		}
	}
	return nil
}

// valueTypes is a signature's value type bytes as wazero's value types
// (the same numbers).
func valueTypes(b []byte) []ValueType {
	out := make([]ValueType, len(b))
	for i, t := range b {
		out[i] = ValueType(t)
	}
	return out
}

func pagesString(pages uint32) string {
	b := uint64(pages) * PageSize
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%.4g MiB", float64(b)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", b>>10)
	}
}
