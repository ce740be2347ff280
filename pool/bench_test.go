package pool_test

import (
	"context"
	"path/filepath"
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
	rt, err := sandbox.New(ctx, sandbox.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	wasm := wat.MustLoad("noop")
	if _, err := rt.Compile(ctx, wasm); err != nil {
		b.Fatal(err)
	}
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
