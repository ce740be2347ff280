package e2e

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// pgStore opens the test's schema directly (migrating it), closed when t
// ends, and returns it with the URL runners use.
func pgStore(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	schema, url := pgSchema(t)
	s, err := postgres.Open(context.Background(), os.Getenv("STINT_TEST_POSTGRES"), postgres.Options{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, url
}

// putFixture stores the wat fixture name in s and returns its sha256.
func putFixture(t testing.TB, s *postgres.Store, name string) string {
	t.Helper()
	sha, err := s.PutModule(context.Background(), wat.MustLoad(name))
	require.NoError(t, err)
	return sha
}

// pgRunner starts `runner serve` on the shared store as owner, and waits
// until it is ready.
func pgRunner(t testing.TB, url, owner string, extra ...string) *proc {
	t.Helper()
	return startServe(t, dataDir(t), append([]string{"--store", url, "--owner", owner}, extra...)...)
}

// submitMany queues n tasks of spec through the store, from several
// connections at once.
func submitMany(t testing.TB, s *postgres.Store, spec tasks.Spec, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	const conns = 8
	for c := range conns {
		wg.Go(func() {
			for i := c; i < n; i += conns {
				task, _, err := s.Submit(context.Background(), spec)
				ids[i], errs[i] = task.ID, err
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return ids
}

// allSucceeded reports whether every one of ids has succeeded.
func allSucceeded(t testing.TB, s *postgres.Store, n int) bool {
	t.Helper()
	done, err := s.List(context.Background(), tasks.ListFilter{State: tasks.StateSucceeded, Limit: n + 1})
	require.NoError(t, err)
	return len(done) == n
}

// stopAll stops the runners with SIGTERM; each must exit cleanly.
func stopAll(t testing.TB, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		p.signal(t, syscall.SIGTERM)
	}
	for _, p := range ps {
		require.Equal(t, 0, p.wait(t), p.stderr())
	}
}

// TestServePostgresThreeRunners: three `runner serve` on one PostgreSQL
// schema work through 1,000 trivial tasks: each succeeds exactly once (one
// attempt), and every runner ran some of them.
func TestServePostgresThreeRunners(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	ctx := context.Background()
	owners := []string{"runner-1", "runner-2", "runner-3"}
	var ps []*proc
	for _, o := range owners {
		ps = append(ps, pgRunner(t, url, o))
	}
	sha := putFixture(t, s, "noop")
	const n = 1000
	ids := submitMany(t, s, tasks.Spec{Module: sha, MaxAttempts: 1}, n)
	testutil.WaitFor(t, "1,000 tasks to succeed", func() bool { return allSucceeded(t, s, n) })
	stopAll(t, ps...)

	ran := map[string]int{}
	for _, id := range ids {
		atts, err := s.Attempts(ctx, id)
		require.NoError(t, err)
		require.Len(t, atts, 1, "task %d ran once: %+v", id, atts)
		require.Equal(t, "succeeded", atts[0].Outcome)
		ran[atts[0].Owner]++
	}
	t.Logf("tasks per runner: %v", ran)
	require.Len(t, ran, len(owners), "every task ran on one of the three: %v", ran)
	for _, o := range owners {
		require.Positive(t, ran[o], "runner %s ran some tasks: %v", o, ran)
	}
}

// primesSpec is a primes task of about 8 s of work (on the AMD EPYC VM of
// 2026-12, once the stop checks cost 1.1x) that checkpoints often,
// with room for a lost attempt and for a loaded machine.
func primesSpec(t testing.TB, s *postgres.Store) tasks.Spec {
	t.Helper()
	sha, err := s.PutModule(context.Background(), readFile(t, testwasm.GoGuest(t, "primes")))
	require.NoError(t, err)
	return tasks.Spec{Module: sha, Input: []byte("6000000 20000"), MaxAttempts: 3, Limits: tasks.Limits{Timeout: 10 * time.Minute}}
}

const primesWant = "primes below 6000000: 412849\n"

// waitRunningWithCheckpoint waits (for what, as its failure says) until a
// task owner holds is running and has stored a checkpoint.
func waitRunningWithCheckpoint(t testing.TB, s *postgres.Store, owner, what string) {
	t.Helper()
	testutil.WaitFor(t, what, func() bool {
		running, err := s.List(context.Background(), tasks.ListFilter{State: tasks.StateRunning})
		require.NoError(t, err)
		for _, r := range running {
			if r.LeaseOwner == owner && r.CheckpointSize > 0 {
				return true
			}
		}
		return false
	})
}

// TestServePostgresSIGKILLedRunnersTasksMoveOn: of two runners working a
// batch of primes tasks, one is killed with SIGKILL; the survivor finishes
// every task, the dead runner's resuming from their checkpoints once their
// (2 s) leases expire. Each task succeeds exactly once.
func TestServePostgresSIGKILLedRunnersTasksMoveOn(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	ctx := context.Background()
	a := pgRunner(t, url, "doomed", "--lease", "2s")
	b := pgRunner(t, url, "survivor", "--lease", "2s")
	const n = 4 // two per runner (two workers each; long tasks are not claimed ahead)
	ids := submitMany(t, s, primesSpec(t, s), n)
	waitRunningWithCheckpoint(t, s, "doomed", "a task of the doomed runner with a checkpoint")
	a.kill(t)
	// The doomed runner's tasks that had stored a checkpoint when it died
	// (at least the one above; another may not have reached its first).
	checkpointed := map[int64]bool{}
	running, err := s.List(ctx, tasks.ListFilter{State: tasks.StateRunning})
	require.NoError(t, err)
	for _, r := range running {
		if r.LeaseOwner == "doomed" && r.CheckpointSize > 0 {
			checkpointed[r.ID] = true
		}
	}
	require.NotEmpty(t, checkpointed)
	testutil.WaitFor(t, "every task to succeed", func() bool { return allSucceeded(t, s, n) })
	stopAll(t, b)

	moved := 0
	for _, id := range ids {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, primesWant, string(task.Result), "task %d", id)
		atts, err := s.Attempts(ctx, id)
		require.NoError(t, err)
		requireSucceededOnce(t, id, atts)
		for _, att := range atts {
			if att.Outcome == "succeeded" {
				require.Equal(t, "survivor", att.Owner, "task %d: only the survivor records results after the kill: %+v", id, atts)
			}
		}
		if atts[0].Owner == "doomed" {
			moved++
			require.Len(t, atts, 2, "task %d: the doomed runner's attempt, then the survivor's: %+v", id, atts)
			require.NotEqual(t, "succeeded", atts[0].Outcome)
			if checkpointed[id] {
				require.True(t, atts[1].Resumed, "task %d resumed from the doomed runner's checkpoint: %+v", id, atts)
			}
		}
	}
	require.Positive(t, moved, "the doomed runner held some tasks when it died")
}

// TestServePostgresStoppedRunnerIsFenced: a runner is SIGSTOPped while it
// runs a task; its lease expires and another runner takes the task over.
// After SIGCONT the stopped runner's writes are refused (its heartbeat, its
// checkpoints, its result: fencing), and the task's record is the new
// attempt's.
func TestServePostgresStoppedRunnerIsFenced(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	ctx := context.Background()
	a := pgRunner(t, url, "paused", "--lease", "2s", "--log-level", "debug")
	id := submitMany(t, s, primesSpec(t, s), 1)[0]
	waitRunningWithCheckpoint(t, s, "paused", "the task running on the paused runner with a checkpoint")
	a.signal(t, syscall.SIGSTOP)
	b := pgRunner(t, url, "taker", "--lease", "2s")
	testutil.WaitFor(t, "the taker to hold the task's second attempt", func() bool {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		return task.Attempt == 2 && task.LeaseOwner == "taker" || task.State == tasks.StateSucceeded
	})
	// The paused runner's lease, as it still believes it holds it.
	old := tasks.Lease{TaskID: id, Owner: "paused", Token: 1}
	require.ErrorIs(t, s.SaveCheckpoint(ctx, old, []byte("stale")), tasks.ErrStaleLease)
	a.signal(t, syscall.SIGCONT)
	// Its heartbeat learns the lease is lost and stops the guest (or, if the
	// guest gets there first, its checkpoint or its result is refused).
	testutil.WaitFor(t, "the paused runner to give the attempt up", func() bool {
		for _, l := range strings.Split(a.stderr(), "\n") {
			if strings.Contains(l, `"attempt ended"`) && strings.Contains(l, `"as":"lost"`) ||
				strings.Contains(l, "attempt result refused") {
				return true
			}
		}
		return false
	})
	testutil.WaitFor(t, "the task to succeed", func() bool { return allSucceeded(t, s, 1) })
	stopAll(t, a, b)

	task, err := s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, primesWant, string(task.Result))
	atts, err := s.Attempts(ctx, id)
	require.NoError(t, err)
	// On a loaded machine the taker may in turn miss its heartbeats and
	// lose the task to a later attempt: fencing holds all the same. What
	// must hold: the paused runner's attempt 1 is never the task's record,
	// the taker's attempt 2 resumed from its checkpoint, and the record is
	// the last attempt's.
	require.GreaterOrEqual(t, len(atts), 2, "%+v", atts)
	require.Equal(t, "paused", atts[0].Owner)
	require.NotEqual(t, "succeeded", atts[0].Outcome, "the paused runner's attempt was not recorded as the task's: %+v", atts)
	require.Equal(t, "taker", atts[1].Owner)
	require.True(t, atts[1].Resumed, "the taker resumed from the paused runner's checkpoint")
	last := atts[len(atts)-1]
	require.Equal(t, "succeeded", last.Outcome, "%+v", atts)
	if len(atts) > 2 {
		t.Logf("the taker lost its lease too (a loaded machine); the task ended in attempt %d: %+v", last.Number, atts)
	}
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: old, State: tasks.StateSucceeded, Result: []byte("stale")}})
	require.NoError(t, err)
	require.Error(t, errs[0], "a stale lease's result is refused")
	task, err = s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, primesWant, string(task.Result), "the record is still the last attempt's")
}
