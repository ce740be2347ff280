package sandbox

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// Helpers to write modules byte by byte in tests: bombs, malformed input
// and random programs that no .wat fixture should hold.

// The module builders (sandbox/internal/wasmtest), by the short names the
// tests use.
var (
	leb         = wasmtest.LEB
	sleb        = wasmtest.SLEB
	cat         = wasmtest.Cat
	vec         = wasmtest.Vec
	sec         = wasmtest.Sec
	str         = wasmtest.Str
	module      = wasmtest.Module
	fbody       = wasmtest.FBody
	fbodyLocals = wasmtest.FBodyLocals
	funcType    = wasmtest.FuncType
)

// The plain-wazero harness (sandbox/internal/wasmtest), by the names the
// tests use.
var (
	command  = wasmtest.Command
	runPlain = wasmtest.RunPlain
)

// plainRuntime is wazero as the tests use it to compare modules: WASI,
// Stint's host module (with no run state: stop_requested is 0, saves fail), close-on-context-done off.
func plainRuntime(t testing.TB, cache wazero.CompilationCache) wazero.Runtime {
	t.Helper()
	return wasmtest.PlainRuntime(t, cache, func(ctx context.Context, r wazero.Runtime) error {
		if err := instantiateHostModule(ctx, r); err != nil {
			return err
		}
		return instantiateInterruptModule(ctx, r)
	})
}
