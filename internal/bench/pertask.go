package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// variant is one way of running a task, timed against the others.
type variant struct {
	key, label string
	run        func(ctx context.Context) error
}

// guestCase is a module the per-task benchmark runs.
type guestCase struct {
	name    string
	wasm    []byte
	input   []byte
	samples int // per variant, single goroutine
	tasks   int // per durable round
}

// PerTask measures instantiate + call + close of one task for the noop
// fixture and the Go hello guest: (a) bare wazero with
// close-on-context-done, (a') the same with crypto/rand as the random
// source, (b) bare wazero without close-on-context-done, (c) Stint's
// sandbox.Runtime.Run, all interleaved in one loop; then tasks/s on every
// core (2 goroutines) for (a), (a') and (c), and (d) the durable path
// (SQLite store + pool.Pool with 2 workers).
func PerTask(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "pertask"}
	hello, err := goGuest(o, "hello")
	if err != nil {
		return nil, err
	}
	guests := []guestCase{
		{name: "noop", wasm: wat.MustLoad("noop"), samples: o.pick(5000, 600), tasks: o.pick(4000, 500)},
		{name: "hello (Go)", wasm: hello, input: []byte("hello, stint\n"), samples: o.pick(250, 25), tasks: o.pick(300, 30)},
	}

	cache := filepath.Join(o.CacheDir, "wazero")
	a, err := NewBare(ctx, true, filepath.Join(cache, "bare-close"))
	if err != nil {
		return nil, err
	}
	defer a.Close(ctx)
	b, err := NewBare(ctx, false, filepath.Join(cache, "bare-noclose"))
	if err != nil {
		return nil, err
	}
	defer b.Close(ctx)
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: filepath.Join(cache, "stint")})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)

	lat := res.NewTable("Per-task cost, one goroutine (instantiate + _start + close)",
		"guest", "variant", "p50 µs", "p99 µs", "p50 / (a)", "p99 / (a)", "p50 / (a')", "alloc KiB/task", "samples")
	thr := res.NewTable("Tasks/s on all cores (2 goroutines or 2 pool workers)",
		"guest", "variant", "median tasks/s", "min", "max", "/ (a)", "/ (a')", "rounds")

	for _, g := range guests {
		o.logf("per-task: compiling %s", g.name)
		cmA, err := a.Compile(ctx, g.wasm)
		if err != nil {
			return nil, err
		}
		cmB, err := b.Compile(ctx, g.wasm)
		if err != nil {
			return nil, err
		}
		mod, err := rt.Compile(ctx, g.wasm)
		if err != nil {
			return nil, err
		}
		vs := []variant{
			{"a", "(a) bare wazero, close-on-ctx-done", func(ctx context.Context) error {
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				_, err := a.Run(ctx, cmA, g.input)
				return err
			}},
			{"a-rand", "(a') = (a) + WithRandSource(crypto/rand)", func(ctx context.Context) error {
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				_, err := a.RunCryptoRand(ctx, cmA, g.input)
				return err
			}},
			{"b", "(b) bare wazero, no close-on-ctx-done", func(ctx context.Context) error {
				_, err := b.Run(ctx, cmB, g.input)
				return err
			}},
			{"c", "(c) Stint sandbox.Runtime.Run", func(ctx context.Context) error {
				out, err := rt.Run(ctx, mod, sandbox.Spec{Input: g.input})
				if err == nil && !out.Success() {
					err = fmt.Errorf("stint run: %s", out)
				}
				return err
			}},
		}

		o.logf("per-task: %s, %d samples per variant, interleaved", g.name, g.samples)
		series, err := interleave(ctx, res, "pertask/"+g.name, vs, g.samples)
		if err != nil {
			return nil, err
		}
		base := series[0]
		for i, v := range vs {
			s := series[i]
			alloc, err := allocPerRun(ctx, v.run, max(g.samples/10, 10))
			if err != nil {
				return nil, err
			}
			lat.AddRow(g.name, v.label, us(s.Median()), us(s.P99()),
				ratio(s.Median(), base.Median()), ratio(s.P99(), base.P99()), ratio(s.Median(), series[1].Median()),
				fmt.Sprintf("%.1f", alloc/1024), fmt.Sprint(s.N()))
		}

		rounds := o.pick(3, 2)
		round := o.pickDur(time.Second, 300*time.Millisecond)
		o.logf("per-task: %s, tasks/s on 2 goroutines, %d rounds of %s per variant", g.name, rounds, round)
		// (a), (a') and (c) on 2 goroutines, rounds rotated; then (d).
		tvs := []variant{vs[0], vs[1], vs[3]}
		tput := make([]*Series, len(tvs))
		for i, v := range tvs {
			tput[i] = res.NewSeries("pertask/"+g.name+"/tput/"+v.key, "tasks/s")
		}
		for r := 0; r < rounds; r++ {
			for _, i := range rotate([]int{0, 1, 2}, r) {
				rate, err := throughput(ctx, round, 2, tvs[i].run)
				if err != nil {
					return nil, err
				}
				tput[i].Values = append(tput[i].Values, rate)
			}
		}
		dur := res.NewSeries("pertask/"+g.name+"/tput/d", "tasks/s")
		o.logf("per-task: %s, durable pool (2 workers), %d rounds of %d tasks", g.name, rounds, g.tasks)
		for r := 0; r < rounds; r++ {
			rate, err := durableRound(ctx, rt, g.wasm, g.input, g.tasks, 2)
			if err != nil {
				return nil, err
			}
			dur.Values = append(dur.Values, rate)
		}
		tvs = append(tvs, variant{label: "(d) Stint durable: SQLite + pool.Pool, 2 workers"})
		for i, s := range append(tput, dur) {
			thr.AddRow(g.name, tvs[i].label, num(s.Median()), num(s.Quantile(0)), num(s.Max()),
				ratio(s.Median(), tput[0].Median()), ratio(s.Median(), tput[1].Median()), fmt.Sprint(s.N()))
		}
	}
	lat.Notes = append(lat.Notes, fmt.Sprintf(
		"GOGC=%s, GOMAXPROCS=%d. Variants run interleaved, one task each in turn (order rotated every round). "+
			"(a) uses a cancellable context per task, (b) context.Background; (a') is (a) with crypto/rand as the "+
			"random source instead of wazero's default, which seeds a math/rand generator per instance. (c) also "+
			"sets the wall and monotonic clocks, crypto/rand, a ctx-aware stdin and sleep, the memory-budget allocator and the stint host module. "+
			"alloc KiB/task: Go heap bytes allocated per task, measured in a separate, untimed pass.",
		gogc(), runtime.GOMAXPROCS(0)))
	thr.Notes = append(thr.Notes,
		"Rounds rotate (a), (a') and (c), each running for "+o.pickDur(time.Second, 300*time.Millisecond).String()+"; (d) drains a fresh SQLite store of pre-enqueued tasks with pool.Pool "+
			"(2 workers, the module compiled beforehand) and counts from Pool.Start to the last task recorded.")
	return res, nil
}

// interleave runs each variant n times, one of each in turn (the order
// rotated every round so none always goes first), after a short warm-up,
// and returns one series of per-run nanoseconds per variant.
func interleave(ctx context.Context, res *Result, prefix string, vs []variant, n int) ([]*Series, error) {
	series := make([]*Series, len(vs))
	for i, v := range vs {
		series[i] = res.NewSeries(prefix+"/"+v.key, "ns")
	}
	idx := make([]int, len(vs))
	for i := range idx {
		idx[i] = i
	}
	warm := max(n/20, 3)
	for r := -warm; r < n; r++ {
		for _, i := range rotate(idx, r) {
			start := time.Now()
			if err := vs[i].run(ctx); err != nil {
				return nil, fmt.Errorf("%s: %w", vs[i].label, err)
			}
			if r >= 0 {
				series[i].AddDuration(time.Since(start))
			}
		}
	}
	return series, nil
}

// rotate returns xs rotated left by r (mod len), as a new slice.
func rotate(xs []int, r int) []int {
	n := len(xs)
	k := ((r % n) + n) % n
	return append(append([]int{}, xs[k:]...), xs[:k]...)
}

// throughput runs fn on `workers` goroutines for d and returns runs/s.
func throughput(ctx context.Context, d time.Duration, workers int, fn func(context.Context) error) (float64, error) {
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	stop := make(chan struct{})
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := fn(ctx); err != nil {
					errs[w] = err
					return
				}
				n.Add(1)
			}
		}()
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(n.Load()) / elapsed.Seconds(), nil
}

// allocPerRun returns the Go heap bytes allocated per run of fn, over n
// runs on this goroutine (other goroutines' allocations count too: run it
// when nothing else is).
func allocPerRun(ctx context.Context, fn func(context.Context) error, n int) (float64, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		if err := fn(ctx); err != nil {
			return 0, err
		}
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(n), nil
}
