// Command queues compares Stint's PostgreSQL queue with River's on the
// same PostgreSQL, in one run: trivial jobs per second (the jobs inserted
// before, then the work timed), enqueue-to-start latency, and the time from
// a worker's SIGKILL to its job running elsewhere. Stint runs as real
// `runner serve` processes (1, 2 and 3 on one schema); River as a client
// in this process (and, for the kill, in a child process: this binary
// re-executed with -river-child). Rounds are interleaved (River, Stint x1,
// x2, x3, then again) so that the noise of a shared machine falls on all.
//
//	make build && cd bench/peers && go run ./queues -runner ../../bin/runner
//
// It needs a PostgreSQL where it may create schemas: -dsn, default
// $STINT_TEST_POSTGRES. Each measurement uses a schema of its own, dropped
// after.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type options struct {
	dsn          string
	runner       string
	n            int
	rounds       int
	latN         int
	noisyN       int // quiet-tenant samples per system and variant (0: skip)
	noisy        int // noisy jobs enqueued before each quiet one
	killN        int
	riverWorkers int
	stintWorkers int
	warm         int
	// stintTenants spreads Stint's throughput jobs over that many tenants
	// (0: none), so that its runners claim fairly (tasks/fair.go).
	stintTenants int
	// fairRow adds a Stint variant, one runner, whose jobs are spread over
	// that many tenants (0: none): fair claims beside ordered ones, in the
	// same rounds.
	fairRow     int
	lease       time.Duration
	out         string
	commandLine string
	skipKill    bool
	only        string
	runnerB     string
	urlExtra    string
	bParams     string
	cooldown    time.Duration
	runners     string
}

func main() {
	var o options
	child := flag.String("river-child", "", "internal: run a River client on this schema that works one job and blocks")
	flag.StringVar(&o.dsn, "dsn", os.Getenv("STINT_TEST_POSTGRES"), "PostgreSQL URL (default $STINT_TEST_POSTGRES)")
	flag.StringVar(&o.runner, "runner", "../../bin/runner", "the runner binary (make build)")
	flag.IntVar(&o.n, "n", 10000, "trivial jobs per throughput measurement")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved throughput rounds")
	flag.IntVar(&o.latN, "lat-n", 200, "enqueue-to-start samples per system")
	flag.IntVar(&o.noisyN, "noisy-n", 100, "quiet-tenant enqueue-to-start samples per system, alone and beside a noisy tenant (0: skip)")
	flag.IntVar(&o.noisy, "noisy", 100, "jobs the noisy tenant enqueues just before each quiet one")
	flag.IntVar(&o.killN, "kill-n", 3, "SIGKILL-to-running-elsewhere samples per system")
	flag.IntVar(&o.riverWorkers, "river-workers", 1000, "River's MaxWorkers of the queue in the tuned configuration (the other is River's defaults, MaxWorkers 100)")
	flag.IntVar(&o.stintWorkers, "stint-workers", 2, "--workers of each runner serve")
	flag.IntVar(&o.warm, "warm", 10000, "trivial jobs each system works, unmeasured, before each throughput measurement, as a long-running service would have (Stint: the runners; River: a client on the same pool)")
	flag.IntVar(&o.stintTenants, "stint-tenants", 0, "spread Stint's throughput jobs over this many tenants, so that its claims are fair (0: none)")
	flag.IntVar(&o.fairRow, "fair-row", 2, "also measure one runner with its jobs spread over this many tenants (fair claims), interleaved with the rest (0: no such row)")
	flag.DurationVar(&o.lease, "lease", 2*time.Second, "Stint's --lease, River's JobTimeout and RescueStuckJobsAfter in the kill test")
	flag.StringVar(&o.out, "out", "", "directory to write queues.md into (none if empty)")
	flag.StringVar(&o.runnerB, "runner-b", "", "a second runner binary, measured as \"Stint B\" interleaved with the first (to compare two versions)")
	flag.StringVar(&o.bParams, "b-params", "", "connection parameters added to Stint B's store URL (k=v&k=v), to compare settings")
	flag.StringVar(&o.only, "only", "", "measure only river or stint")
	flag.DurationVar(&o.cooldown, "river-fetch-cooldown", time.Millisecond, "River's FetchCooldown in the tuned configuration (River's default: 100ms, its minimum 1ms)")
	flag.StringVar(&o.runners, "runners", "1,2,3", "the numbers of `runner serve` on one schema measured (comma-separated)")
	flag.BoolVar(&o.skipKill, "skip-kill", false, "skip the kill measurements (River's take up to 30 s each)")
	flag.Parse()
	if *child != "" {
		if err := riverChild(o.dsn, *child, o.lease); err != nil {
			fmt.Fprintln(os.Stderr, "river child:", err)
			os.Exit(1)
		}
		return
	}
	if o.dsn == "" {
		fmt.Fprintln(os.Stderr, "queues: set -dsn or STINT_TEST_POSTGRES to a postgres:// URL")
		os.Exit(2)
	}
	abs, err := filepath.Abs(o.runner)
	if err == nil {
		o.runner = abs
	}
	if _, err := os.Stat(o.runner); err != nil {
		fmt.Fprintf(os.Stderr, "queues: runner binary: %v (run make build)\n", err)
		os.Exit(2)
	}
	o.commandLine = "go run ./queues " + strings.Join(os.Args[1:], " ")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "queues:", err)
		os.Exit(1)
	}
}

// results holds every sample of the run.
type results struct {
	rate    map[string][]float64 // system -> jobs/s per round
	cpu     map[string][]cpuSample
	lat     map[string][]time.Duration
	noisy   map[string][]time.Duration // "River alone", "River beside", "Stint alone", "Stint beside"
	kill    map[string][]time.Duration
	names   []string // throughput systems in order
	started time.Time
	ended   time.Time
}

func run(o options) error {
	ctx := context.Background()
	r := results{rate: map[string][]float64{}, cpu: map[string][]cpuSample{}, lat: map[string][]time.Duration{}, noisy: map[string][]time.Duration{}, kill: map[string][]time.Duration{}, started: time.Now()}
	systems := []struct {
		name string
		fn   func() (float64, cpuSample, error)
	}{
		{"River, defaults (MaxWorkers 100)", func() (float64, cpuSample, error) { return riverThroughput(ctx, o, 100, 0) }},
		{fmt.Sprintf("River, MaxWorkers %d, FetchCooldown %v", o.riverWorkers, o.cooldown), func() (float64, cpuSample, error) {
			return riverThroughput(ctx, o, o.riverWorkers, o.cooldown)
		}},
	}
	var counts []int
	for _, f := range strings.Split(o.runners, ",") {
		var k int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &k); err != nil || k < 1 {
			return fmt.Errorf("-runners: %q is not a positive number", f)
		}
		counts = append(counts, k)
	}
	type system = struct {
		name string
		fn   func() (float64, cpuSample, error)
	}
	for _, k := range counts {
		name := fmt.Sprintf("Stint, %d runners", k)
		if k == 1 {
			name = "Stint, 1 runner"
		}
		systems = append(systems, system{name, func() (float64, cpuSample, error) { return stintThroughput(ctx, o, k) }})
	}
	if o.fairRow > 0 {
		f := o
		f.stintTenants = o.fairRow
		systems = append(systems, system{fmt.Sprintf("Stint, 1 runner, fair claims over %d tenants", o.fairRow), func() (float64, cpuSample, error) {
			return stintThroughput(ctx, f, 1)
		}})
	}
	if o.runnerB != "" {
		b := o
		b.runner = o.runnerB
		if o.bParams != "" {
			b.urlExtra = "&" + o.bParams
		}
		for _, k := range counts {
			systems = append(systems, system{fmt.Sprintf("Stint B, %d runner(s)", k), func() (float64, cpuSample, error) { return stintThroughput(ctx, b, k) }})
		}
	}
	r.names = nil
	for _, sys := range systems {
		r.names = append(r.names, sys.name)
	}
	for round := range o.rounds {
		for _, sys := range systems {
			if o.only != "" && !strings.HasPrefix(strings.ToLower(sys.name), o.only) {
				continue
			}
			rate, cpu, err := sys.fn()
			if err != nil {
				return fmt.Errorf("%s: %w", sys.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d: %s %.0f jobs/s (middle 80%%: %.0f), CPU per job %v client + %v PostgreSQL + %v rest of machine, %.2f CPUs busy\n", round+1, sys.name, rate, cpu.mid, cpu.client, cpu.server, cpu.rest, cpu.busy)
			r.rate[sys.name] = append(r.rate[sys.name], rate)
			r.cpu[sys.name] = append(r.cpu[sys.name], cpu)
		}
	}
	// Latency, alternated in blocks of 20 samples.
	for done := 0; done < o.latN; done += 20 {
		k := min(20, o.latN-done)
		rl, err := riverLatency(ctx, o, k)
		if err != nil {
			return fmt.Errorf("river latency: %w", err)
		}
		sl, err := stintLatency(ctx, o, k)
		if err != nil {
			return fmt.Errorf("stint latency: %w", err)
		}
		r.lat["River"] = append(r.lat["River"], rl...)
		r.lat["Stint"] = append(r.lat["Stint"], sl...)
	}
	// A quiet tenant beside a noisy one, alternated in blocks of 20.
	for done := 0; done < o.noisyN; done += 20 {
		k := min(20, o.noisyN-done)
		for _, v := range []struct {
			name  string
			noisy int
		}{{"alone", 0}, {"beside", o.noisy}} {
			rl, err := riverNoisyLatency(ctx, o, k, v.noisy)
			if err != nil {
				return fmt.Errorf("river quiet tenant %s: %w", v.name, err)
			}
			sl, err := stintNoisyLatency(ctx, o, k, v.noisy)
			if err != nil {
				return fmt.Errorf("stint quiet tenant %s: %w", v.name, err)
			}
			r.noisy["River "+v.name] = append(r.noisy["River "+v.name], rl...)
			r.noisy["Stint "+v.name] = append(r.noisy["Stint "+v.name], sl...)
		}
	}
	if !o.skipKill {
		for i := range o.killN {
			rk, err := riverKill(ctx, o)
			if err != nil {
				return fmt.Errorf("river kill: %w", err)
			}
			sk, err := stintKill(ctx, o)
			if err != nil {
				return fmt.Errorf("stint kill: %w", err)
			}
			fmt.Fprintf(os.Stderr, "kill %d: River %v, Stint %v\n", i+1, rk.Round(time.Millisecond), sk.Round(time.Millisecond))
			r.kill["River"] = append(r.kill["River"], rk)
			r.kill["Stint"] = append(r.kill["Stint"], sk)
		}
	}
	r.ended = time.Now()
	md := report(o, r)
	fmt.Print(md)
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(o.out, "queues.md"), []byte(md), 0o644)
	}
	return nil
}

// catalogVacuum vacuums the system catalogs a schema's creation and drop
// leave dead rows in.
const catalogVacuum = `VACUUM pg_catalog.pg_attribute, pg_catalog.pg_class, pg_catalog.pg_depend, pg_catalog.pg_index,
	pg_catalog.pg_type, pg_catalog.pg_constraint, pg_catalog.pg_attrdef, pg_catalog.pg_trigger, pg_catalog.pg_statistic`

// newSchema creates a fresh schema and returns its name and a function
// that drops it.
func newSchema(ctx context.Context, dsn, prefix string) (string, func(), error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	// Every measurement creates and drops a schema of tables, and so do
	// the store's tests: the system catalogs fill with dead rows (104,000
	// in pg_attribute after a session's tests), and PostgreSQL's CPU per
	// job grew from 33 to 47 µs until they were vacuumed. Vacuum them
	// before each measurement, so that none pays for what ran before
	// (without the rights, PostgreSQL skips them with a warning).
	if _, err := conn.Exec(ctx, catalogVacuum); err != nil {
		return "", nil, fmt.Errorf("vacuum the catalogs: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, err
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drop schema:", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			fmt.Fprintln(os.Stderr, "drop schema:", err)
		}
	}
	return name, drop, nil
}

// withSearchPath returns dsn selecting schema.
func withSearchPath(dsn, schema string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// poolFor opens a pgx pool on schema.
func poolFor(ctx context.Context, dsn, schema string, maxConns int32, app string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(withSearchPath(dsn, schema) + "&application_name=" + app)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// quantile returns the q-quantile of sorted samples.
func quantile[T any](sorted []T, q float64) T {
	i := int(q * float64(len(sorted)))
	return sorted[min(i, len(sorted)-1)]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantile(s, 0.5)
}
