package main

import (
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/stint-run/stint/internal/testwasm/wat"
)

// BenchmarkWasmtimeEpochInterleaved measures what wasmtime's epoch
// interruption (its check at every loop header and function entry, the
// peer of Stint's checks mode) costs on compute: the same loop shapes as
// sandbox.BenchmarkInterruptInterleaved (shape_bench.wasm: a one-add loop,
// nested loops, a br_table state machine, call-heavy recursion), each op
// running every shape in wasmtime-go without and with epoch interruption,
// which first in turn. Times are the calling thread's CPU time. Reported:
// each variant's median ns per iteration (per call for tree) and the
// median over ops of the op's epoch/plain ratio:
//
//	cd bench/peers && go test -run XXX -bench BenchmarkWasmtimeEpochInterleaved -benchtime 40x
func BenchmarkWasmtimeEpochInterleaved(b *testing.B) {
	wasm := wat.MustLoad("shape_bench")
	shapes := []string{"loop", "nested", "brtable", "tree"}
	const n = 1 << 19
	type variant struct {
		store *wasmtime.Store
		fns   []*wasmtime.Func
	}
	var variants [2]variant // plain, epoch
	for v := range variants {
		cfg := wasmtime.NewConfig()
		cfg.SetEpochInterruption(v == 1)
		engine := wasmtime.NewEngineWithConfig(cfg)
		mod, err := wasmtime.NewModule(engine, wasm)
		if err != nil {
			b.Fatal(err)
		}
		store := wasmtime.NewStore(engine)
		b.Cleanup(store.Close)
		if v == 1 {
			store.SetEpochDeadline(1 << 40) // never reached: the epoch is never incremented
		}
		inst, err := wasmtime.NewInstance(store, mod, nil)
		if err != nil {
			b.Fatal(err)
		}
		variants[v].store = store
		for _, s := range shapes {
			f := inst.GetFunc(store, s)
			if f == nil {
				b.Fatalf("no export %s", s)
			}
			variants[v].fns = append(variants[v].fns, f)
		}
	}
	times := make([][2][]float64, len(shapes)) // shape, variant, op
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := range b.N {
		for s, shape := range shapes {
			arg, per := int64(n), float64(n)
			if shape == "tree" {
				arg, per = 18, float64(1<<19-1)
			}
			var results [2]any
			for k := range variants {
				v := (i + k) % len(variants)
				start := threadCPU()
				res, err := variants[v].fns[s].Call(variants[v].store, arg)
				t := threadCPU() - start
				if err != nil {
					b.Fatal(err)
				}
				results[v] = res
				times[s][v] = append(times[s][v], float64(t.Nanoseconds())/per)
			}
			if results[0] != results[1] {
				b.Fatalf("%s: %v without epochs, %v with", shape, results[0], results[1])
			}
		}
	}
	for s, shape := range shapes {
		unit := "-ns/iter"
		if shape == "tree" {
			unit = "-ns/call"
		}
		b.ReportMetric(median(times[s][0]), shape+"-plain"+unit)
		b.ReportMetric(median(times[s][1]), shape+"-epoch"+unit)
		r := make([]float64, len(times[s][0]))
		for i := range r {
			r[i] = times[s][1][i] / times[s][0][i]
		}
		b.ReportMetric(median(r), shape+"-epoch-x")
	}
}

// threadCPU is the CPU time the calling thread has used (lock the
// goroutine to its thread), from CLOCK_THREAD_CPUTIME_ID.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return time.Duration(ts.Nano())
}

func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}
