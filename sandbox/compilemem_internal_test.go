package sandbox

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// callsModule is a command whose n functions each make calls calls of
// function 0 (_start, empty); salt makes its bytes its own.
func callsModule(n, calls int, salt byte) []byte {
	u := unitShape{types: [][]byte{wasmtest.FuncType(nil, nil)}, unit: []byte{wasmbin.OpCall, 0}, tail: []byte{wasmbin.OpI32Const, salt & 0x3f, 0x1a}}
	return u.module(n*(2*calls+4), 2*calls+4)
}

// estimates are what r computes of wasm: its quick bound and its
// estimate, on what the rewrite makes of it.
func estimates(t *testing.T, r *Runtime, wasm []byte) (quick, exact int64) {
	t.Helper()
	in, _, err := prepareInput(wasm, &r.cfg.ModuleLimits, r.cfg.Interrupt.loopChecks(), memImages.Load(), false)
	require.NoError(t, err)
	quick, ok := quickCompileMemory(in.wasm, r.cfg.CompilationWorkers)
	require.True(t, ok)
	exact, ok = exactCompileMemory(in.wasm, r.cfg.CompilationWorkers)
	require.True(t, ok)
	return quick, exact
}

// TestCompileMemoryRefused: a module estimated over Config.CompileMemory
// is refused before wazero sees it, with the estimate, the limit and the
// knob; at the limit it compiles.
func TestCompileMemoryRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wasm := callsModule(2, 2000, 1) // two functions of 2,000 calls
	probe, err := New(ctx, Config{})
	require.NoError(t, err)
	quick, exact := estimates(t, probe, wasm)
	require.NoError(t, probe.Close(ctx))
	require.Greater(t, quick, exact, "the quick bound is the looser")

	r, err := New(ctx, Config{CompileMemory: exact - 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	_, err = r.Compile(ctx, wasm)
	var me *ModuleError
	require.ErrorAs(t, err, &me)
	require.Equal(t, KindInvalidModule, me.Kind)
	require.ErrorIs(t, err, ErrCompileMemory)
	require.ErrorIs(t, err, ErrInvalidModule)
	require.Contains(t, me.Message, "estimated to take "+sizeString(exact)+" of memory, over the limit of "+sizeString(exact-1)+" (limits.compile_memory)")
	require.Equal(t, KindInvalidModule, OutcomeFromError(err).Kind)
	require.Zero(t, r.Stats().Compilations, "wazero never saw it")

	// At the limit, and with no limit, it compiles; under the quick
	// bound, without decoding its code.
	for _, limit := range []int64{exact, quick, -1} {
		r2, err := New(ctx, Config{CompileMemory: limit})
		require.NoError(t, err)
		_, err = r2.Compile(ctx, wasm)
		require.NoError(t, err, "limit %d", limit)
		require.NoError(t, r2.Close(ctx))
	}
}

// TestCompileMemoryDefault: by default (1 GiB) the shape of issue 37, 8 MB
// of calls in two functions of 4 MB (5.1 GB measured), is refused, and
// so are its 4 MB and 2 MB; real modules are far under it.
func TestCompileMemoryDefault(t *testing.T) {
	t.Parallel()
	for _, total := range []int{2 << 20, 4 << 20, 8 << 20} {
		u := unitShape{types: [][]byte{wasmtest.FuncType(nil, nil)}, unit: []byte{wasmbin.OpCall, 0}}
		wasm := u.module(total, min(total, 4<<20-64))
		est, ok := exactCompileMemory(wasm, defaultCompilationWorkers)
		require.True(t, ok)
		require.Greater(t, est, DefaultCompileMemory, "%d MB of calls", total>>20)
	}
	for _, name := range []string{"noop", "echo", "shape_nested_loops", "memgrow"} {
		est, ok := exactCompileMemory(wat.MustLoad(name), defaultCompilationWorkers)
		require.True(t, ok)
		require.Less(t, est, int64(64<<20), name)
	}
}

// TestCompileMemoryRefusedBeforePreparation: 8 MB of calls (issue 37) is
// refused by default on its own bytes, before the rewrite and the
// verifier take memory over it, with the estimate and the knob.
func TestCompileMemoryRefusedBeforePreparation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core, logs := observer.New(zapcore.InfoLevel)
	r, err := New(ctx, Config{Logger: zap.New(core)})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	u := unitShape{types: [][]byte{wasmtest.FuncType(nil, nil)}, unit: []byte{wasmbin.OpCall, 0}}
	wasm := u.module(8<<20, 4<<20-64)
	est, ok := rawCompileMemory(wasm, defaultCompilationWorkers)
	require.True(t, ok)
	_, err = r.Compile(ctx, wasm)
	require.ErrorIs(t, err, ErrCompileMemory)
	require.ErrorContains(t, err, "estimated to take "+sizeString(est)+" of memory, over the limit of 1 GiB (limits.compile_memory)")
	require.Equal(t, 1, logs.FilterMessageSnippet("refused before its preparation").Len())
	require.Zero(t, r.Stats().Compilations)
}

// measuredCompileMemory is what wazero v1.12.0 took to compile each of
// compileMemShapes (peak RSS over an empty command's, two compilation
// workers), from TestCompileMemoryMeasure on the 2-core AMD EPYC VM
// (docs/design/compile-memory.md, "What costs"), in MB.
var measuredCompileMemory = map[string]int64{
	"local_add 1024K/2K": 4, "local_add 256K/256K": 39, "global_add 1024K/2K": 5,
	"global_add 256K/256K": 49, "locals 1024K/2K": 12, "locals 256K/256K": 1, "call 1024K/2K": 65,
	"call 256K/256K": 121, "call4 1024K/2K": 18, "call4 256K/256K": 42, "call_indirect 1024K/2K": 160,
	"call_indirect 256K/256K": 1059, "load 1024K/2K": 52, "load 256K/256K": 385, "store 1024K/2K": 25,
	"store 256K/256K": 207, "memory_grow 1024K/2K": 24, "memory_grow 256K/256K": 252,
	"memory_size 1024K/2K": 3, "memory_size 256K/256K": 45, "memory_fill 1024K/2K": 81,
	"memory_fill 256K/256K": 929, "v128_load 1024K/2K": 23, "v128_load 256K/256K": 186,
	"div 1024K/2K": 87, "div 256K/256K": 420, "trunc 1024K/2K": 189, "trunc 256K/256K": 976,
	"memory_copy 1024K/2K": 45, "memory_copy 256K/256K": 380, "table_fill 1024K/2K": 81,
	"table_fill 256K/256K": 936, "table_copy 1024K/2K": 49, "table_copy 256K/256K": 520,
	"br_table 1024K/2K": 6, "br_table 64K/64K": 0, "rem_u 1024K/2K": 44, "rem_u 256K/256K": 252,
	"trunc_f64_u 1024K/2K": 209, "trunc_f64_u 256K/256K": 1044, "table_get 1024K/2K": 29,
	"table_get 256K/256K": 217, "unreachable 1024K/2K": 8, "unreachable 64K/64K": 1,
	"block 1024K/2K": 9, "block 64K/64K": 49, "br_if 1024K/2K": 11, "br_if 64K/64K": 67,
	"if 1024K/2K": 14, "if 64K/64K": 97, "if_else 1024K/2K": 10, "if_else 64K/64K": 51,
	"select 1024K/2K": 5, "select 256K/256K": 28, "local_add 1024K/1024K": 156,
	"local_add 2048K/1024K": 310, "call 1024K/1024K": 481, "call 2048K/1024K": 1070,
	"call 4096K/4095K": 1927, "call 8192K/4095K": 4313, "call_indirect 1024K/1024K": 4197,
	"call_indirect 2048K/1024K": 8671, "load 1024K/1024K": 1478, "load 2048K/1024K": 3187,
	"empty 50000 funcs": 21, "empty 200000 funcs": 81,
	"joins 1000x1000": 107, "joins 2000x2000": 472, "joins 4000x2000": 931, "joins 2000x4000": 926,
	"joins_block 2000x2000": 465, "joins_loop 1000x2000": 282, "joins_loop 1000x4000": 600,
}

// TestCompileMemoryEstimateBoundsMeasured: the estimate is over what each
// shape measured took, and the quick bound over the estimate.
func TestCompileMemoryEstimateBoundsMeasured(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, s := range compileMemShapes() {
		est, ok := exactCompileMemory(s.wasm, defaultCompilationWorkers)
		require.True(t, ok, s.name)
		quick, ok := quickCompileMemory(s.wasm, defaultCompilationWorkers)
		require.True(t, ok, s.name)
		require.GreaterOrEqual(t, quick, est, "%s: the quick bound bounds the estimate", s.name)
		if mb, ok := measuredCompileMemory[s.name]; ok {
			seen++
			require.Greater(t, est, mb<<20, "%s: estimated %d MB, measured %d MB", s.name, est>>20, mb)
		}
	}
	require.Equal(t, len(measuredCompileMemory), seen, "every measured shape is still generated")
}

// TestCountBodyDecodes: the estimate's decoder reads every instruction of
// the fixtures, and a body cut short is not read.
func TestCountBodyDecodes(t *testing.T) {
	t.Parallel()
	for _, name := range wat.Names() {
		wasm := wat.MustLoad(name)
		m, ok := readModuleCode(wasm)
		require.True(t, ok, name)
		code := m.code
		bodies := 0
		require.True(t, eachBody(code, func(b []byte) bool {
			bodies++
			_, ok := countBody(b)
			require.True(t, ok, "%s: body %d", name, bodies)
			if len(b) > 2 {
				_, ok := countBody(b[:len(b)-1-len(b)/2])
				_ = ok // a cut can still decode (a shorter body), but must not panic
			}
			return true
		}), name)
	}
	c, ok := countBody(wasmtest.Cat(wasmtest.LEB(0), []byte{wasmbin.OpCall}, wasmtest.LEB(1<<20), []byte{wasmbin.OpCallIndirect, 0, 0, 0x28, 2, 0, wasmbin.OpEnd}))
	require.True(t, ok)
	require.Equal(t, bodyCounts{instrs: 4, retained: uint64(callOp.retained + indirectOp.retained + memOp.retained + plainOp.retained),
		transient: uint64(callOp.transient + indirectOp.transient + memOp.transient + plainOp.transient)}, c)
	_, ok = countBody([]byte{0, wasmbin.OpCall, 0x80})
	require.False(t, ok, "a LEB cut short")
}

// gateRuntime is a Runtime whose wazero compilations wait in the
// onWazero hook until released, counting how many are in wazero at once.
type gateRuntime struct {
	*Runtime
	mu              sync.Mutex
	inWazero, most  int
	entered, waited chan string
	release         map[string]chan struct{}
}

func newGateRuntime(t *testing.T, cfg Config, modules ...[]byte) *gateRuntime {
	t.Helper()
	r, err := New(context.Background(), cfg)
	require.NoError(t, err)
	g := &gateRuntime{Runtime: r, entered: make(chan string, 16), waited: make(chan string, 16), release: map[string]chan struct{}{}}
	for _, m := range modules {
		g.release[SHA256(m)] = make(chan struct{})
	}
	hook := func(sha string) func() {
		g.mu.Lock()
		g.inWazero++
		g.most = max(g.most, g.inWazero)
		g.mu.Unlock()
		g.entered <- sha
		<-g.release[sha]
		return func() {
			g.mu.Lock()
			g.inWazero--
			g.mu.Unlock()
		}
	}
	r.comp.onWazero.Store(&hook)
	r.comp.gate.onWait = func() { g.waited <- "" }
	t.Cleanup(func() {
		for _, ch := range g.release {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, r.waitCompilations(ctx))
		require.NoError(t, r.Close(ctx))
	})
	return g
}

// compileAsync compiles wasm on a goroutine; its error comes on the
// channel.
func (g *gateRuntime) compileAsync(ctx context.Context, wasm []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := g.Compile(ctx, wasm)
		done <- err
	}()
	return done
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// TestCompileMemoryTurns: two compilations whose estimates do not fit the
// limit together never run in wazero at once: the second waits for the
// first (its budget's clock stopped), then compiles.
func TestCompileMemoryTurns(t *testing.T) {
	t.Parallel()
	a, b := funcBomb(20_000), funcBomb(20_001)
	probe := &Runtime{cfg: Config{}.WithDefaults()}
	qa, ea := estimates(t, probe, a)
	qb, eb := estimates(t, probe, b)
	limit := max(ea, eb) // each fits alone, not both, and the quick bounds do not
	require.Less(t, limit, ea+eb)
	require.Greater(t, min(qa, qb), limit)
	g := newGateRuntime(t, Config{CompileMemory: limit, CompileTimeout: time.Minute}, a, b)
	ctx := context.Background()

	doneA := g.compileAsync(ctx, a)
	require.Equal(t, SHA256(a), recv(t, g.entered, "a in wazero"))
	doneB := g.compileAsync(ctx, b)
	recv(t, g.waited, "b waits")
	require.Equal(t, 1, g.Stats().CompileWaiting)
	require.Equal(t, 2, g.Stats().Compiling)
	close(g.release[SHA256(a)])
	require.Equal(t, SHA256(b), recv(t, g.entered, "b in wazero, once a is out"))
	close(g.release[SHA256(b)])
	require.NoError(t, recv(t, doneA, "a compiled"))
	require.NoError(t, recv(t, doneB, "b compiled"))
	require.Equal(t, 1, g.most, "never both in wazero")
	require.Zero(t, g.Stats().CompileWaiting)
}

// twoCompiling is a gate runtime with memory to spare (compilations take
// turns two at a time) and three modules, a, b and c, of which a and b
// have been sent to compile and are both held in wazero; doneA and doneB
// receive their results.
func twoCompiling(t *testing.T) (g *gateRuntime, a, b, c []byte, doneA, doneB <-chan error) {
	t.Helper()
	a, b, c = funcBomb(1000), funcBomb(1001), funcBomb(1002)
	g = newGateRuntime(t, Config{CompileMemory: -1}, a, b, c)
	doneA = g.compileAsync(context.Background(), a)
	doneB = g.compileAsync(context.Background(), b)
	recv(t, g.entered, "a or b in wazero")
	recv(t, g.entered, "both in wazero")
	return g, a, b, c, doneA, doneB
}

// TestCompileTurnsTwoAtATime: with memory to spare, two compilations run
// at once and a third waits for its turn; a waiting one whose caller
// gives up is dropped, not compiled, and compiles when asked again; one
// waiting when the runtime closes ends with ErrClosed.
func TestCompileTurnsTwoAtATime(t *testing.T) {
	t.Parallel()
	g, a, b, c, doneA, doneB := twoCompiling(t)
	ctx := context.Background()
	require.Equal(t, 2, g.most)

	cctx, cancel := context.WithCancel(ctx)
	doneC := g.compileAsync(cctx, c)
	recv(t, g.waited, "c waits for its turn")
	cancel()
	require.ErrorIs(t, recv(t, doneC, "c's caller gives up"), context.Canceled)
	close(g.release[SHA256(a)])
	close(g.release[SHA256(b)])
	require.NoError(t, recv(t, doneA, "a compiled"))
	require.NoError(t, recv(t, doneB, "b compiled"))
	ctx30, cancel30 := context.WithTimeout(ctx, 30*time.Second)
	defer cancel30()
	require.NoError(t, g.waitCompilations(ctx30))
	st := g.Stats()
	require.EqualValues(t, 2, st.Compilations, "c was dropped before wazero")
	require.Equal(t, 2, st.Modules)
	_, ok := g.Lookup(SHA256(c))
	require.False(t, ok)

	close(g.release[SHA256(c)])
	require.NoError(t, recv(t, g.compileAsync(ctx, c), "c compiled when asked again"))
	require.EqualValues(t, 3, g.Stats().Compilations)
}

// TestCompileTurnClosed: a compilation waiting for its turn when the
// runtime closes ends with ErrClosed, and so does its caller.
func TestCompileTurnClosed(t *testing.T) {
	t.Parallel()
	g, a, b, c, doneA, doneB := twoCompiling(t)
	ctx := context.Background()
	doneC := g.compileAsync(ctx, c)
	recv(t, g.waited, "c waits for its turn")
	require.NoError(t, g.Close(ctx))
	require.ErrorIs(t, recv(t, doneC, "c ends"), ErrClosed)
	close(g.release[SHA256(a)])
	close(g.release[SHA256(b)])
	for _, done := range []<-chan error{doneA, doneB} {
		err := recv(t, done, "a and b end")
		require.True(t, err == nil || errors.Is(err, ErrClosed), "%v", err)
	}
}

// BenchmarkCompileMemoryEstimate: the estimates of a module file
// (STINT_COMPILE_MEMORY_BENCH; else an 8 MB module of calls).
func BenchmarkCompileMemoryEstimate(b *testing.B) {
	wasm := unitShape{types: [][]byte{wasmtest.FuncType(nil, nil)}, unit: []byte{wasmbin.OpCall, 0}}.module(8<<20, 2<<10)
	if p := os.Getenv("STINT_COMPILE_MEMORY_BENCH"); p != "" {
		var err error
		wasm, err = os.ReadFile(p)
		require.NoError(b, err)
	}
	m, ok := readModuleCode(wasm)
	require.True(b, ok)
	b.SetBytes(int64(len(m.code)))
	b.Run("quick", func(b *testing.B) {
		for b.Loop() {
			quickCompileMemory(wasm, 2)
		}
	})
	b.Run("exact", func(b *testing.B) {
		for b.Loop() {
			exactCompileMemory(wasm, 2)
		}
	})
}

// TestSizeString: the refusal's sizes read as people write them.
func TestSizeString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 GiB", sizeString(1<<30))
	require.Equal(t, "5.09 GiB", sizeString(5465000000))
	require.Equal(t, "512 MiB", sizeString(512<<20))
	require.Equal(t, "900 KiB", sizeString(900<<10))
}
