package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// noopArgs is River's trivial job.
type noopArgs struct{}

// Kind names the job.
func (noopArgs) Kind() string { return "noop" }

// noopWorker records when its first job started and signals each start.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	first   atomic.Int64 // unix ns of the first Work
	started chan time.Time
}

// Work does nothing.
func (w *noopWorker) Work(ctx context.Context, job *river.Job[noopArgs]) error {
	now := time.Now()
	w.first.CompareAndSwap(0, now.UnixNano())
	if w.started != nil {
		w.started <- now
	}
	return nil
}

// quietArgs is the quiet tenant's job of the noisy-neighbour latency: a
// trivial job whose worker signals its start.
type quietArgs struct{}

// Kind names the job.
func (quietArgs) Kind() string { return "quiet" }

// quietWorker signals each start.
type quietWorker struct {
	river.WorkerDefaults[quietArgs]
	started chan time.Time
}

// Work does nothing.
func (w *quietWorker) Work(ctx context.Context, job *river.Job[quietArgs]) error {
	w.started <- time.Now()
	return nil
}

// blockArgs is the job of the kill test: it blocks until cancelled.
type blockArgs struct{}

// Kind names the job.
func (blockArgs) Kind() string { return "block" }

// blockWorker writes "working" on stdout (the child) or signals started
// (the survivor), then blocks until its context ends.
type blockWorker struct {
	river.WorkerDefaults[blockArgs]
	started chan int // attempt numbers
}

// Work blocks.
func (w *blockWorker) Work(ctx context.Context, job *river.Job[blockArgs]) error {
	if w.started != nil {
		w.started <- job.Attempt
	} else {
		fmt.Println("working", job.Attempt)
	}
	<-ctx.Done()
	return ctx.Err()
}

// retryNow retries a failed or rescued job at once, River's best case.
type retryNow struct{}

// NextRetry is now.
func (retryNow) NextRetry(*rivertype.JobRow) time.Time { return time.Now() }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// riverSchema creates a schema with River's tables and a pool on it.
func riverSchema(ctx context.Context, o options) (string, *pgxpool.Pool, func(), error) {
	schema, drop, err := newSchema(ctx, o.dsn, "bench_river_")
	if err != nil {
		return "", nil, nil, err
	}
	pool, err := poolFor(ctx, o.dsn, schema, 0, "bench_"+schema)
	if err != nil {
		drop()
		return "", nil, nil, err
	}
	cleanup := func() { pool.Close(); drop() }
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: quiet})
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		cleanup()
		return "", nil, nil, fmt.Errorf("migrate: %w", err)
	}
	return schema, pool, cleanup, nil
}

// riverThroughput inserts o.n noop jobs with InsertMany, then starts a
// client and times from its first Work to the o.n-th completion event
// (sent once the completion has committed).
func riverThroughput(ctx context.Context, o options, maxWorkers int, cooldown time.Duration) (float64, cpuSample, error) {
	var cpu cpuSample
	schema, pool, cleanup, err := riverSchema(ctx, o)
	if err != nil {
		return 0, cpu, err
	}
	defer cleanup()
	w := &noopWorker{}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers: workers, Schema: schema, Logger: quiet, FetchCooldown: cooldown,
	})
	if err != nil {
		return 0, cpu, err
	}
	insert := func(ctx context.Context, n int, tx pgx.Tx) error {
		params := make([]river.InsertManyParams, 0, 1000)
		for done := 0; done < n; done += cap(params) {
			params = params[:0]
			for range min(cap(params), n-done) {
				params = append(params, river.InsertManyParams{Args: noopArgs{}})
			}
			var err error
			if tx != nil {
				_, err = client.InsertManyTx(ctx, tx, params)
			} else {
				_, err = client.InsertMany(ctx, params)
			}
			if err != nil {
				return fmt.Errorf("insert: %w", err)
			}
		}
		return nil
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: o.n + o.warm + 100, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()
	// Warm-up (-warm): the client started and working o.warm jobs before
	// the measurement, which then counts only the jobs after them (id >
	// warmed); the measured jobs are inserted in one transaction, so that
	// they appear at once, as Stint's one INSERT does.
	var warmed int64
	if o.warm > 0 {
		if err := client.Start(ctx); err != nil {
			return 0, cpu, err
		}
		defer func() { _ = client.Stop(context.Background()) }()
		if err := insert(ctx, o.warm, nil); err != nil {
			return 0, cpu, err
		}
		for n := 0; n < o.warm; n++ {
			select {
			case <-events:
			case <-time.After(5 * time.Minute):
				return 0, cpu, fmt.Errorf("warm-up: only %d of %d jobs completed in 5 minutes", n, o.warm)
			}
		}
		if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river_job`).Scan(&warmed); err != nil {
			return 0, cpu, err
		}
		w.first.Store(0)
	} else if err := insert(ctx, o.n, nil); err != nil {
		return 0, cpu, err
	}
	app := "bench_" + schema
	server0, _, err := backendCPU(ctx, pool, app)
	if err != nil {
		return 0, cpu, err
	}
	load := watchMachine()
	defer load.stop()
	var client0 time.Duration
	if o.warm > 0 {
		// Inserted through a connection of its own, whose backend is not
		// counted (as Stint's INSERT), and the client's CPU counted from
		// the commit on.
		harness, err := poolFor(ctx, o.dsn, schema, 1, "bench_harness")
		if err != nil {
			return 0, cpu, err
		}
		defer harness.Close()
		tx, err := harness.Begin(ctx)
		if err != nil {
			return 0, cpu, err
		}
		if err := insert(ctx, o.n, tx); err != nil {
			_ = tx.Rollback(ctx)
			return 0, cpu, err
		}
		if err := tx.Commit(ctx); err != nil {
			return 0, cpu, err
		}
		client0 = selfCPU()
	} else {
		client0 = selfCPU()
		if err := client.Start(ctx); err != nil {
			return 0, cpu, err
		}
		defer func() { _ = client.Stop(context.Background()) }()
	}
	deadline := time.After(5 * time.Minute)
	var lastEvent time.Time
	for n := 0; n < o.n; {
		select {
		case ev := <-events:
			if ev.Kind == river.EventKindJobCompleted {
				n++
				lastEvent = time.Now()
			}
		case <-deadline:
			return 0, cpu, fmt.Errorf("only %d of %d jobs completed in 5 minutes", n, o.n)
		}
	}
	client1 := selfCPU()
	server1, _, err := backendCPU(ctx, pool, app)
	if err != nil {
		return 0, cpu, err
	}
	cpu = cpuSample{client: (client1 - client0) / time.Duration(o.n), server: (server1 - server0) / time.Duration(o.n)}
	// The end is the last job's end as its worker recorded it
	// (finalized_at, the executor's clock when Work returned), as for
	// Stint: the last completion's commit is not waited for on either
	// side. (Timed to the last EventKindJobCompleted, River paid for its
	// completer's wait of up to 250 ms for a batch of fewer than 100
	// jobs at the end of the run, which Stint's end did not include.)
	last, mid, err := ends(ctx, pool, fmt.Sprintf(`SELECT finalized_at FROM river_job WHERE finalized_at IS NOT NULL AND id > %d ORDER BY finalized_at`, warmed))
	if err != nil {
		return 0, cpu, err
	}
	cpu.mid = mid
	load.stop()
	cpu.restOfMachine(load, time.Unix(0, w.first.Load()), last, o.n)
	fmt.Fprintf(os.Stderr, "River's last completion event came %v after its last job ended\n", lastEvent.Sub(last).Round(time.Millisecond))
	return float64(o.n) / last.Sub(time.Unix(0, w.first.Load())).Seconds(), cpu, nil
}

// riverStart starts a River client on schema with workers, as the latency
// samples use it: the default queue with o.riverWorkers workers, and
// o.cooldown. stop stops it.
func riverStart(ctx context.Context, o options, pool *pgxpool.Pool, schema string, workers *river.Workers) (client *river.Client[pgx.Tx], stop func(), err error) {
	client, err = river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.riverWorkers}},
		Workers: workers, Schema: schema, Logger: quiet, FetchCooldown: o.cooldown,
	})
	if err != nil {
		return nil, nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, nil, err
	}
	return client, func() { _ = client.Stop(context.Background()) }, nil
}

// riverLatency measures k enqueue-to-start samples on an idle client:
// from the start of Insert to the start of Work, one job at a time.
func riverLatency(ctx context.Context, o options, k int) ([]time.Duration, error) {
	schema, pool, cleanup, err := riverSchema(ctx, o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	w := &noopWorker{started: make(chan time.Time, 1)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, stop, err := riverStart(ctx, o, pool, schema, workers)
	if err != nil {
		return nil, err
	}
	defer stop()
	// One job first, not sampled: the client is then listening.
	if _, err := client.Insert(ctx, noopArgs{}, nil); err != nil {
		return nil, err
	}
	<-w.started
	var out []time.Duration
	for range k {
		t0 := time.Now()
		if _, err := client.Insert(ctx, noopArgs{}, nil); err != nil {
			return nil, err
		}
		select {
		case t1 := <-w.started:
			out = append(out, t1.Sub(t0))
		case <-time.After(time.Minute):
			return nil, errors.New("a job did not start within a minute")
		}
	}
	return out, nil
}

// riverNoisyLatency samples k quiet jobs' enqueue-to-start, one at a
// time on the tuned client, each inserted right after noisy trivial jobs
// of another kind (none: the quiet jobs alone). River has no tenants: the
// quiet job waits its turn behind them.
func riverNoisyLatency(ctx context.Context, o options, k, noisy int) ([]time.Duration, error) {
	schema, pool, cleanup, err := riverSchema(ctx, o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	q := &quietWorker{started: make(chan time.Time, 1)}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	river.AddWorker(workers, q)
	client, stop, err := riverStart(ctx, o, pool, schema, workers)
	if err != nil {
		return nil, err
	}
	defer stop()
	params := make([]river.InsertManyParams, noisy)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	var out []time.Duration
	for i := range k + 1 { // the first not sampled: the client is then listening
		if noisy > 0 {
			if _, err := client.InsertMany(ctx, params); err != nil {
				return nil, err
			}
		}
		t0 := time.Now()
		if _, err := client.Insert(ctx, quietArgs{}, nil); err != nil {
			return nil, err
		}
		select {
		case t1 := <-q.started:
			if i > 0 {
				out = append(out, t1.Sub(t0))
			}
		case <-time.After(time.Minute):
			return nil, errors.New("a quiet job did not start within a minute")
		}
	}
	return out, nil
}

// riverKill: a child process (a River client) works a blocking job and is
// SIGKILLed; the time until the job starts again on this process's
// client, the leader, which rescues it (JobTimeout and
// RescueStuckJobsAfter o.lease, retry at once).
func riverKill(ctx context.Context, o options) (time.Duration, error) {
	schema, pool, cleanup, err := riverSchema(ctx, o)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	w := &blockWorker{started: make(chan int, 4)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	// This client starts without the job's queue (so that the child takes
	// the job), and becomes the leader, which runs the rescuer.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{"spare": {MaxWorkers: 1}},
		Workers: workers, Schema: schema, Logger: quiet,
		JobTimeout:           o.lease,
		RescueStuckJobsAfter: o.lease,
		RetryPolicy:          retryNow{},
	})
	if err != nil {
		return 0, err
	}
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer func() { _ = client.Stop(context.Background()) }()
	if err := waitLeader(ctx, pool, client.ID()); err != nil {
		return 0, err
	}
	if _, err := client.Insert(ctx, blockArgs{}, nil); err != nil {
		return 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, "-river-child", schema, "-dsn", o.dsn, "-lease", o.lease.String())
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		return 0, fmt.Errorf("the child ended before working: %v", sc.Err())
	}
	if err := client.Queues().Add(river.QueueDefault, river.QueueConfig{MaxWorkers: 1}); err != nil {
		return 0, err
	}
	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	select {
	case attempt := <-w.started:
		if attempt != 2 {
			return 0, fmt.Errorf("the job restarted as attempt %d, want 2", attempt)
		}
		return time.Since(killed), nil
	case <-time.After(3 * time.Minute):
		return 0, errors.New("the job was not rescued within 3 minutes")
	}
}

// waitLeader waits until the client id leads the schema's River clients.
func waitLeader(ctx context.Context, pool *pgxpool.Pool, id string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var leader string
		err := pool.QueryRow(ctx, `SELECT leader_id FROM river_leader`).Scan(&leader)
		if err == nil && leader == id {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("this client did not become the leader within a minute")
}

// riverChild runs the doomed client of riverKill until it is killed.
func riverChild(dsn, schema string, lease time.Duration) error {
	ctx := context.Background()
	pool, err := poolFor(ctx, dsn, schema, 0, "bench_child")
	if err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &blockWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}},
		Workers: workers, Schema: schema, Logger: quiet,
		JobTimeout: lease, RescueStuckJobsAfter: lease, RetryPolicy: retryNow{},
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done() // never: the parent ends this process with SIGKILL
	return ctx.Err()
}
