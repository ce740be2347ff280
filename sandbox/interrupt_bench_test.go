package sandbox

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/wat"
)

// interruptVariants are the three ways to run a module the benchmarks
// compare: no stop mechanism at all (the original module, close-on-
// context-done off), InterruptWazero and InterruptChecks.
var interruptVariants = []struct {
	name       string
	rewrite    bool
	loopChecks bool
	coc        bool // close-on-context-done
}{
	{"none", false, false, false},
	{"wazero", true, false, true},
	{"checks", true, true, false},
}

// benchInstance compiles wasm as variant v and instantiates it.
func benchInstance(b *testing.B, wasm []byte, v int, cache wazero.CompilationCache) (api.Module, context.Context) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background()) // cancellable, as a run's is
	b.Cleanup(cancel)
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(interruptVariants[v].coc)
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	b.Cleanup(func() { _ = r.Close(context.Background()) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	require.NoError(b, instantiateHostModule(ctx, r))
	require.NoError(b, instantiateInterruptModule(ctx, r))
	if interruptVariants[v].rewrite {
		lim := ModuleLimits{}.WithDefaults()
		p, err := prepareModule(wasm, &lim, interruptVariants[v].loopChecks)
		require.NoError(b, err)
		wasm = p.wasm
	}
	cm, err := r.CompileModule(ctx, wasm)
	require.NoError(b, err)
	inst, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	require.NoError(b, err)
	return inst, ctx
}

// BenchmarkInterrupt: what each stop mechanism costs on compute, per
// iteration (per call for tree), shape by shape, the three variants side
// by side in one run:
//
//	go test ./sandbox -run XXX -bench BenchmarkInterrupt -count 10
func BenchmarkInterrupt(b *testing.B) {
	wasm := wat.MustLoad("shape_bench")
	for _, shape := range []string{"loop", "nested", "brtable", "tree"} {
		for v := range interruptVariants {
			b.Run(shape+"/"+interruptVariants[v].name, func(b *testing.B) {
				inst, ctx := benchInstance(b, wasm, v, nil)
				f := inst.ExportedFunction(shape)
				b.ResetTimer()
				if shape != "tree" {
					if _, err := f.Call(ctx, uint64(b.N)); err != nil { // ns/op: per iteration
						b.Fatal(err)
					}
					return
				}
				for range b.N {
					if _, err := f.Call(ctx, 19); err != nil { // 2^20-1 calls
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(1<<20-1), "ns/call")
			})
		}
	}
}

// BenchmarkInterruptPrimes: the Go primes guest (the primes below 300,000)
// in each variant, per run.
func BenchmarkInterruptPrimes(b *testing.B) {
	wasm, err := os.ReadFile(testwasm.GoGuest(b, "primes"))
	require.NoError(b, err)
	cache, err := wazero.NewCompilationCacheWithDir(testwasm.CompileCacheDir(b))
	require.NoError(b, err)
	b.Cleanup(func() { _ = cache.Close(context.Background()) })
	for v := range interruptVariants {
		b.Run(interruptVariants[v].name, func(b *testing.B) {
			ctx := context.Background()
			rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(interruptVariants[v].coc).WithCompilationCache(cache)
			r := wazero.NewRuntimeWithConfig(ctx, rc)
			defer r.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, r)
			require.NoError(b, instantiateHostModule(ctx, r))
			require.NoError(b, instantiateInterruptModule(ctx, r))
			mod := wasm
			if interruptVariants[v].rewrite {
				lim := ModuleLimits{}.WithDefaults()
				p, err := prepareModule(wasm, &lim, interruptVariants[v].loopChecks)
				require.NoError(b, err)
				mod = p.wasm
			}
			cm, err := r.CompileModule(ctx, mod)
			require.NoError(b, err)
			b.ResetTimer()
			for range b.N {
				runCtx, cancel := context.WithCancel(ctx)
				var out strings.Builder
				_, err := r.InstantiateModule(runCtx, cm, wazero.NewModuleConfig().WithName("").
					WithStdin(strings.NewReader("300000 1000000")).WithStdout(&out))
				cancel()
				if err != nil && !strings.Contains(err.Error(), "exit_code(0)") {
					b.Fatal(err)
				}
				if !strings.Contains(out.String(), "25997") {
					b.Fatalf("primes below 300000: %q", out.String())
				}
			}
		})
	}
}

// BenchmarkInterruptInterleaved measures the same as BenchmarkInterrupt
// on a noisy machine: each op calls every shape in every variant in turn
// (2^21 iterations, or tree(20): 2^21-1 calls), and the medians per
// variant are reported as ns-per-iteration metrics, with the ratios to
// the variant with no stop mechanism:
//
//	go test ./sandbox -run XXX -bench BenchmarkInterruptInterleaved -benchtime 15x
func BenchmarkInterruptInterleaved(b *testing.B) {
	wasm := wat.MustLoad("shape_bench")
	shapes := []string{"loop", "nested", "brtable", "tree"}
	const n = 1 << 21
	fns := make([][]api.Function, len(shapes))
	ctxs := make([]context.Context, len(interruptVariants))
	for v := range interruptVariants {
		inst, ctx := benchInstance(b, wasm, v, nil)
		ctxs[v] = ctx
		for s, shape := range shapes {
			fns[s] = append(fns[s], inst.ExportedFunction(shape))
		}
	}
	times := make([][][]float64, len(shapes)) // shape, variant: ns per iteration
	for s := range times {
		times[s] = make([][]float64, len(interruptVariants))
	}
	b.ResetTimer()
	for range b.N {
		for s, shape := range shapes {
			arg := uint64(n)
			if shape == "tree" {
				arg = 20
			}
			for v := range interruptVariants {
				start := time.Now()
				if _, err := fns[s][v].Call(ctxs[v], arg); err != nil {
					b.Fatal(err)
				}
				times[s][v] = append(times[s][v], float64(time.Since(start).Nanoseconds())/n)
			}
		}
	}
	for s, shape := range shapes {
		none := median(times[s][0])
		for v := range interruptVariants {
			m := median(times[s][v])
			b.ReportMetric(m, shape+"-"+interruptVariants[v].name+"-ns/iter")
			if v > 0 {
				b.ReportMetric(m/none, shape+"-"+interruptVariants[v].name+"-x")
			}
		}
	}
}

func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}
