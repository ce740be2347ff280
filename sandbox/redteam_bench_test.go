package sandbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// leafRunModule is the red team's second shape of issue 37 at its size: a
// body of m calls to a leaf of 680 dependent loads that chase a cycle
// through 32 MiB (a stride of 1,000,003 words, so each load is on another
// page and misses the cache), called in a loop forever.
func leafRunModule(m int) []byte {
	const words, stride = 1 << 23, 1_000_003
	w := wasmtest.Cat
	i32 := func(v int64) []byte { return w([]byte{0x41}, wasmtest.SLEB(v)) }
	// init: for i in 0..words: mem[i*4] = ((i+stride) & (words-1)) * 4
	initCode := w([]byte{0x03, 0x40, 0x20, 0}, i32(2), []byte{0x74, 0x20, 0}, i32(stride), []byte{0x6a}, i32(words-1),
		[]byte{0x71}, i32(2), []byte{0x74, 0x36, 2, 0, 0x20, 0}, i32(1), []byte{0x6a, 0x22, 0}, i32(words),
		[]byte{0x49, 0x0d, 0, 0x0b}) // loop: (i<<2) ((i+S)&(N-1))<<2 i32.store; i++ (tee); br_if i < N
	leaf := w([]byte{0x20, 0}, wasmtest.Cat(slices.Repeat([][]byte{{0x28, 2, 0}}, 680)...), []byte{0x0b})
	run := w([]byte{0x20, 0}, wasmtest.Cat(slices.Repeat([][]byte{{0x10, 0}}, m)...), []byte{0x0b})
	start := w(initCode, []byte{0x03, 0x40}, i32(0), []byte{0x10, 1, 0x1a, 0x0c, 0, 0x0b, 0x0b})
	return wasmtest.Module(
		wasmtest.Sec(1, wasmtest.Vec(wasmtest.FuncType([]byte{0x7f}, []byte{0x7f}), wasmtest.FuncType(nil, nil))),
		wasmtest.Sec(3, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0), wasmtest.LEB(1))),
		wasmtest.Sec(5, wasmtest.Vec([]byte{0, 0x80, 0x04})), // 512 pages: 32 MiB
		wasmtest.Sec(7, wasmtest.Vec(w(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(2)))),
		wasmtest.Sec(10, wasmtest.Vec(wasmtest.FBody(leaf...), wasmtest.FBody(run...), wasmtest.FBodyLocals([][2]uint64{{1, 0x7f}}, start...))),
	)
}

// BenchmarkRedTeamStop: how long past a 1 s attempt timeout the red
// team's leaf-run shape of issue 37 ends, at m = 300,000 calls in one body
// (21.6 s past it under rewrite version 21), in both interrupt modes;
// reported: the median and the most over the runs, in ms.
//
//	go test ./sandbox -run XXX -bench BenchmarkRedTeamStop -benchtime 5x
func BenchmarkRedTeamStop(b *testing.B) {
	wasm := leafRunModule(300_000)
	for _, mode := range sandbox.InterruptModes() {
		lim := sandbox.DefaultModuleLimits()
		lim.MaxFunctionSize = 1 << 20
		rt, err := sandbox.New(context.Background(), sandbox.Config{Interrupt: mode, ModuleLimits: lim})
		require.NoError(b, err)
		b.Cleanup(func() { _ = rt.Close(context.Background()) })
		mod, err := rt.Compile(context.Background(), wasm)
		require.NoError(b, err)
		b.Run(string(mode), func(b *testing.B) {
			var over []time.Duration
			for range b.N {
				start := time.Now()
				out, err := rt.Run(context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{Timeout: time.Second, MemoryBytes: 64 << 20}})
				require.NoError(b, err)
				require.Equal(b, sandbox.KindTimedOut, out.Kind, out.Message)
				over = append(over, time.Since(start)-time.Second)
			}
			slices.Sort(over)
			b.ReportMetric(float64(over[len(over)/2].Microseconds())/1e3, "past-deadline-p50-ms")
			b.ReportMetric(float64(over[len(over)-1].Microseconds())/1e3, "past-deadline-max-ms")
		})
	}
}
