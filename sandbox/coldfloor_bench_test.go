package sandbox

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm"
)

// BenchmarkWazeroCompileFromCache is the part of a warm start that belongs
// to wazero (docs/design/cold-start.md, "wazero's floor"): a new wazero runtime on a warm file cache compiles
// the bytes Stint hands it for the Go hello guest (prepared: rewritten,
// its data in a memory image), with Stint's runtime settings. Its
// CompileModule decodes and validates every function, hashes the bytes
// and reads the cached machine code; nothing of Stint runs. Each op is a
// new runtime (so wazero's in-memory copy is not reused), CompileModule,
// and Close.
func BenchmarkWazeroCompileFromCache(b *testing.B) {
	ctx := context.Background()
	hello, err := os.ReadFile(testwasm.GoGuest(b, "hello"))
	require.NoError(b, err)
	cfg := Config{}.WithDefaults()
	in, _, err := prepareInput(hello, &cfg.ModuleLimits, cfg.Interrupt.loopChecks(), true, false)
	require.NoError(b, err)
	dir := b.TempDir()
	compile := func() {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		require.NoError(b, err)
		rc := wazero.NewRuntimeConfig().WithCompilationCache(cache).
			WithCloseOnContextDone(cfg.Interrupt.closeOnContextDone()).WithDebugInfoEnabled(false)
		rt := wazero.NewRuntimeWithConfig(ctx, rc)
		_, err = rt.CompileModule(ctx, in.wasm)
		require.NoError(b, err)
		require.NoError(b, rt.Close(ctx))
		require.NoError(b, cache.Close(ctx))
	}
	compile() // fills the cache
	for b.Loop() {
		compile()
	}
}
