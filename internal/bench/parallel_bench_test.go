package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// parallelWorkers is how many goroutines BenchmarkNoopParallel runs at
// once, as bench/peers's tasks/s row does with -par 2.
const parallelWorkers = 2

// BenchmarkNoopParallel is the no-op task from parallelWorkers goroutines
// at once, through sandbox.Runtime.Run (one Runtime, one Module) and
// through bare wazero with crypto/rand, the tasks/s row of bench/peers,
// and through bare wazero with one P more than workers, as the sandbox
// keeps one free.
// The worker count is fixed (not RunParallel's GOMAXPROCS, which the
// sandbox raises to keep a P free). cpu-ns/op is the process's CPU time
// per task, which a busy machine inflates less than ns/op. Interleave:
//
//	for i in $(seq 5); do go test ./internal/bench -run '^$' -bench '^BenchmarkNoopParallel$' -benchtime 100000x; done
func BenchmarkNoopParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("stint", func(b *testing.B) {
		defer withProcs(parallelWorkers)() // the sandbox raises it
		rt, err := sandbox.New(ctx, sandbox.Config{})
		require.NoError(b, err)
		defer rt.Close(ctx)
		mod, err := rt.Compile(ctx, wat.MustLoad("noop"))
		require.NoError(b, err)
		benchWorkers(b, func() error {
			out, err := rt.Run(ctx, mod, sandbox.Spec{})
			if err == nil && !out.Success() {
				b.Error(out)
			}
			return err
		})
	})
	bare := func(b *testing.B) {
		bare, err := NewBare(ctx, true, "")
		require.NoError(b, err)
		defer bare.Close(ctx)
		cm, err := bare.Compile(ctx, wat.MustLoad("noop"))
		require.NoError(b, err)
		benchWorkers(b, func() error {
			_, err := bare.RunCryptoRand(ctx, cm, nil)
			return err
		})
	}
	b.Run("bare-wazero", func(b *testing.B) {
		defer withProcs(parallelWorkers)()
		bare(b)
	})
	// bare wazero with the P the sandbox keeps free while guests run
	// (interrupt.go: GOMAXPROCS at least running guests + 1): what that
	// guarantee costs when every core runs a guest.
	b.Run("bare-wazero-free-P", func(b *testing.B) {
		defer withProcs(parallelWorkers + 1)()
		bare(b)
	})
}

// benchWorkers calls task b.N times from parallelWorkers goroutines.
func benchWorkers(b *testing.B, task func() error) {
	b.ReportAllocs()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	defer reportCPU(b)()
	for range parallelWorkers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := task(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// withProcs sets GOMAXPROCS to n and returns the function that restores
// it: each variant starts from the same setting, whatever the one before
// left (the sandbox raises it and never lowers it).
func withProcs(n int) (restore func()) {
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}
