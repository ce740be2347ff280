package sandbox_test

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
)

// BenchmarkFirstUseAfterEviction is the cost of a module's first use after
// the registry dropped it (Config.MaxModules) in a long-running runtime
// with a warm on-disk cache: two Go guests alternate in a registry of one,
// so each Compile finds its module evicted (docs/design/cold-start.md,
// "A module's first use after eviction"). Each op is one Compile.
//
//   - registry_hit: no eviction (MaxModules 2), for comparison: a sha256
//     of the bytes and a map lookup.
//   - evicted: a GC runs before each Compile, so the evicted module's
//     machine code has been released (wazero's in-memory copy too): the
//     prepared-module cache and wazero's file cache are read.
//   - evicted_no_gc: no GC: the evicted *Module may still be reachable
//     and wazero may still hold its code in memory (it skips its file
//     cache, not the decode and validation).
func BenchmarkFirstUseAfterEviction(b *testing.B) {
	ctx := context.Background()
	var mods [2][]byte
	for i, name := range []string{"hello", "primes"} {
		w, err := os.ReadFile(testwasm.GoGuest(b, name))
		require.NoError(b, err)
		mods[i] = w
	}
	dir := b.TempDir()
	warm, err := sandbox.New(ctx, sandbox.Config{CacheDir: dir})
	require.NoError(b, err)
	for _, w := range mods {
		_, err := warm.Compile(ctx, w)
		require.NoError(b, err)
	}
	require.NoError(b, warm.Close(ctx))

	for _, c := range []struct {
		name       string
		maxModules int
		gc         bool
	}{{"registry_hit", 2, false}, {"evicted", 1, true}, {"evicted_no_gc", 1, false}} {
		b.Run(c.name, func(b *testing.B) {
			rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: dir, MaxModules: c.maxModules})
			require.NoError(b, err)
			defer func() { _ = rt.Close(ctx) }()
			for _, w := range mods {
				_, err := rt.Compile(ctx, w)
				require.NoError(b, err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.gc {
					b.StopTimer()
					runtime.GC()
					runtime.GC() // cleanups run after the first
					b.StartTimer()
				}
				if _, err := rt.Compile(ctx, mods[i%2]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := rt.Stats()
			b.ReportMetric(float64(st.Evictions)/float64(b.N), "evictions/op")
			b.ReportMetric(float64(st.PreparedCacheHits)/float64(b.N), "prepared_hits/op")
		})
	}
}
