package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"math"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"go.uber.org/goleak"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// BenchmarkSandboxRunNoop is one task of the noop fixture through Stint's
// sandbox.Runtime.Run: instantiate, _start, close, classify.
func BenchmarkSandboxRunNoop(b *testing.B) {
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{})
	require.NoError(b, err)
	defer rt.Close(ctx)
	mod, err := rt.Compile(ctx, wat.MustLoad("noop"))
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		out, err := rt.Run(ctx, mod, sandbox.Spec{})
		if err != nil || !out.Success() {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkBareWazeroNoop is the same task on bare wazero with
// close-on-context-done, the baseline of BenchmarkSandboxRunNoop.
func BenchmarkBareWazeroNoop(b *testing.B) {
	benchBare(b, true)
}

// BenchmarkBareWazeroNoopNoClose is BenchmarkBareWazeroNoop without
// close-on-context-done.
func BenchmarkBareWazeroNoopNoClose(b *testing.B) {
	benchBare(b, false)
}

// BenchmarkBareWazeroNoopCryptoRand is BenchmarkBareWazeroNoop with
// crypto/rand as the random source (wazero's default deterministic source
// seeds a math/rand generator per instance).
func BenchmarkBareWazeroNoopCryptoRand(b *testing.B) {
	benchBare(b, true, true)
}

func benchBare(b *testing.B, closeOnDone bool, cryptoRand ...bool) {
	ctx := context.Background()
	bare, err := NewBare(ctx, closeOnDone, "")
	require.NoError(b, err)
	defer bare.Close(ctx)
	cm, err := bare.Compile(ctx, wat.MustLoad("noop"))
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		run := bare.Run
		if len(cryptoRand) > 0 && cryptoRand[0] {
			run = bare.RunCryptoRand
		}
		if _, err := run(ctx, cm, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoops runs every shape of testdata/loops_cmd.wat through bare wazero
// (stub stint module) and sandbox.Runtime in both interrupt modes: each
// computes the right sum (the module traps otherwise), rewritten or not.
func TestLoops(t *testing.T) {
	ctx := context.Background()
	bare, err := NewBare(ctx, false, "")
	require.NoError(t, err)
	defer func() { require.NoError(t, bare.Close(ctx)) }()
	require.NoError(t, stubStintModule(ctx, bare.rt))
	cm, err := bare.Compile(ctx, benchModule("loops_cmd"))
	require.NoError(t, err)
	for i, sh := range loopShapes {
		_, err := bare.Run(ctx, cm, []byte{byte('0' + i)})
		require.NoError(t, err, sh.key)
	}
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(ctx, sandbox.Config{Interrupt: mode})
		require.NoError(t, err)
		m, err := rt.Compile(ctx, benchModule("loops_cmd"))
		require.NoError(t, err)
		for i, sh := range loopShapes {
			out, err := rt.Run(ctx, m, sandbox.Spec{Stdin: bytes.NewReader([]byte{byte('0' + i)})})
			require.NoError(t, err)
			require.Equal(t, sandbox.KindSucceeded, out.Kind, "%s in %s mode: %s", sh.key, mode, out)
		}
		require.NoError(t, rt.Close(ctx))
	}
}

func TestQuantile(t *testing.T) {
	s := &Series{Values: []float64{5, 1, 4, 2, 3}}
	require.Equal(t, 3.0, s.Median())
	require.Equal(t, 2.5, (&Series{Values: []float64{4, 1, 2, 3}}).Median())
	require.Equal(t, 1.0, s.Quantile(0))
	require.Equal(t, 5.0, s.Max())
	require.Equal(t, 5.0, s.P99())
	require.True(t, math.IsNaN((&Series{}).Median()))
	require.Equal(t, []int{2, 0, 1}, rotate([]int{0, 1, 2}, 2))
	require.Equal(t, []int{1, 2, 0}, rotate([]int{0, 1, 2}, -2))
}

// BenchmarkStoreClaimLimit moves tasks through the SQLite store's Claim and
// Complete, one to three at a time, with the claim's Max (its LIMIT) the
// same on every call or cycling 1, 2, 3 as the pool's free slots do.
// SQLite re-prepares the claim statement whenever the LIMIT changes; the
// difference between the two is that cost.
func BenchmarkStoreClaimLimit(b *testing.B) {
	for _, mode := range []string{"constant", "varying"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "stint.db")
			n := b.N*3 + 3
			_, err := enqueue(ctx, path, wat.MustLoad("noop"), nil, n)
			require.NoError(b, err)
			store, err := sqlite.Open(ctx, path, sqlite.Options{Exclusive: true})
			require.NoError(b, err)
			defer store.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				max := 2
				if mode == "varying" {
					max = 1 + i%3
				}
				cl, err := store.Claim(ctx, tasks.ClaimRequest{Owner: "bench", Max: max, Lease: time.Minute})
				if err != nil || len(cl) == 0 {
					b.Fatal(err, len(cl))
				}
				cs := make([]tasks.Completion, len(cl))
				for j, c := range cl {
					cs[j] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}
				}
				if _, err := store.Complete(ctx, cs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBareWazeroNoopBase is BenchmarkBareWazeroNoopCryptoRand the
// way bench/peers' bare wazero runs it: the module config (argv, clocks,
// crypto/rand, no start functions) built once, and only stdin, stdout and
// stderr set per task. It is the floor `make bench-report` compares with.
func BenchmarkBareWazeroNoopBase(b *testing.B) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	_, err := wasi_snapshot_preview1.Instantiate(ctx, rt)
	require.NoError(b, err)
	cm, err := rt.CompileModule(ctx, wat.MustLoad("noop"))
	require.NoError(b, err)
	base := wazero.NewModuleConfig().WithName("").WithArgs("task").WithSysWalltime().WithSysNanotime().
		WithRandSource(rand.Reader).WithStartFunctions()
	var stdout, stderr bytes.Buffer
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		stdout.Reset()
		stderr.Reset()
		inst, err := rt.InstantiateModule(ctx, cm, base.WithStdin(bytes.NewReader(nil)).WithStdout(&stdout).WithStderr(&stderr))
		if err != nil {
			b.Fatal(err)
		}
		_, err = inst.ExportedFunction("_start").Call(ctx)
		_ = inst.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNoopParts prices the parts of a no-op task's cost that can be
// switched off through public options, one sub-benchmark each, against
// bare wazero configured as bench/peers runs it (docs/benchmarks.md, "The
// per-task floor"). Run it in rounds so that the variants interleave:
//
//	for i in $(seq 10); do go test ./internal/bench -run '^$' -bench '^BenchmarkNoopParts$' -benchtime 30000x; done
func BenchmarkNoopParts(b *testing.B) {
	noTimeout := sandbox.Spec{Limits: sandbox.Limits{Timeout: -1}}
	for _, v := range []struct {
		name string
		cfg  sandbox.Config
		spec sandbox.Spec
	}{
		{"stint", sandbox.Config{}, sandbox.Spec{}},
		{"no-watchdog", sandbox.Config{StopWatchdog: -1}, sandbox.Spec{}},
		{"no-timeout", sandbox.Config{}, noTimeout}, // no deadline: no timer, nothing to watch
		{"wazero-interrupt", sandbox.Config{Interrupt: sandbox.InterruptWazero}, sandbox.Spec{}},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			rt, err := sandbox.New(ctx, v.cfg)
			require.NoError(b, err)
			defer rt.Close(ctx)
			mod, err := rt.Compile(ctx, wat.MustLoad("noop"))
			require.NoError(b, err)
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				out, err := rt.Run(ctx, mod, v.spec)
				if err != nil || !out.Success() {
					b.Fatal(out, err)
				}
			}
		})
	}
	b.Run("bare-wazero", BenchmarkBareWazeroNoopBase)
}

// reportCPU reports the process's CPU time (user and system, garbage
// collection included) per op as cpu-ns/op, which a busy machine inflates
// less than ns/op: call its result when the loop is done.
func reportCPU(b *testing.B) func() {
	t0 := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-t0)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
