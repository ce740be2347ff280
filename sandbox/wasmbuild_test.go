package sandbox

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
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
