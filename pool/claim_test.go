package pool_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// claimSignal is a store that reports each Claim once it has returned.
type claimSignal struct {
	tasks.Store
	claimed chan struct{}
}

func (s claimSignal) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	c, err := s.Store.Claim(ctx, req)
	select {
	case s.claimed <- struct{}{}:
	default:
	}
	return c, err
}

// storeAndRuntime opens a fresh SQLite store and a sandbox runtime, closed
// when t ends, for tests that build their own pool around the store
// (export_test.go: the internal tests use it too).
var storeAndRuntime = pool.StoreAndRuntime

// putFixture stores a .wat fixture's module and returns its hash
// (export_test.go).
var putFixture = pool.PutFixture

// submitNoops queues n noop tasks in store and returns their ids.
func submitNoops(t *testing.T, store tasks.Store, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	sha := putFixture(t, store, "noop")
	ids := make([]int64, 0, n)
	for range n {
		task, _, err := store.Submit(ctx, tasks.Spec{Module: sha})
		require.NoError(t, err)
		ids = append(ids, task.ID)
	}
	return ids
}

// TestPoolWakeOn: a task queued behind the pool's back (as another process
// would) starts on a value from the channel given to WakeOn, not at the
// next poll, an hour away here.
func TestPoolWakeOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	claimed := make(chan struct{}, 1)
	pl, err := pool.New(claimSignal{store, claimed}, rt, pool.Config{Workers: 1, Poll: time.Hour})
	require.NoError(t, err)
	wake := make(chan struct{})
	pl.WakeOn(wake)
	require.NoError(t, pl.Start(ctx))
	defer func() { require.NoError(t, pl.Stop(ctx)) }()

	select { // the pl's first claim found nothing; the next is an hour away
	case <-claimed:
	case <-time.After(bound):
		t.Fatal("the pool never claimed")
	}
	sha := putFixture(t, store, "noop")
	task, _, err := store.Submit(ctx, tasks.Spec{Module: sha})
	require.NoError(t, err)
	select {
	case wake <- struct{}{}:
	case <-time.After(bound):
		t.Fatal("the pool does not read the channel given to WakeOn")
	}

	waitSucceeded(t, pl, task.ID)
}

// waitSucceeded waits, within bound, for the task to end, and requires
// that it succeeded.
func waitSucceeded(t *testing.T, pl *pool.Pool, id int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	done, err := pl.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State)
}

// failingClaims is a store whose first n Claims fail.
type failingClaims struct {
	tasks.Store
	n *atomic.Int32
}

func (s failingClaims) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	if s.n.Add(-1) >= 0 {
		return nil, errors.New("database is locked (simulated)")
	}
	return s.Store.Claim(ctx, req)
}

// TestPoolClaimFailures: while the store fails, the pool backs off and
// logs once per doubling of its wait, not at every poll; once the store
// works again it says so and runs the task.
func TestPoolClaimFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fails := new(atomic.Int32)
	fails.Store(4)
	_, task, pl, logs := poolOnANoopTask(t, func(s tasks.Store) tasks.Store { return failingClaims{s, fails} })
	defer func() { require.NoError(t, pl.Stop(ctx)) }()
	waitSucceeded(t, pl, task.ID)
	require.Equal(t, 3, logs.FilterMessage("claim failed; retrying").Len(), "4 failures logged at the 1st, 2nd and 4th")
	require.Equal(t, 1, logs.FilterMessage("claims work again").Len())
}

// poolOnANoopTask stores one noop task in a fresh store and starts a pool
// (one worker, 1 ms poll, logs observed) on wrap(store); the caller stops
// the pool.
func poolOnANoopTask(t *testing.T, wrap func(tasks.Store) tasks.Store) (*sqlite.Store, tasks.Task, *pool.Pool, *observer.ObservedLogs) {
	t.Helper()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	sha := putFixture(t, store, "noop")
	task, _, err := store.Submit(ctx, tasks.Spec{Module: sha})
	require.NoError(t, err)
	core, logs := observer.New(zapcore.InfoLevel)
	pl, err := pool.New(wrap(store), rt, pool.Config{Workers: 1, Poll: time.Millisecond, Logger: zap.New(core)})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	return store, task, pl, logs
}

// failingCompletes is a store whose Complete fails n times (n <= 0:
// never), reporting the first failure on failed.
type failingCompletes struct {
	tasks.Store
	n      *atomic.Int32
	failed chan struct{}
}

func (s failingCompletes) Complete(ctx context.Context, cs []tasks.Completion) ([]error, error) {
	if s.n.Add(-1) >= 0 {
		select {
		case s.failed <- struct{}{}:
		default:
		}
		err := errors.New("disk full (simulated)")
		errs := make([]error, len(cs))
		for i := range errs {
			errs[i] = err
		}
		return errs, err
	}
	return s.Store.Complete(ctx, cs)
}

// TestPoolKeepsResultsWhileTheStoreFails: an attempt's result that the
// store refuses ten times in a row (more than the pool used to try) is
// kept and retried, with a log line per doubling of the wait, and
// recorded once the store works again: the work is not redone.
func TestPoolKeepsResultsWhileTheStoreFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fails := new(atomic.Int32)
	fails.Store(10)
	store, task, pl, logs := poolOnANoopTask(t, func(s tasks.Store) tasks.Store {
		return failingCompletes{s, fails, make(chan struct{}, 1)}
	})
	defer func() { require.NoError(t, pl.Stop(ctx)) }()
	waitSucceeded(t, pl, task.ID)
	atts, err := store.Attempts(ctx, task.ID)
	require.NoError(t, err)
	require.Len(t, atts, 1, "one attempt: its result waited for the store")
	require.Equal(t, 4, logs.FilterMessage("recording attempts failed; retrying").Len(), "10 failures logged at the 1st, 2nd, 4th and 8th")
	require.Zero(t, logs.FilterMessage("giving up recording attempts").Len())
	require.Zero(t, pl.Stats().Unrecorded)
}

// TestPoolGivesUpResultsWhenStopping: a result the store keeps refusing is
// given up when the pool stops, so that the stop is not held up; its task
// stays running in the store, to run again after its lease or at the next
// start, and the pool counts it as unrecorded.
func TestPoolGivesUpResultsWhenStopping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fails := new(atomic.Int32)
	fails.Store(1 << 30)
	failed := make(chan struct{}, 1)
	store, task, pl, logs := poolOnANoopTask(t, func(s tasks.Store) tasks.Store { return failingCompletes{s, fails, failed} })
	select {
	case <-failed:
	case <-time.After(bound):
		t.Fatal("the pool never tried to record the attempt")
	}
	require.NoError(t, pl.Stop(ctx))
	require.Equal(t, 1, pl.Stats().Unrecorded)
	require.Equal(t, 1, logs.FilterMessage("giving up recording attempts; their tasks will run again once their leases expire or at the next start").Len())
	got, err := store.Get(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateRunning, got.State, "left to its lease")
}

// TestHeldTasksGoToAnIdleRunner: tasks claimed ahead behind a worker that
// turned out to be busy for long (the pool learnt that tasks were short)
// are given back to the queue once no worker took one for the hold limit
// (5 ClaimAhead: 5s here, so that the test sees them held first), their
// attempts not counted, and another runner of the store runs them while
// the first one's worker is still busy. Before, they waited for it: an
// hour here.
func TestHeldTasksGoToAnIdleRunner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, pool.Config{Workers: 1, Owner: "a", ClaimAhead: time.Second})
	for range 5 { // short tasks: the pool claims ahead
		warm := f.submit(t, "noop", tasks.Spec{})
		require.Equal(t, tasks.StateSucceeded, f.wait(t, warm.ID).State)
	}
	sleep := putFixture(t, f.store, "sleep")
	noop := putFixture(t, f.store, "noop")
	// One claim takes them all: the sleeper first (its priority), the
	// noops held behind it.
	specs := []tasks.Spec{{Module: sleep, Priority: 1, Limits: tasks.Limits{Timeout: time.Hour}}}
	for range 4 {
		specs = append(specs, tasks.Spec{Module: noop})
	}
	sub, err := tasks.SubmitMany(ctx, f.store, specs)
	require.NoError(t, err)
	f.pl.Wake()
	f.waitRunning(t, sub[0].Task.ID, 6)
	for _, s := range sub[1:] {
		got, err := f.store.Get(ctx, s.Task.ID)
		require.NoError(t, err)
		if got.State != tasks.StateRunning || got.LeaseOwner != "a" {
			t.Skipf("runner a did not claim task %d ahead (%s): nothing to give back on this run", s.Task.ID, got.State)
		}
	}
	testutil.WaitFor(t, "runner a to hold the 4 tasks for a worker", func() bool { return f.pl.Stats().Held == 4 })

	b, err := pool.New(f.store, f.rt, pool.Config{Workers: 1, Owner: "b", Poll: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	defer func() { require.NoError(t, b.Stop(ctx)) }()
	for _, s := range sub[1:] {
		waitSucceeded(t, b, s.Task.ID)
		atts := attempts(t, f.store, s.Task.ID)
		require.Len(t, atts, 1, "a given-back claim leaves no attempt")
		require.Equal(t, "b", atts[0].Owner)
	}
	got, err := f.store.Get(ctx, sub[0].Task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateRunning, got.State, "the sleeper still holds runner a's worker")
	st := f.pl.Stats()
	require.Equal(t, 4, st.GivenBack)
	require.Zero(t, st.Held)
	f.pl.ForceStop()
}

// TestPoolShowsClaimedUntilBegun: the tasks a pool claimed ahead, which
// wait behind its one busy worker, are shown claimed by it (BeganAt zero)
// and counted so, while the task its worker runs is shown running once the
// pool has marked it begun (tasks.Store.MarkBegun). Before, the store
// showed all of them running: 6 running with 1 worker.
func TestPoolShowsClaimedUntilBegun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, sleeper, held := busyClaimingAhead(t, "sleep", 5)
	testutil.WaitFor(t, "the pool to hold the 5 tasks for its worker", func() bool {
		if f.pl.Stats().Held == 5 {
			return true
		}
		f.pl.Wake()
		return false
	})
	testutil.WaitFor(t, "the sleeper to be shown running", func() bool {
		got, err := f.store.Get(ctx, sleeper.ID)
		require.NoError(t, err)
		return got.Shown() == tasks.StateRunning
	})
	for _, h := range held {
		got, err := f.store.Get(ctx, h.ID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateClaimed, got.Shown(), "no worker began task %d", h.ID)
		require.Equal(t, f.pl.Owner(), got.LeaseOwner, "claimed by its runner")
	}
	counts, err := f.store.CountTasks(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(5), counts.Total[tasks.StateClaimed])
	require.Equal(t, int64(1), counts.Total[tasks.StateRunning], "one worker, one running")
	f.pl.StopIntake()
	f.pl.ForceStop()
	<-f.pl.Idle()
}

// TestPoolReadsPayloadsLeftOutOfClaims: an input and a checkpoint over
// tasks.ClaimInline are not returned by the claim; the pool reads them when
// the attempt starts, and the guest sees them whole.
func TestPoolReadsPayloadsLeftOutOfClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Exclusive: true})
	require.NoError(t, err)
	defer store.Close()
	input, checkpoint := make([]byte, 3*tasks.ClaimInline), make([]byte, 2*tasks.ClaimInline+7)
	_, _ = rand.Read(input)
	_, _ = rand.Read(checkpoint)

	// The checkpointed task's earlier attempt, made by hand: claimed, a
	// large checkpoint saved, interrupted.
	cpSha := putFixture(t, store, "cpecho")
	resumed, _, err := store.Submit(ctx, tasks.Spec{Module: cpSha})
	require.NoError(t, err)
	cl, err := store.Claim(ctx, tasks.ClaimRequest{Owner: "earlier", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.NoError(t, store.SaveCheckpoint(ctx, cl[0].Lease, checkpoint))
	errs, err := store.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])

	echoSha := putFixture(t, store, "echo")
	echoed, _, err := store.Submit(ctx, tasks.Spec{Module: echoSha, Input: input})
	require.NoError(t, err)

	rt, err := sandbox.New(ctx, sandbox.Config{})
	require.NoError(t, err)
	defer rt.Close(ctx)
	pl, err := pool.New(store, rt, pool.Config{Workers: 2, Poll: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() {
		stopCtx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		require.NoError(t, pl.Stop(stopCtx))
	}()
	waitCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()

	done, err := pl.Wait(waitCtx, echoed.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.True(t, bytes.Equal(input, done.Result), "the guest read the whole input")

	done, err = pl.Wait(waitCtx, resumed.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.True(t, bytes.Equal(checkpoint, done.Result), "the guest resumed from the whole checkpoint")
	atts, err := store.Attempts(ctx, resumed.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.True(t, atts[1].Resumed)
}
