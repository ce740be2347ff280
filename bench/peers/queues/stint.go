package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// runner is a `runner serve` child process.
type runner struct {
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// startRunner starts `runner serve` on the store URL as owner and waits
// for its "runner ready" log line.
func startRunner(o options, url, owner string, extra ...string) (*runner, error) {
	dir, err := os.MkdirTemp("", "stint-queues-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data-dir", dir, "--http-addr", "", "--workers", fmt.Sprint(o.stintWorkers),
		"--store", url, "--owner", owner, "--log-level", "info"}, extra...)
	cmd := exec.Command(o.runner, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &runner{cmd: cmd, dir: dir, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "runner ready") {
				seen = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		if !seen {
			close(ready)
		}
	}()
	go func() { _ = cmd.Wait(); close(r.done) }()
	select {
	case <-ready:
	case <-time.After(time.Minute):
	}
	select {
	case <-r.done:
		r.stop()
		return nil, fmt.Errorf("runner %s ended before it was ready", owner)
	default:
	}
	return r, nil
}

// stop ends the runner with SIGTERM (SIGKILL after 30 s) and removes its
// data directory.
func (r *runner) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	_ = os.RemoveAll(r.dir)
}

// stintSchema opens a Stint store on a fresh schema; it returns the store,
// the store URL a runner is given and a cleanup that closes and drops it.
func stintSchema(ctx context.Context, o options) (*postgres.Store, string, func(), error) {
	schema, url, drop, err := stintFresh(ctx, o)
	if err != nil {
		return nil, "", nil, err
	}
	s, err := postgres.Open(ctx, o.dsn, postgres.Options{Schema: schema})
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	return s, url, func() { _ = s.Close(); drop() }, nil
}

// stintFresh makes a fresh schema and has the runner measured (o.runner)
// create its store there, at the runner's schema version; it returns the
// schema, the store URL a runner is given and a cleanup that drops it.
// A runner refuses a schema newer than it knows, so that a runner of an
// older version (-runner-b) is started before the harness opens the store
// (postgres.Open, which brings the schema to this package's version as a
// rolling upgrade would, leaving the running runner's statements working).
func stintFresh(ctx context.Context, o options) (string, string, func(), error) {
	schema, drop, err := newSchema(ctx, o.dsn, "bench_stint_")
	if err != nil {
		return "", "", nil, err
	}
	url := withSearchPath(o.dsn, schema) + "&application_name=bench_" + schema + o.urlExtra
	dir, err := os.MkdirTemp("", "stint-queues-")
	if err != nil {
		drop()
		return "", "", nil, err
	}
	defer os.RemoveAll(dir)
	if out, err := exec.CommandContext(ctx, o.runner, "tasks", "list", "--store", url, "--data-dir", dir).CombinedOutput(); err != nil {
		drop()
		return "", "", nil, fmt.Errorf("create the store with %s: %v: %s", o.runner, err, out)
	}
	return schema, url, drop, nil
}

// stintThroughput starts k runners, then queues o.n noop tasks in one
// INSERT (the harness's bulk load, not Submit), and times from the first
// attempt's start to the last attempt's end as the runners recorded them
// (in attempts rows, or in the task rows of first-try successes).
func stintThroughput(ctx context.Context, o options, k int) (float64, cpuSample, error) {
	var cpu cpuSample
	schema, url, drop, err := stintFresh(ctx, o)
	if err != nil {
		return 0, cpu, err
	}
	defer drop()
	var rs []*runner
	defer func() {
		for _, r := range rs {
			r.stop()
		}
	}()
	for i := range k {
		r, err := startRunner(o, url, fmt.Sprintf("bench-%d", i))
		if err != nil {
			return 0, cpu, err
		}
		rs = append(rs, r)
	}
	s, err := postgres.Open(ctx, o.dsn, postgres.Options{Schema: schema})
	if err != nil {
		return 0, cpu, err
	}
	defer s.Close()
	sha, err := s.PutModule(ctx, wat.MustLoad("noop"))
	if err != nil {
		return 0, cpu, err
	}
	pool, err := poolFor(ctx, o.dsn, s.Schema(), 1, "bench_harness")
	if err != nil {
		return 0, cpu, err
	}
	defer pool.Close()
	app := "bench_" + s.Schema()
	runnersCPU := func() (d time.Duration) {
		for _, r := range rs {
			d += procCPU(r.cmd.Process.Pid)
		}
		return d
	}
	// Warm-up: the same kind of load, worked and waited for before the
	// measurement, which then counts only the tasks after it (id > warmed).
	var warmed int64
	if o.warm > 0 {
		if err := stintLoad(ctx, pool, s, sha, o.warm, o.stintTenants); err != nil {
			return 0, cpu, err
		}
		if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM tasks`).Scan(&warmed); err != nil {
			return 0, cpu, err
		}
	}
	server0, _, err := backendCPU(ctx, pool, app)
	if err != nil {
		return 0, cpu, err
	}
	client0 := runnersCPU()
	load := watchMachine()
	defer load.stop()
	if err := stintLoad(ctx, pool, s, sha, o.n, o.stintTenants); err != nil {
		return 0, cpu, err
	}
	client1 := runnersCPU()
	server1, _, err := backendCPU(ctx, pool, app)
	if err != nil {
		return 0, cpu, err
	}
	cpu = cpuSample{client: (client1 - client0) / time.Duration(o.n), server: (server1 - server0) / time.Duration(o.n)}
	var done int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE state = 'succeeded' AND id > $1`, warmed).Scan(&done); err != nil {
		return 0, cpu, err
	}
	if done != o.n {
		return 0, cpu, fmt.Errorf("only %d of %d tasks succeeded", done, o.n)
	}
	// The attempts: rows, and (schema version 8) first-try successes kept
	// in their task rows.
	attempts := fmt.Sprintf(`(SELECT started AS s, ended AS e FROM attempts WHERE task_id > %d
		UNION ALL SELECT started_at, att_ended FROM tasks WHERE att_owner IS NOT NULL AND id > %d) a`, warmed, warmed)
	var first time.Time
	if err := pool.QueryRow(ctx, `SELECT min(s) FROM `+attempts).Scan(&first); err != nil {
		return 0, cpu, err
	}
	last, mid, err := ends(ctx, pool, `SELECT e FROM `+attempts+` ORDER BY e`)
	if err != nil {
		return 0, cpu, err
	}
	cpu.mid = mid
	load.stop()
	cpu.restOfMachine(load, first, last, o.n)
	return float64(o.n) / last.Sub(first).Seconds(), cpu, nil
}

// stintLatency measures k enqueue-to-start samples on one idle runner:
// from the start of Submit (which sends the wake-up) to the attempt's
// start as the runner recorded it, one task at a time.
func stintLatency(ctx context.Context, o options, k int) ([]time.Duration, error) {
	return stintNoisyLatency(ctx, o, k, -1)
}

// stintNoisyLatency is stintLatency with tenants: each sampled task is the
// quiet tenant's, submitted right after noisy trivial tasks of a noisy
// tenant (0: the quiet tenant alone; -1: no tenants at all). The runner
// claims tenants in turn, so the noisy backlog, which grows by noisy
// tasks a sample, should delay the quiet task by about one task per worker.
func stintNoisyLatency(ctx context.Context, o options, k, noisy int) ([]time.Duration, error) {
	s, url, cleanup, err := stintSchema(ctx, o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	sha, err := s.PutModule(ctx, wat.MustLoad("noop"))
	if err != nil {
		return nil, err
	}
	r, err := startRunner(o, url, "latency")
	if err != nil {
		return nil, err
	}
	defer r.stop()
	quietSpec := tasks.Spec{Module: sha, MaxAttempts: 1}
	var noisySpecs []tasks.Spec
	if noisy >= 0 {
		quietSpec.Tenant = "quiet"
		noisySpecs = slices.Repeat([]tasks.Spec{{Module: sha, MaxAttempts: 1, Tenant: "noisy"}}, noisy)
	}
	one := func() (time.Duration, error) {
		if len(noisySpecs) > 0 {
			if _, err := s.SubmitMany(ctx, noisySpecs); err != nil {
				return 0, err
			}
		}
		t0 := time.Now()
		task, _, err := s.Submit(ctx, quietSpec)
		if err != nil {
			return 0, err
		}
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			got, err := s.Get(ctx, task.ID)
			if err != nil {
				return 0, err
			}
			if got.State == tasks.StateSucceeded {
				atts, err := s.Attempts(ctx, task.ID)
				if err != nil || len(atts) == 0 {
					return 0, fmt.Errorf("attempts: %v", err)
				}
				return atts[0].StartedAt.Sub(t0), nil
			}
			time.Sleep(2 * time.Millisecond)
		}
		return 0, errors.New("a task did not succeed within a minute")
	}
	if _, err := one(); err != nil { // not sampled: the module is compiled
		return nil, err
	}
	var out []time.Duration
	for range k {
		d, err := one()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// stintKill: a runner works a task that sleeps and is SIGKILLed; the time
// until another runner holds the task (claimed it as attempt 2), polled
// every 5 ms.
func stintKill(ctx context.Context, o options) (time.Duration, error) {
	s, url, cleanup, err := stintSchema(ctx, o)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	sha, err := s.PutModule(ctx, wat.MustLoad("sleep"))
	if err != nil {
		return 0, err
	}
	lease := []string{"--lease", o.lease.String()}
	doomed, err := startRunner(o, url, "doomed", lease...)
	if err != nil {
		return 0, err
	}
	defer doomed.stop()
	task, _, err := s.Submit(ctx, tasks.Spec{Module: sha, MaxAttempts: 3, Limits: tasks.Limits{Timeout: 10 * time.Minute}})
	if err != nil {
		return 0, err
	}
	holds := func(owner string, attempt int) (bool, error) {
		got, err := s.Get(ctx, task.ID)
		return err == nil && got.State == tasks.StateRunning && got.LeaseOwner == owner && got.Attempt == attempt, err
	}
	if err := pollFor(time.Minute, func() (bool, error) { return holds("doomed", 1) }); err != nil {
		return 0, err
	}
	other, err := startRunner(o, url, "other", lease...)
	if err != nil {
		return 0, err
	}
	defer other.stop()
	killed := time.Now()
	if err := doomed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	if err := pollFor(time.Minute, func() (bool, error) { return holds("other", 2) }); err != nil {
		return 0, err
	}
	return time.Since(killed), nil
}

// pollFor calls ok every 5 ms until it is true, fails, or d has passed.
func pollFor(d time.Duration, ok func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		done, err := ok()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("not reached within %v", d)
}

// stintLoad inserts n trivial tasks of module sha (spread over tenants
// tenants when tenants > 0) with one INSERT, wakes the runners, and waits
// until none is queued or running.
func stintLoad(ctx context.Context, pool *pgxpool.Pool, s *postgres.Store, sha string, n, tenants int) error {
	if _, err := pool.Exec(ctx, `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at, tenant)
		SELECT $1, 1, 'default', now(), 'queued', now(), now(), CASE WHEN $3::integer > 0 THEN 't' || (i % $3::integer) ELSE '' END
		FROM generate_series(1, $2) i`, sha, n, tenants); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	// The wake-up Stint's own submits send (SubmitMany, Submit): without
	// it each runner found the load at its next poll, up to 100 ms apart,
	// and with several runners that gap was much of a run's time.
	if _, err := pool.Exec(ctx, "NOTIFY "+pgx.Identifier{s.Channel()}.Sanitize()); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	// Polled with two probes of the partial indexes of queued and running
	// tasks, not a count over the table (which, every 50 ms, took CPU
	// from the run measured); counted once at the end.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var open bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE state = 'queued')
			OR EXISTS (SELECT 1 FROM tasks WHERE state = 'running')`).Scan(&open); err != nil {
			return err
		}
		if !open {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("tasks still queued or running after 5 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
