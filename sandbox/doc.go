// Package sandbox runs one WebAssembly task safely in wazero and stops it
// cooperatively or by force.
//
// A Runtime is built once: a wazero runtime (with close-on-context-done in
// the default interrupt mode), an on-disk compilation cache, the WASI
// preview 1 host module and Stint's own host module "stint" (stop_requested,
// checkpoint_save/size/load, progress, deadline_ms; see docs/guest-abi.md).
// Every task gets a fresh instance that is closed after it.
// A task's mounts are served by Stint's own file system
// (internal/mountfs), which resolves every path beneath the mounted directory
// (openat2 with RESOLVE_BENEATH on Linux, os.Root elsewhere), so no symlink
// or ".." that a guest makes or finds leads out of it; a read-only mount
// refuses every write.
//
// Modules are compiled once per sha256 and kept in a registry of at most
// Config.MaxModules, the least recently used dropped first (its machine code
// is released once no caller holds its *Module). Before compiling, a module
// is decoded in full and held to Config.ModuleLimits (size, counts, function
// bodies, br_table targets, block nesting, branches to one block, table
// sizes): wazero's compilation cannot be cancelled and is quadratic on some
// shapes, so a compile bomb is refused as KindInvalidModule with a message
// that names the limit. It is then rewritten (internal/rewrite): tables get a
// maximum, and stop checks are added that call out to the host every few
// tens of microseconds of work (see "Stopping" below). The module's data
// segments then become a memory image (internal/memory): its initial memory,
// built once and dropped from what wazero compiles; each instance's memory
// starts as a private copy-on-write mapping of it (a sealed memfd, on
// 64-bit Linux) or a pooled copy. Where an image cannot apply, many small
// segments (a Go guest has tens of thousands) are merged into the few that
// give the same initial memory, which wazero would otherwise evaluate at
// every instantiation. If the on-disk
// cache cannot be read or written, the module is compiled without it.
// A compilation runs on its own goroutine: Compile returns when its context
// ends (wazero cannot stop a compilation; it goes on, for the next caller),
// and a module whose compilation outlasts Config.CompileTimeout is refused
// for good (KindInvalidModule).
//
// Every run has two contexts. The soft one is Spec.Stop: once closed, the
// guest's stop_requested returns 1 and a well-behaved guest saves a
// checkpoint and exits 75. The hard one is the ctx given to Run: once it is
// done, wazero closes the module and Run returns at once, whatever the guest
// was doing: spinning, sleeping in poll_oneoff, reading stdin, or waiting in
// a host function. The attempt timeout uses the same ladder: at
// Timeout-Grace the guest is asked to stop, at Timeout it is forced. The
// stop watchdog is the last line: a guest that has not returned
// Config.StopWatchdog after its forced stop is abandoned (Spec.OnAbandon,
// RunBounded; Plugin.Call returns then), its goroutine left running and
// counted (Stats.Stray); a module abandoned twice over the Runtime's life
// is refused for good (KindUnstoppable).
//
// Stopping a guest that computes. A guest's machine code is invisible to
// Go's scheduler until it calls out to Go: it can be neither preempted nor
// stopped, and it holds up every stop-the-world (every garbage collection)
// of the process. So every guest calls out to Stint's interrupt function
// within a bounded amount of work on every path (internal/rewrite, The bound:
// 32,768 work units, about 30 µs of the tightest code, plus one untested
// path), from checks the rewrite adds at function entries and, in the
// default InterruptChecks mode, around every loop; the function ends the
// guest once its hard context is done or its deadline has passed. In
// InterruptWazero mode, wazero's close-on-context-done calls out at every
// loop iteration instead, which makes tight loops tens of times slower
// (Config.Interrupt, sandbox.interrupt; docs/benchmarks.md section 4).
// While guests run, GOMAXPROCS is kept above their number, so that the
// timers and goroutines that stop them always have a P.
//
// Everything the guest does is an Outcome that says exactly what happened
// (succeeded, failed, trapped, interrupted, forced, timed out, memory limit,
// output limit, invalid module, bad import). Run returns an error only for a
// spec that cannot run (a bad mount, say) or a closed Runtime (ErrClosed);
// OutcomeFromError turns such an error, or one from Compile, into the
// Outcome of a run that never started.
//
// Plugins (plugin.go, manifest.go, hostfunc.go; docs/plugins.md). A
// module whose exports are called by name, bytes in and bytes out, is
// loaded with LoadPlugin under a Manifest (deny by default: host modules,
// mounts, env, config values, limits, an expected sha256) and called with
// Plugin.Call in a warm instance, discarded after any call that did not
// succeed. Embedders give guests their own host functions
// (Config.HostModules): a Go function per import, with the call's hard
// context, bounds-checked memory and identity (Call); an error or a panic
// in one traps the guest, never the host. Extism plugins get theirs in
// extism:host/user, defined as with Extism's go-sdk (extism_user.go:
// NewHostFunctionWithStack, ExtismHostModules, CurrentPlugin over the
// plugin's kernel memory). A task may call an export too (Spec.Export).
//
//	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: "stint-data/cache"})
//	mod, err := rt.Compile(ctx, wasm)
//	out, err := rt.Run(ctx, mod, sandbox.Spec{Input: []byte("hi")})
//	fmt.Println(out.Kind, string(out.Stdout))
package sandbox
