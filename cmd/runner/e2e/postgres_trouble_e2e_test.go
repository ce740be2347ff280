package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/pgtest"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// The tests of this file run a real `runner serve` on a private
// PostgreSQL cluster (internal/pgtest: its own directory and port, this
// machine's server binaries), which they stop, kill, start and fail over
// under load without touching the server the other tests share.

// privateStore opens the store of the cluster at dsn (migrating it),
// closed when t ends.
func privateStore(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// probe answers whether the runner's /readyz at addr says ready.
type probe struct {
	addr string
	hc   *http.Client
}

func newProbe(t testing.TB, addr string) *probe {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &probe{addr: addr, hc: &http.Client{Transport: tr, Timeout: bound}}
}

// get returns the status and body of path.
func (p *probe) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := p.hc.Get("http://" + p.addr + path)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (p *probe) ready(t testing.TB) bool {
	t.Helper()
	code, _ := p.get(t, "/readyz")
	return code == http.StatusOK
}

// startWaitingRunner starts `runner serve` on store url as owner, with its
// HTTP address on a free port and a store_wait of 10 minutes, while the
// store cannot be reached. It waits until the runner serves its probes
// meanwhile and has logged its second failed try (the second line says
// the first wait was done and the runner is still there), and returns it
// with a probe of the probes' address.
func startWaitingRunner(t testing.TB, url, owner string) (*proc, *probe) {
	t.Helper()
	p := startRunner(t, nil, serveArgs(dataDir(t), "--store", url, "--owner", owner,
		"--http-addr", "127.0.0.1:0", "--store-wait", "10m")...)
	var probes struct {
		Addr string `json:"addr"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.waitLine(t, "HTTP probes listening while the runner waits for its store")), &probes))
	p.waitLine(t, "store unreachable; waiting for it", `"try":2`, "PostgreSQL is unavailable")
	return p, newProbe(t, probes.Addr)
}

// troubleRunner starts `runner serve` on store url as owner with many
// workers (the nap tasks sleep) and its HTTP API on a free port, waits
// until it is ready, and returns it with a probe of its /readyz.
func troubleRunner(t testing.TB, url, owner string) (*proc, *probe) {
	t.Helper()
	p := startRunner(t, nil, serveArgs(dataDir(t), "--store", url, "--owner", owner,
		"--http-addr", "127.0.0.1:0", "--workers", "60")...)
	httpAddr := p.apiAddr(t)
	p.waitLine(t, "runner ready")
	return p, newProbe(t, httpAddr)
}

// troubleLoad is what the runner works on while its database goes away:
// short tasks (nap: a checkpoint, one second asleep, "nap\n"), hundreds
// of them, so that claims and completions are in flight at any moment,
// and a few long primes tasks that checkpoint every 20,000 numbers.
type troubleLoad struct {
	naps, primes []int64
	primesWant   string
	// at is how many nap tasks have succeeded when the trouble begins,
	// drawn at random (a tenth to two fifths of them), so that runs hit
	// claims, completions and heartbeats at different moments.
	at int
}

// primesBelow is the number of primes below n (a sieve), what the primes
// guest prints for n.
func primesBelow(n int) int {
	composite := make([]bool, n)
	count := 0
	for i := 2; i < n; i++ {
		if composite[i] {
			continue
		}
		count++
		for j := i * i; j < n; j += i {
			composite[j] = true
		}
	}
	return count
}

// queueTroubleLoad queues nNaps nap tasks and nPrimes primes tasks (of
// about 3 s of work each) on s.
func queueTroubleLoad(t testing.TB, s *postgres.Store, nNaps, nPrimes int) troubleLoad {
	t.Helper()
	ctx := context.Background()
	nap := putFixture(t, s, "nap")
	primes, err := s.PutModule(ctx, readFile(t, testwasm.GoGuest(t, "primes")))
	require.NoError(t, err)
	const n = 3_000_000
	l := troubleLoad{primesWant: fmt.Sprintf("primes below %d: %d\n", n, primesBelow(n)),
		at: nNaps/10 + rand.IntN(nNaps*3/10+1)}
	t.Logf("the trouble begins once %d of %d nap tasks have succeeded", l.at, nNaps)
	l.primes = submitMany(t, s, tasks.Spec{Module: primes, Input: []byte(fmt.Sprint(n, " 20000")), MaxAttempts: 3,
		Limits: tasks.Limits{Timeout: 10 * time.Minute}}, nPrimes)
	l.naps = submitMany(t, s, tasks.Spec{Module: nap, MaxAttempts: 3}, nNaps)
	return l
}

// succeeded counts the tasks that have succeeded; -1 while the test's
// own store cannot reach the database (its connections lost to the
// trouble are replaced at the next tries).
func succeeded(t testing.TB, s *postgres.Store) int {
	t.Helper()
	n, err := s.List(context.Background(), tasks.ListFilter{State: tasks.StateSucceeded, Limit: 100_000})
	if errors.Is(err, postgres.ErrUnavailable) {
		return -1
	}
	require.NoError(t, err)
	return len(n)
}

// underLoad reports whether the runner is in the middle of the load: at
// least l.at nap tasks have succeeded and many have not, and a primes
// task is running with a checkpoint stored, or, once l.at+30 naps have
// succeeded (half a wave of the runner's 60 workers), whatever the primes
// tasks do: how long they take against the naps' waves depends on the
// machine (a primes task compiles, then runs about a second here), and
// the trouble must begin while naps are in flight.
func (l troubleLoad) underLoad(t testing.TB, s *postgres.Store) bool {
	t.Helper()
	done := succeeded(t, s)
	require.Less(t, done, len(l.naps)*3/4, "the load was nearly done before the trouble began: queue more")
	if done < l.at {
		return false
	}
	if done >= l.at+30 {
		return true
	}
	running, err := s.List(context.Background(), tasks.ListFilter{State: tasks.StateRunning, Limit: 1000})
	require.NoError(t, err)
	for _, r := range running {
		for _, id := range l.primes {
			if r.ID == id && r.CheckpointSize > 0 {
				return true
			}
		}
	}
	return false
}

// requireExactlyOnce checks the end of the load: every task succeeded
// with its result, exactly one of its attempts succeeded (none ran twice
// to completion), and at least one primes task resumed from a checkpoint
// or went on through the trouble in its first attempt. It returns the
// number of attempts that did not succeed (lost to the trouble).
func (l troubleLoad) requireExactlyOnce(t testing.TB, s *postgres.Store) int {
	t.Helper()
	ctx := context.Background()
	lost := 0
	check := func(id int64, want string) {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tasks.StateSucceeded, task.State, "task %d", id)
		require.Equal(t, want, string(task.Result), "task %d", id)
		atts, err := s.Attempts(ctx, id)
		require.NoError(t, err)
		requireSucceededOnce(t, id, atts)
		lost += len(atts) - 1
	}
	for _, id := range l.naps {
		check(id, "nap\n")
	}
	for _, id := range l.primes {
		check(id, l.primesWant)
	}
	return lost
}

// rideOutage waits for the runner p to be in the middle of load, takes
// the database away (down), waits for a failing store operation and for
// /readyz to say not ready, brings it back (up), and waits for ready and
// for every task of load, and extra more, to succeed.
func rideOutage(t testing.TB, s *postgres.Store, load troubleLoad, p *proc, probe *probe, down, up func(), extra int) {
	t.Helper()
	testutil.WaitFor(t, "the runner in the middle of the load", func() bool { return load.underLoad(t, s) })
	down()
	p.waitMatch(t, "a store operation failing", troubleLine)
	testutil.WaitFor(t, "/readyz to say not ready", func() bool { return !probe.ready(t) })
	up()
	testutil.WaitFor(t, "/readyz to say ready again", func() bool { return probe.ready(t) })
	testutil.WaitFor(t, "every task to succeed", func() bool {
		return succeeded(t, s) == len(load.naps)+len(load.primes)+extra
	})
}

// survivesOutage queues the trouble load (300 short tasks, 2 long ones)
// in s, runs a runner named owner on dsn through an outage (rideOutage:
// down, then up, and extra tasks more to succeed), checks that the runner
// never exited and that every task of the load ran exactly once, and
// returns the attempts the outage lost.
func survivesOutage(t *testing.T, s *postgres.Store, dsn, owner string, down, up func(), extra int) int {
	t.Helper()
	load := queueTroubleLoad(t, s, 300, 2)
	p, probe := troubleRunner(t, dsn, owner)
	rideOutage(t, s, load, p, probe, down, up, extra)
	select {
	case <-p.done:
		t.Fatalf("the runner exited: %v", p.err)
	default:
	}
	stopAll(t, p)
	return load.requireExactlyOnce(t, s)
}

// troubleLine reports whether a runner's log line says a store operation
// in flight failed: a claim, a heartbeat or the recording of results.
func troubleLine(l string) bool {
	return strings.Contains(l, "recording attempts failed") || strings.Contains(l, "heartbeat failed") ||
		strings.Contains(l, "claim failed")
}

// TestServePostgresRestart: a runner works 300 short tasks and 2 long
// checkpointing ones on a private PostgreSQL cluster, which is stopped
// (pg_ctl stop -m immediate: a crash) while claims and completions are in
// flight, and started again. The runner never exits: /readyz says not
// ready while the database is down and ready once it is back, the guests
// go on, the results are recorded after the restart, and every task
// succeeds exactly once.
func TestServePostgresRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	s := privateStore(t, pg.DSN("postgres"))
	lost := survivesOutage(t, s, pg.DSN("postgres"), "restarted", func() { pg.Stop("immediate") }, pg.Start, 0)
	t.Logf("attempts lost to the restart: %d", lost)
}

// TestServePostgresStartedBeforeTheDatabase: `runner serve` started while
// its PostgreSQL cluster is down waits for it (store_wait), logging each
// try, with /healthz 200 and /readyz 503; once the cluster is started it
// opens the store (creating its schema), says ready and runs what is
// queued.
func TestServePostgresStartedBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	pg := pgtest.Init(t)
	p, probe := startWaitingRunner(t, pg.DSN("postgres"), "early")
	code, body := probe.get(t, "/healthz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = probe.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)

	pg.Start()
	p.waitLine(t, "runner ready")
	require.True(t, probe.ready(t))
	s := privateStore(t, pg.DSN("postgres"))
	sha := putFixture(t, s, "noop")
	submitMany(t, s, tasks.Spec{Module: sha}, 20)
	testutil.WaitFor(t, "the tasks to succeed", func() bool { return succeeded(t, s) == 20 })
	stopAll(t, p)
	require.NotContains(t, p.stderr(), `"level":"error"`)
}

// TestServePostgresFailover: a runner given a primary and its
// synchronous streaming replica (both hosts in the URL,
// target_session_attrs=read-write) works 300 short tasks and 2 long ones;
// the primary is killed (pg_ctl stop -m immediate) while claims and
// completions are in flight and the replica promoted. The runner finds
// the new primary by itself: /readyz false meanwhile, ready again after,
// every task succeeds exactly once, and fencing holds across the
// failover: a lease taken over before it is refused after it.
func TestServePostgresFailover(t *testing.T) {
	t.Parallel()
	primary := pgtest.Start(t)
	replica := primary.Replica(true)
	dsn := "postgres://postgres@" + primary.Addr() + "," + replica.Addr() +
		"/postgres?sslmode=disable&target_session_attrs=read-write"
	s := privateStore(t, dsn)
	ctx := context.Background()

	// A ghost takes a task first, for a second, and is never heard of
	// again: the runner takes it over once its lease has expired.
	noop := putFixture(t, s, "noop")
	ghostTask := submitMany(t, s, tasks.Spec{Module: noop, MaxAttempts: 3}, 1)[0]
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "ghost", Max: 1, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	ghost := cl[0].Lease

	lost := survivesOutage(t, s, dsn, "survivor", func() { primary.Stop("immediate") }, replica.Promote, 1)
	t.Logf("attempts lost to the failover: %d", lost)

	// The ghost's lease is refused on the new primary: its result, its
	// checkpoint, its heartbeat.
	task, err := s.Get(ctx, ghostTask)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, task.State)
	require.ErrorIs(t, s.SaveCheckpoint(ctx, ghost, []byte("stale")), tasks.ErrStaleLease)
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: ghost, State: tasks.StateSucceeded, Result: []byte("stale")}})
	require.NoError(t, err)
	require.Error(t, errs[0], "the ghost's result is refused")
	atts, err := s.Attempts(ctx, ghostTask)
	require.NoError(t, err)
	require.Equal(t, "ghost", atts[0].Owner, "%+v", atts)
	require.NotEqual(t, "succeeded", atts[0].Outcome, "%+v", atts)
	require.Equal(t, "survivor", atts[len(atts)-1].Owner, "%+v", atts)
	require.Equal(t, "succeeded", atts[len(atts)-1].Outcome, "%+v", atts)
}
