// Package sandbox runs one WebAssembly module safely in wazero and stops it
// cooperatively or by force (docs/sandbox.md says how).
//
// A Runtime, one per process, compiles each module once per sha256 after
// checking it against ModuleLimits and rewriting it so that a guest that
// computes can always be stopped, and runs each task in a fresh instance
// (Run) that has only what its Spec gives: stdio, mounts, env, a checkpoint,
// and the "stint" host module (docs/guest-abi.md).
//
// Every run has two contexts. The soft one, Spec.Stop, makes stop_requested
// return 1: a well-behaved guest saves a checkpoint and exits 75. The hard
// one, Run's ctx, forces the guest whatever it does, and Run returns at once.
// What the guest did is an Outcome of exactly one Kind.
//
// Plugins (docs/plugins.md): LoadPlugin loads a module whose exports are
// called by name, bytes in and bytes out, under a deny-by-default Manifest;
// Config.HostModules gives guests the embedder's own host functions, and
// Extism plugins theirs in extism:host/user (package sandbox/extism, as
// with Extism's go-sdk).
//
//	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: "stint-data/cache"})
//	mod, err := rt.Compile(ctx, wasm)
//	out, err := rt.Run(ctx, mod, sandbox.Spec{Input: []byte("hi")})
//	fmt.Println(out.Kind, string(out.Stdout))
package sandbox
