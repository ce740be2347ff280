package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// recordedPath is a blocking path run through the durable pool.
type recordedPath struct {
	key, label string
	wasm       []byte
	soft       bool   // Pool.RequestStop instead of Pool.ForceStop
	want       string // the attempt's recorded outcome
}

// stopToRecorded measures, per blocking path a queued task can take, the
// time from the pool's stop (ForceStop, or RequestStop for the cooperative
// path) until the attempt is committed to the SQLite store (Pool.Idle), one
// task at a time on a fresh 1-worker pool. The stdin and blocking-host-call
// paths have no durable form: a queued task's stdin is its stored input,
// and its checkpoint callback is a store write.
func stopToRecorded(ctx context.Context, o Options, res *Result, rt *sandbox.Runtime) error {
	paths := []recordedPath{
		{"loop", "tight loop (loop)", wat.MustLoad("loop"), false, "forced"},
		{"stop_ignore", "call-heavy loop (stop_ignore)", wat.MustLoad("stop_ignore"), false, "forced"},
		{"sleep", "WASI sleep, poll_oneoff (sleep)", wat.MustLoad("sleep"), false, "forced"},
		{"cooperative", "cooperative: Pool.RequestStop (stop_aware)", benchModule("stop_aware_ready"), true, "interrupted"},
	}
	tmp, err := os.MkdirTemp("", "stintbench-stop-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	store, err := sqlite.Open(ctx, filepath.Join(tmp, "stint.db"), sqlite.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	shas := make([]string, len(paths))
	for i, p := range paths {
		if shas[i], err = store.PutModule(ctx, p.wasm); err != nil {
			return err
		}
		if _, err := rt.Compile(ctx, p.wasm); err != nil {
			return err
		}
	}
	n := o.pick(100, 15)
	series := make([]*Series, len(paths))
	for i, p := range paths {
		series[i] = res.NewSeries("stop-recorded/"+p.key, "ns")
	}
	o.logf("stop: %d samples per path through pool.Pool and SQLite", n)
	sample := 0
	err = sampleRoundRobin(series, n, func(i int) (time.Duration, error) {
		sample++
		d, err := stopRecordedOnce(ctx, store, rt, shas[i], paths[i], fmt.Sprintf("sample-%d", sample))
		if err != nil {
			return 0, fmt.Errorf("stop to recorded, %s: %w", paths[i].key, err)
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	t := res.NewTable("Stop latency through the durable pool: stop to the attempt recorded in SQLite",
		"blocking path", "p50 µs", "p99 µs", "max µs", "recorded outcome", "samples")
	for i, p := range paths {
		s := series[i]
		t.AddRow(p.label, us(s.Median()), us(s.P99()), us(s.Max()), p.want, fmt.Sprint(s.N()))
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Each sample: a fresh pool.Pool (1 worker, a queue of its own) on one SQLite store, one task "+
		"submitted through Pool.Submit, started (Stats().Started polled every 100 µs) plus %s, then Pool.ForceStop "+
		"(Pool.RequestStop for the cooperative path) and the time until Pool.Idle, which closes once the attempt is "+
		"committed to the store; every sample's attempt was then checked in the store. stdin and a blocking host call "+
		"have no durable form (a queued task's stdin is its stored input; its checkpoint callback is the store write).",
		2*settle))
	return nil
}

// stopRecordedOnce runs one task of p through a fresh pool, stops the pool
// once the guest runs, and returns the time until the attempt is recorded.
// Each sample has its own queue: the stopped task is queued again, and must
// not be claimed by the next sample's pool.
func stopRecordedOnce(ctx context.Context, store *sqlite.Store, rt *sandbox.Runtime, sha string, p recordedPath, queue string) (time.Duration, error) {
	pool, err := pool.New(store, rt, pool.Config{Workers: 1, Queues: map[string]int{queue: 1}})
	if err != nil {
		return 0, err
	}
	if err := pool.Start(ctx); err != nil {
		return 0, err
	}
	defer pool.Stop(ctx)
	task, _, err := pool.Submit(ctx, tasks.Spec{Module: sha, Queue: queue, Limits: tasks.Limits{Timeout: time.Hour}})
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for pool.Stats().Started < 1 {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("task %d did not start in 10s", task.ID)
		}
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(2 * settle) // instantiate and reach the blocking point
	start := time.Now()
	if p.soft {
		pool.RequestStop()
	} else {
		pool.ForceStop()
	}
	<-pool.Idle()
	d := time.Since(start)
	atts, err := store.Attempts(ctx, task.ID)
	if err != nil {
		return 0, err
	}
	if len(atts) != 1 || atts[0].Outcome != p.want {
		return 0, fmt.Errorf("task %d: attempts %+v, want one %s", task.ID, atts, p.want)
	}
	return d, nil
}
