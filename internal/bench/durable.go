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
)

// Durable measures the durable queue with the noop fixture: tasks/s for a
// pool of 1, 2 and 8 workers draining pre-enqueued tasks from a fresh
// SQLite store (rounds interleaved), and enqueue-to-start latency of tasks
// submitted one at a time while a pool runs.
func Durable(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "durable"}
	n := o.pick(20000, 2000)
	rounds := o.pick(3, 2)

	tmp, err := os.MkdirTemp("", "stintbench-durable-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rt, noop, err := noopRuntime(ctx, sandbox.Config{})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)

	o.logf("durable: enqueueing %d noop tasks into a template store", n)
	template := filepath.Join(tmp, "template", "stint.db")
	submitRate, err := enqueue(ctx, template, noop, nil, n)
	if err != nil {
		return nil, err
	}

	// The variants: pools of 1, 2 and 8 workers, and the store alone
	// (Claim + Complete, no guest) in batches of 1 and of 64.
	type variant struct {
		label   string
		workers int // 0: store only
		batch   int
	}
	vs := []variant{{"pool.Pool, 1 worker", 1, 0}, {"pool.Pool, 2 workers", 2, 0}, {"pool.Pool, 8 workers", 8, 0},
		{"store only, Claim/Complete batches of 1", 0, 1}, {"store only, Claim/Complete batches of 64", 0, 64}}
	series := make([]*Series, len(vs))
	counts := make([]storeCounts, len(vs))
	idx := make([]int, len(vs))
	for i, v := range vs {
		idx[i] = i
		key := fmt.Sprintf("workers=%d", v.workers)
		if v.workers == 0 {
			key = fmt.Sprintf("store-batch=%d", v.batch)
		}
		series[i] = res.NewSeries("durable/tput/"+key, "tasks/s")
	}
	for r := 0; r < rounds; r++ {
		for _, i := range rotate(idx, r) {
			v := vs[i]
			dir := filepath.Join(tmp, fmt.Sprintf("r%d-v%d", r, i))
			path, err := copyStore(template, dir)
			if err != nil {
				return nil, err
			}
			var d time.Duration
			if v.workers > 0 {
				var c storeCounts
				d, c, err = drain(ctx, path, rt, pool.Config{Workers: v.workers}, n)
				counts[i] = counts[i].add(c)
			} else {
				d, err = storeOnly(ctx, path, v.batch, n)
			}
			if err != nil {
				return nil, err
			}
			rate := float64(n) / d.Seconds()
			o.logf("durable: round %d, %s: %.0f tasks/s", r+1, v.label, rate)
			series[i].Values = append(series[i].Values, rate)
			_ = os.RemoveAll(dir)
		}
	}
	t := res.NewTable(fmt.Sprintf("Durable throughput: %d pre-enqueued noop tasks, SQLite store", n),
		"variant", "median tasks/s", "min", "max", "/ 1 worker", "of the 10,000/s goal", "rounds")
	for i, v := range vs {
		s := series[i]
		t.AddRow(v.label, num(s.Median()), num(s.Quantile(0)), num(s.Max()),
			ratio(s.Median(), series[0].Median()), fmt.Sprintf("%.0f%%", 100*s.Median()/10000), fmt.Sprint(s.N()))
	}
	t.Notes = append(t.Notes, fmt.Sprintf(
		"Pool rows: from Pool.Start to Stats().Finished = N (polled every millisecond), every task checked "+
			"succeeded afterwards; the module is compiled before the clock starts. Store-only rows: Claim then "+
			"Complete in a loop on one goroutine, no sandbox. Each round drains a fresh copy of one pre-built "+
			"store; rounds rotate the variants. For reference, enqueueing the %d tasks one Submit (one "+
			"transaction) at a time ran at %.0f tasks/s.", n, submitRate))

	bt := res.NewTable("Where the pool's time goes: its store calls (sums over all rounds)",
		"pool", "tasks per Claim", "tasks per Complete", "write transactions per task",
		"µs in Claim per task", "µs in Complete per task", "wall µs per task")
	for i, v := range vs {
		if v.workers == 0 {
			continue
		}
		c := counts[i]
		tasksDone := float64(c.Completed)
		wall := 1e6 / series[i].Median()
		bt.AddRow(v.label, fmt.Sprintf("%.2f", float64(c.Claimed)/float64(c.Claims)),
			fmt.Sprintf("%.2f", float64(c.Completed)/float64(c.Completes)),
			fmt.Sprintf("%.2f", float64(c.Claims+c.Completes)/tasksDone),
			fmt.Sprintf("%.0f", float64(c.ClaimTime.Microseconds())/tasksDone),
			fmt.Sprintf("%.0f", float64(c.CompleteTime.Microseconds())/tasksDone),
			fmt.Sprintf("%.0f", wall))
	}
	bt.Notes = append(bt.Notes, "Counted by a tasks.Store wrapper around the SQLite store. Claims that found "+
		"nothing count as calls. The store has one writer connection, so Claim and Complete never overlap: when "+
		"their time per task nears the wall time per task, the writer is the bottleneck.")

	// Enqueue-to-start latency.
	m := o.pick(400, 60)
	vias := []string{"pool", "store-wake", "store"}
	for _, via := range vias {
		count := m
		if via == "store" {
			count = max(m/4, 20)
		}
		o.logf("durable: enqueue-to-start latency, %d tasks submitted through the %s", count, via)
		s := res.NewSeries("durable/start-latency/"+via, "ns")
		e2e := res.NewSeries("durable/submit-to-finish/"+via, "ns")
		if err := startLatency(ctx, filepath.Join(tmp, "latency-"+via, "stint.db"), rt, noop, count, via, s, e2e); err != nil {
			return nil, err
		}
	}
	lt := res.NewTable("Enqueue-to-start latency (noop, 2 workers, one submit every 5 ms)",
		"submitted through", "p50 ms", "p99 ms", "max ms", "submit → finished p50 ms", "p99 ms", "tasks")
	for _, via := range vias {
		s, e2e := res.series("durable/start-latency/"+via), res.series("durable/submit-to-finish/"+via)
		label := map[string]string{
			"pool":       "Pool.Submit (wakes the pool)",
			"store-wake": "another Store on the file (as another process), the pool's store listening for wake-ups (runner serve)",
			"store":      "another Store on the file, no wake-ups (the pool polls every 100 ms)",
		}[via]
		lt.AddRow(label, ms(s.Median()), ms(s.P99()), ms(s.Max()), ms(e2e.Median()), ms(e2e.P99()), fmt.Sprint(s.N()))
	}
	lt.Notes = append(lt.Notes, "Latency = the attempt's StartedAt minus the task's CreatedAt (both from the store, "+
		"microsecond precision); submit → finished = FinishedAt minus CreatedAt.")
	return res, nil
}

// noopRuntime is a runtime of cfg with the noop fixture compiled, and the
// fixture; the caller closes the runtime.
func noopRuntime(ctx context.Context, cfg sandbox.Config) (*sandbox.Runtime, []byte, error) {
	noop := wat.MustLoad("noop")
	rt, err := sandbox.New(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := rt.Compile(ctx, noop); err != nil {
		_ = rt.Close(ctx)
		return nil, nil, err
	}
	return rt, noop, nil
}
