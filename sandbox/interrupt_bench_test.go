package sandbox

import (
	"context"
	"flag"
	"os"
	"regexp"
	"runtime"
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
	"github.com/stint-run/stint/sandbox/internal/resume"
	"github.com/stint-run/stint/sandbox/internal/rewrite"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// interruptVariants are the three ways to run a module the benchmarks
// compare: no stop mechanism at all (the original module, close-on-
// context-done off), InterruptWazero and InterruptChecks.
var interruptVariants = []interruptVariant{
	{name: "none"},
	{name: "wazero", rewrite: true, coc: true},
	{name: "checks", rewrite: true, loopChecks: true},
	{name: "checks-v5", rewrite: true, loopChecks: true, v5: true},
	{name: "checks-nostack", rewrite: true, loopChecks: true, noStack: true},
	{name: "checks-noexit", rewrite: true, loopChecks: true, noExit: true},
	{name: "checks-k1", rewrite: true, loopChecks: true, unroll: 1}, // not unrolled: rewrite version 8
	{name: "checks-budget", rewrite: true, loopChecks: true, budget: true},
	{name: "checks-state", rewrite: true, loopChecks: true, state: true},
	{name: "resumable", rewrite: true, loopChecks: true, resumable: true},
}

// interruptVariant is one way to run a module (interruptVariants).
type interruptVariant struct {
	name       string
	rewrite    bool
	loopChecks bool
	coc        bool // close-on-context-done
	v5         bool // checks as rewrite version 5 made them (see rewrite.RedefineLoops)
	noStack    bool // without the call-stack limit (see rewrite.CallStackLimit)
	noExit     bool // without the exit checks (rewrite.SetMutation("no-exit-check"))
	unroll     int  // rewrite.UnrollCopies if not 0
	budget     bool // with a run's state (as Run gives it) and a work budget it never reaches in the context
	state      bool // with a run's state in the context, no work budget
	resumable  bool // made resumable first (sandbox/internal/resume)
}

// interleavedVariants picks the variants BenchmarkInterruptInterleaved
// runs beside "none" (always first), by name: all of them when empty.
var interleavedVariants = flag.String("interrupt.variants", "",
	"regexp: the variants BenchmarkInterruptInterleaved runs beside none (wazero, checks, checks-noexit, ...); empty: all")

// keepVariants narrows interruptVariants to -interrupt.variants for one
// benchmark and returns what puts them back.
func keepVariants(b *testing.B) (restore func()) {
	all := interruptVariants
	if *interleavedVariants == "" {
		return func() {}
	}
	re, err := regexp.Compile(*interleavedVariants)
	require.NoError(b, err, "-interrupt.variants")
	interruptVariants = []interruptVariant{all[0]}
	for _, v := range all[1:] {
		if re.MatchString(v.name) {
			interruptVariants = append(interruptVariants, v)
		}
	}
	return func() { interruptVariants = all }
}

// benchWorkCtx gives ctx a run's state (what host functions find in a
// run's context: the stint module's functions then do their work too)
// for variant v's state, and with a work budget it never reaches for its
// budget.
func benchWorkCtx(ctx context.Context, v int) context.Context {
	if !interruptVariants[v].budget && !interruptVariants[v].state {
		return ctx
	}
	st := &runState{}
	if interruptVariants[v].budget {
		st.work.start(nil, 1<<62)
	}
	return context.WithValue(ctx, runStateKey{}, st)
}

// checksVariant is the index of "checks" in interruptVariants: the
// interleaved benchmark also reports each variant's ratio to it.
const checksVariant = 2

// noneVariant is interruptVariants' "none": the module run as it is.
const noneVariant = 0

// benchInstance compiles wasm as variant v and instantiates it.
func benchInstance(b *testing.B, wasm []byte, v int, cache wazero.CompilationCache) (api.Module, context.Context) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background()) // cancellable, as a run's is
	b.Cleanup(cancel)
	ctx = benchWorkCtx(ctx, v)
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(interruptVariants[v].coc)
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r, cm := benchCompile(b, ctx, rc, wasm, v)
	inst, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	require.NoError(b, err)
	return inst, ctx
}

func benchPrepare(b *testing.B, wasm []byte, v int) []byte {
	lim := ModuleLimits{}.WithDefaults()
	rewrite.RedefineLoops = !interruptVariants[v].v5
	rewrite.CallStackLimit = !interruptVariants[v].noStack
	k := rewrite.UnrollCopies
	if interruptVariants[v].unroll != 0 {
		rewrite.UnrollCopies = interruptVariants[v].unroll
	}
	defer func() {
		rewrite.RedefineLoops, rewrite.CallStackLimit, rewrite.UnrollCopies = true, true, k
	}()
	if interruptVariants[v].noExit {
		// Without the exit checks the verifier refuses the way back up of
		// a recursion (rightly): the variant only measures what they cost.
		rewrite.SetMutation("no-exit-check")
		defer rewrite.SetMutation("")
		l := rewrite.Limits(lim)
		p, err := rewrite.Prepare(wasm, &l, interruptVariants[v].loopChecks)
		require.NoError(b, err)
		return p.Wasm
	}
	if interruptVariants[v].noStack {
		// Without the call-stack limit a function that calls has no exit
		// check either: the verifier refuses the way back up (rightly);
		// the variant only measures what the limit costs.
		l := rewrite.Limits(lim)
		p, err := rewrite.Prepare(wasm, &l, interruptVariants[v].loopChecks)
		require.NoError(b, err)
		return p.Wasm
	}
	resume.Omit = os.Getenv("STINT_RESUME_OMIT") // BenchmarkResumableInterleaved: one part left out, to see its cost
	defer func() { resume.Omit = "" }()
	p, err := prepareModule(wasm, &lim, interruptVariants[v].loopChecks, interruptVariants[v].resumable)
	require.NoError(b, err)
	if interruptVariants[v].resumable {
		_, ok, _ := resume.GlobalExports(p.Wasm)
		require.True(b, ok, "the module could not be made resumable")
	}
	return p.Wasm
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
			require.NoError(b, instantiateResumeModule(ctx, r))
			mod := wasm
			if interruptVariants[v].rewrite {
				mod = benchPrepare(b, wasm, v)
			}
			cm, err := r.CompileModule(ctx, mod)
			require.NoError(b, err)
			b.ResetTimer()
			for range b.N {
				runCtx, cancel := context.WithCancel(benchWorkCtx(ctx, v))
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
// and BenchmarkInterruptPrimes on a loaded machine, and more shapes: the
// while loops of bench_toploops (tested at their top) and the C kernels of
// internal/testwasm/ckernels (c-sha256, c-qsort, ...; left out with a log
// line when clang-14 or wasi-libc is missing), and the real programs of
// ../shared/corpus (real-lua, real-sqlite, real-zstd; left out with a log
// line when it is absent). Each op calls every shape
// (2^19 iterations, or tree(18): 2^19-1 calls; primes: the primes below
// 100,000; a kernel: one run at its default size) in every variant in turn,
// each variant first in turn. Times are the calling thread's CPU time (not
// the time it waited for a CPU). A shape called by export takes the sum
// over layoutPads layouts: its module with its first function (empty)
// padded by that many stores, which moves the shapes' machine code (its
// alignment alone moved a shape by up to 40% here); a kernel or real
// program runs in one of -interrupt.layouts layouts an op, in turn, every
// variant of the op in the same one (padFirst). Reported: each
// variant's median ns per iteration (ms per run for primes and the
// kernels) and the median over ops of the op's ratio to the variant with
// no stop mechanism (the variants of one op run back to back, under about
// the same load). -interrupt.shapes picks shapes by a regexp:
//
//	go test ./sandbox -run XXX -bench BenchmarkInterruptInterleaved -benchtime 40x
func BenchmarkInterruptInterleaved(b *testing.B) {
	keep := shapeFilter(b)
	defer keepVariants(b)()
	const n = 1 << 19
	var fshapes []funcShape
	for _, sh := range interleavedFuncShapes {
		if keep(sh.name) {
			fshapes = append(fshapes, sh)
		}
	}
	type call struct {
		fn  api.Function
		ctx context.Context
	}
	calls := make([][][]call, len(interruptVariants)) // variant, layout, shape
	for v := range interruptVariants {
		for _, pad := range layoutPads {
			insts := map[string]api.Module{}
			ctxs := map[string]context.Context{}
			var cs []call
			for _, sh := range fshapes {
				if insts[sh.module] == nil {
					insts[sh.module], ctxs[sh.module] = benchInstance(b, padStart(b, wat.MustLoad(sh.module), pad), v, nil)
				}
				cs = append(cs, call{insts[sh.module].ExportedFunction(sh.export), ctxs[sh.module]})
			}
			calls[v] = append(calls[v], cs)
		}
	}
	var rshapes []runShape
	if keep("primes") {
		primesWasm, err := os.ReadFile(testwasm.GoGuest(b, "primes"))
		require.NoError(b, err)
		primes := make([]func() float64, len(interruptVariants))
		for v := range interruptVariants {
			primes[v] = primesRunner(b, primesWasm, v)
		}
		rshapes = append(rshapes, runShape{"primes", func(v, _ int) float64 { return primes[v]() / 1e6 }})
	}
	rshapes = append(rshapes, kernelShapes(b, keep)...)
	rshapes = append(rshapes, corpusShapes(b, keep)...)
	var shapes []string
	for _, sh := range fshapes {
		shapes = append(shapes, sh.name)
	}
	for _, sh := range rshapes {
		shapes = append(shapes, sh.name)
	}
	times := make([][][]float64, len(shapes)) // shape, variant, op
	for s := range times {
		times[s] = make([][]float64, len(interruptVariants))
	}
	runtime.LockOSThread() // threadCPU: this thread's
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := range b.N {
		for s, shape := range shapes {
			arg := uint64(n)
			if shape == "tree" {
				arg = 18
			}
			for k := range interruptVariants {
				v := (i + k) % len(interruptVariants)
				if s >= len(fshapes) {
					times[s][v] = append(times[s][v], rshapes[s-len(fshapes)].run(v, i)) // ms per run
					continue
				}
				var t time.Duration
				for _, cs := range calls[v] {
					start := threadCPU()
					if _, err := cs[s].fn.Call(cs[s].ctx, arg); err != nil {
						b.Fatal(err)
					}
					t += threadCPU() - start
				}
				times[s][v] = append(times[s][v], float64(t.Nanoseconds())/n/float64(len(layoutPads)))
			}
		}
	}
	for s, shape := range shapes {
		unit := "-ns/iter"
		if s >= len(fshapes) {
			unit = "-ms/run"
		}
		for v := range interruptVariants {
			b.ReportMetric(median(times[s][v]), shape+"-"+interruptVariants[v].name+unit)
			if v > 0 {
				r := make([]float64, len(times[s][v]))
				for i := range r {
					r[i] = times[s][v][i] / times[s][0][i]
				}
				b.ReportMetric(median(r), shape+"-"+interruptVariants[v].name+"-x")
			}
			if checks := slices.IndexFunc(interruptVariants, func(x interruptVariant) bool { return x.name == "checks" }); checks >= 0 && v > checks {
				r := make([]float64, len(times[s][v]))
				for i := range r {
					r[i] = times[s][checks][i] / times[s][v][i]
				}
				b.ReportMetric(median(r), shape+"-checks-over-"+interruptVariants[v].name+"-x")
			}
		}
	}
}

// layoutPads are the layouts BenchmarkInterruptInterleaved averages over.
var layoutPads = []int{0, 1, 2, 3}

// padStart returns wasm (shape_bench or bench_toploops) with its first
// function (shape_bench's _start; empty) replaced by one of pad stores to
// address 0.
func padStart(b *testing.B, wasm []byte, pad int) []byte {
	return withFirstBody(b, wasm, func(first []byte) []byte {
		require.Equal(b, []byte{0, wasmbin.OpEnd}, first, "the first function is empty")
		code := []byte{}
		for range pad {
			code = append(code, wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 7, 0x36, 2, 0) // i32.store
		}
		return wasmtest.Cat([]byte{0}, code, []byte{wasmbin.OpEnd}) // no locals
	})
}

// withFirstBody returns wasm with the body of its first function (locals
// and code, without its size) replaced by what edit returns for it.
func withFirstBody(b *testing.B, wasm []byte, edit func(body []byte) []byte) []byte {
	secs, ok := wasmbin.Sections(wasm)
	require.True(b, ok)
	var cs wasmbin.Section
	for _, s := range secs {
		if s.ID == wasmbin.SecCode {
			cs = s
		}
	}
	p := wasm[cs.Start:cs.End]
	count, n, err := wasmbin.U32(p)
	require.NoError(b, err)
	size, m, err := wasmbin.U32(p[n:])
	require.NoError(b, err)
	body := edit(p[n+m : n+m+int(size)])
	payload := wasmtest.Cat(wasmtest.LEB(uint64(count)), wasmtest.LEB(uint64(len(body))), body, p[n+m+int(size):])
	return wasmtest.Cat(wasm[:cs.Header], wasmtest.Sec(wasmbin.SecCode, payload), wasm[cs.End:])
}

// primesRunner compiles the primes guest as variant v and returns a run of
// it (the primes below 100,000), timed in thread CPU ns.
func primesRunner(b *testing.B, wasm []byte, v int) func() float64 {
	run := commandRunner(b, wasm, v, "100000 1000000")
	return func() float64 {
		t, out := run()
		if !strings.Contains(out, "9592") {
			b.Fatalf("primes below 100000: %q", out)
		}
		return t
	}
}

func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}

// benchCompile is a runtime of rc, closed when b ends, with WASI and
// Stint's host, interrupt and resume modules, and wasm compiled in it as
// variant v runs it (rewritten by benchPrepare where v rewrites).
func benchCompile(b *testing.B, ctx context.Context, rc wazero.RuntimeConfig, wasm []byte, v int) (wazero.Runtime, wazero.CompiledModule) {
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	b.Cleanup(func() { _ = r.Close(context.Background()) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	require.NoError(b, instantiateHostModule(ctx, r))
	require.NoError(b, instantiateInterruptModule(ctx, r))
	require.NoError(b, instantiateResumeModule(ctx, r))
	if interruptVariants[v].rewrite {
		wasm = benchPrepare(b, wasm, v)
	}
	cm, err := r.CompileModule(ctx, wasm)
	require.NoError(b, err)
	return r, cm
}
