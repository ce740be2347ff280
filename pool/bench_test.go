package pool_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// BenchmarkPoolNoop drains a fresh SQLite store of noop tasks with a pool
// of 2 workers and reports tasks/s (b.N rounds of 1,000 tasks). Compare
// variants interleaved in one run (docs/benchmarks.md, "How to read the
// ratios").
func BenchmarkPoolNoop(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	rt, wasm := noopRuntime(b)
	var total float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{Exclusive: true})
		if err != nil {
			b.Fatal(err)
		}
		sha, err := store.PutModule(ctx, wasm)
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]int64, 0, n)
		for j := 0; j < n; j++ {
			t, _, err := store.Submit(ctx, tasks.Spec{Module: sha})
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, t.ID)
		}
		p, err := pool.New(store, rt, pool.Config{Workers: 2})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := p.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			if t, err := p.Wait(ctx, id); err != nil || t.State != tasks.StateSucceeded {
				b.Fatalf("task %d: %v %v", id, t.State, err)
			}
		}
		total += float64(n) / time.Since(start).Seconds()
		b.StopTimer()
		if err := p.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		_ = store.Close()
	}
	b.ReportMetric(total/float64(b.N), "tasks/s")
}

// markCounter is a store that counts the pool's MarkBegun calls and the
// leases they carry, and with skip writes none of them (what the pool cost
// before it marked begun attempts).
type markCounter struct {
	tasks.Store
	skip          bool
	calls, leases int
	mu            sync.Mutex
}

func (m *markCounter) MarkBegun(ctx context.Context, ls []tasks.Lease) error {
	m.mu.Lock()
	m.calls++
	m.leases += len(ls)
	m.mu.Unlock()
	if m.skip {
		return nil
	}
	return m.Store.MarkBegun(ctx, ls)
}

// BenchmarkPoolMarkBegun: what marking the attempts workers began
// (Store.MarkBegun, at most every BegunEvery) costs a pool of 2 workers
// draining 20,000 noop tasks from SQLite: each round drains two fresh
// stores, with the marks written and with them skipped, in alternating
// order, and reports both rates' medians, the median of the rounds'
// ratios (the one to read on a busy machine) and the marks written per
// task.
func BenchmarkPoolMarkBegun(b *testing.B) {
	const n = 20000
	ctx := context.Background()
	rt, wasm := noopRuntime(b)
	drain := func(skip bool) (rate float64, calls int) {
		store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{Exclusive: true})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		sha, err := store.PutModule(ctx, wasm)
		if err != nil {
			b.Fatal(err)
		}
		specs := make([]tasks.Spec, n)
		for i := range specs {
			specs[i] = tasks.Spec{Module: sha}
		}
		subs, err := tasks.SubmitMany(ctx, store, specs)
		if err != nil {
			b.Fatal(err)
		}
		mc := &markCounter{Store: store, skip: skip}
		p, err := pool.New(mc, rt, pool.Config{Workers: 2})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := p.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for _, s := range subs {
			if t, err := p.Wait(ctx, s.Task.ID); err != nil || t.State != tasks.StateSucceeded {
				b.Fatalf("task %d: %v %v", s.Task.ID, t.State, err)
			}
		}
		rate = n / time.Since(start).Seconds()
		if err := p.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		mc.mu.Lock()
		defer mc.mu.Unlock()
		return rate, mc.calls
	}
	var marked, skipped []float64
	calls := 0
	for i := 0; i < b.N; i++ {
		for _, skip := range []bool{i%2 == 1, i%2 == 0} {
			rate, c := drain(skip)
			if skip {
				skipped = append(skipped, rate)
			} else {
				marked, calls = append(marked, rate), calls+c
			}
		}
	}
	ratios := make([]float64, len(marked))
	for i := range marked {
		ratios[i] = marked[i] / skipped[i]
	}
	b.Logf("tasks/s marked %.0f, unmarked %.0f", marked, skipped)
	b.ReportMetric(median(marked), "tasks/s-marked")
	b.ReportMetric(median(ratios), "marked/unmarked")
	b.ReportMetric(median(skipped), "tasks/s-unmarked")
	b.ReportMetric(float64(calls)/float64(n*len(marked)), "marks/task")
}

// noopRuntime is a sandbox runtime, closed when b ends, with the noop
// fixture compiled in it, and the fixture.
func noopRuntime(b *testing.B) (*sandbox.Runtime, []byte) {
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close(ctx) })
	wasm := wat.MustLoad("noop")
	if _, err := rt.Compile(ctx, wasm); err != nil {
		b.Fatal(err)
	}
	return rt, wasm
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
