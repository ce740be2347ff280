//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox/internal/memory"
)

// TestMemImageInterleaved compares, in one process and interleaved round by
// round, a task with memory images (with and without memory.KeepResident) and with
// data merging alone, for the Go hello guest and a guest with 8 MiB of
// initialized data: per-task p50 (one task at a time) and tasks/s on 2
// goroutines. It is a measurement, not a test: it runs only with
// STINT_MEMIMAGE_BENCH=ROUNDS set, and prints a table (guest, variant,
// p50 µs, p99 µs, CPU µs per task, tasks/s, then the p50, CPU and tasks/s
// ratios to merging alone).
func TestMemImageInterleaved(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("STINT_MEMIMAGE_BENCH"))
	if rounds <= 0 {
		t.Skip("a measurement: set STINT_MEMIMAGE_BENCH=ROUNDS")
	}
	ctx := context.Background()
	hello, err := os.ReadFile(testwasm.GoGuest(t, "hello"))
	require.NoError(t, err)
	const size = 8 << 20
	var probes []int
	for p := 0; p < size; p += 1 << 16 {
		probes = append(probes, p+7)
	}
	data8m := imageGuest(size, size/PageSize+1, size/PageSize+64, 2, probes)
	type variant struct {
		name  string
		keep  uint64
		full  bool // reset the whole image and zero everything past it (before memory.SelectiveReset)
		run   func() error
		lat   []time.Duration
		rates []float64
		cpu   []float64 // CPU time (user + system) per task, µs, one value per round
	}
	compileFor := func(wasm []byte, images bool) func() error {
		memImages.Store(images)
		defer memImages.Store(true)
		rt, err := New(ctx, Config{CacheDir: filepath.Join(testwasm.CompileCacheDir(t), "memimage-bench")})
		require.NoError(t, err)
		t.Cleanup(func() { _ = rt.Close(ctx) })
		mod, err := rt.Compile(ctx, wasm)
		require.NoError(t, err)
		input := []byte("hello, stint\n")
		return func() error {
			out, err := rt.Run(ctx, mod, Spec{Input: input})
			if err != nil {
				return err
			}
			if !out.Success() {
				return fmt.Errorf("%s: %s", out.Kind, out.Message)
			}
			return nil
		}
	}
	for _, g := range []struct {
		name string
		wasm []byte
		n    int
	}{{"hello", hello, 100}, {"data8m", data8m, 100}} {
		img, merged := compileFor(g.wasm, true), compileFor(g.wasm, false)
		vs := []*variant{
			{name: "images, keepResident 0", run: img},
			{name: "images, keepResident 16 MiB", keep: 16 << 20, run: img},
			{name: "images, keepResident 16 MiB, full reset", keep: 16 << 20, full: true, run: img},
			{name: "merged (before)", run: merged},
		}
		for r := range rounds {
			for i := range vs {
				v := vs[(i+r)%len(vs)]
				memory.KeepResident.Store(v.keep)
				memory.SelectiveReset.Store(!v.full)
				for range 5 { // warm the pool for this setting
					require.NoError(t, v.run())
				}
				c0 := cpuTime()
				for range g.n {
					t0 := time.Now()
					require.NoError(t, v.run())
					v.lat = append(v.lat, time.Since(t0))
				}
				v.cpu = append(v.cpu, us(cpuTime()-c0)/float64(g.n))
				v.rates = append(v.rates, rate(t, v.run, 300*time.Millisecond))
			}
		}
		memory.KeepResident.Store(16 << 20)
		memory.SelectiveReset.Store(true)
		base := vs[len(vs)-1]
		for _, v := range vs {
			p50, p99 := pct(v.lat, 50), pct(v.lat, 99)
			fmt.Printf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.2fx | %.2fx | %.2fx |\n", g.name, v.name,
				us(p50), us(p99), medianF(v.cpu), medianF(v.rates), float64(p50)/float64(pct(base.lat, 50)),
				medianF(v.cpu)/medianF(base.cpu), medianF(v.rates)/medianF(base.rates))
		}
	}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rate(t *testing.T, run func() error, d time.Duration) float64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d {
				if err := run(); err != nil {
					t.Error(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

func medianF(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }
