package pool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

const bound = 60 * time.Second

type fixture struct {
	store *sqlite.Store
	rt    *sandbox.Runtime
	pl    *pool.Pool
}

func newFixture(t *testing.T, cfg pool.Config) *fixture {
	t.Helper()
	return newFixtureRT(t, cfg, sandbox.Config{})
}

func (f *fixture) submit(t *testing.T, fixtureName string, spec tasks.Spec) tasks.Task {
	t.Helper()
	sha := putFixture(t, f.store, fixtureName)
	spec.Module = sha
	task, _, err := f.pl.Submit(context.Background(), spec)
	require.NoError(t, err)
	return task
}

func (f *fixture) wait(t *testing.T, id int64) tasks.Task {
	t.Helper()
	return f.waitWithin(t, id, bound)
}

// waitWithin is wait for a task whose attempts are many (tens of attempt
// timeouts), within d.
func (f *fixture) waitWithin(t *testing.T, id int64, d time.Duration) tasks.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	task, err := f.pl.Wait(ctx, id)
	require.NoError(t, err)
	return task
}

// waitRunning waits until a worker has started n attempts and the task is
// running (there is no channel to wait on across the store).
// busyClaimingAhead starts a pool of one worker that claims ahead: a
// noop task teaches it that tasks are short, then a task of the fixture
// busy (an hour's timeout) takes the worker, and n noop tasks are
// submitted behind it. It returns the fixture, the busy task and the n.
func busyClaimingAhead(t *testing.T, busy string, n int) (*fixture, tasks.Task, []tasks.Task) {
	t.Helper()
	f := newFixture(t, pool.Config{Workers: 1, ClaimAhead: time.Hour})
	warm := f.submit(t, "noop", tasks.Spec{})
	require.Equal(t, tasks.StateSucceeded, f.wait(t, warm.ID).State)
	running := f.submit(t, busy, tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour}})
	f.waitRunning(t, running.ID, 2)
	behind := make([]tasks.Task, n)
	for i := range behind {
		behind[i] = f.submit(t, "noop", tasks.Spec{})
	}
	return f, running, behind
}

func (f *fixture) waitRunning(t *testing.T, id int64, n int) {
	t.Helper()
	testutil.WaitFor(t, fmt.Sprintf("task %d to run, %d attempts started", id, n), func() bool {
		task, err := f.store.Get(context.Background(), id)
		require.NoError(t, err)
		return task.State == tasks.StateRunning && f.pl.Stats().Started >= n
	})
}

func attempts(t *testing.T, s tasks.Store, id int64) []tasks.Attempt {
	t.Helper()
	atts, err := s.Attempts(context.Background(), id)
	require.NoError(t, err)
	return atts
}

func TestPoolSucceeds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "echo", tasks.Spec{Input: []byte("payload")})
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateSucceeded, done.State)
	require.Equal(t, "payload", string(done.Result))
	atts := attempts(t, f.store, task.ID)
	require.Len(t, atts, 1)
	require.Equal(t, "succeeded", atts[0].Outcome)
	require.Equal(t, 1, f.pl.Stats().Finished)
}

func TestPoolRetriesThenDead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "exit3", tasks.Spec{MaxAttempts: 3})
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateDead, done.State)
	require.Equal(t, 3, done.Failures)
	require.Contains(t, done.LastError, "exit code 3")
	atts := attempts(t, f.store, task.ID)
	require.Len(t, atts, 3)
	for _, a := range atts {
		require.Equal(t, "failed", a.Outcome)
		require.Equal(t, 3, a.ExitCode)
		require.True(t, a.Counted)
	}

	// A manual retry puts it back; it fails again (same module), dead again.
	_, err := f.store.Retry(context.Background(), task.ID)
	require.NoError(t, err)
	f.pl.Wake()
	done = f.wait(t, task.ID)
	require.Equal(t, tasks.StateDead, done.State)
	require.Len(t, attempts(t, f.store, task.ID), 6)
}

func TestPoolPermanentOutcomeIsDeadAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "unknown_import", tasks.Spec{MaxAttempts: 5})
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateDead, done.State)
	require.Contains(t, done.LastError, "stint.no_such_function")
	require.Len(t, attempts(t, f.store, task.ID), 1)
}

func TestPoolIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	a := f.submit(t, "noop", tasks.Spec{IdempotencyKey: "once"})
	b := f.submit(t, "noop", tasks.Spec{IdempotencyKey: "once"})
	require.Equal(t, a.ID, b.ID)
}

func TestPoolRequestStopInterruptsAndRequeues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "checkpoint_then_loop", tasks.Spec{MaxAttempts: 1})
	f.waitRunning(t, task.ID, 1)
	f.pl.RequestStop()
	<-f.pl.Idle()
	f.requireRequeued(t, task.ID, "interrupted") // an interrupted attempt is not counted
	cp, err := f.store.Checkpoint(context.Background(), task.ID)
	require.NoError(t, err)
	require.Equal(t, "cp2", string(cp), "the last checkpoint is kept")
	require.Equal(t, 1, f.pl.Stats().Interrupted)
}

// requireRequeued requires task id back in the queue with no failure
// counted, after one attempt that ended as outcome and was not counted
// either; it returns the task.
func (f *fixture) requireRequeued(t *testing.T, id int64, outcome string) tasks.Task {
	t.Helper()
	got, err := f.store.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State, "the task goes back to the queue: %s", got.LastError)
	require.Zero(t, got.Failures)
	require.False(t, onlyAttempt(t, f.store, id, outcome).Counted)
	return got
}

// onlyAttempt requires task id to have exactly one attempt, ended as
// outcome, and returns it.
func onlyAttempt(t *testing.T, s tasks.Store, id int64, outcome string) tasks.Attempt {
	t.Helper()
	atts := attempts(t, s, id)
	require.Len(t, atts, 1)
	require.Equal(t, outcome, atts[0].Outcome, atts[0].Reason)
	return atts[0]
}

func TestPoolForceStopRequeues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "loop", tasks.Spec{MaxAttempts: 1, Limits: tasks.Limits{Timeout: time.Hour}})
	f.waitRunning(t, task.ID, 1)
	f.pl.RequestStop() // the loop ignores it
	f.pl.ForceStop()
	<-f.pl.Idle()
	f.requireRequeued(t, task.ID, "forced")
	require.Equal(t, 1, f.pl.Stats().Forced)
}

func TestPoolCancelRunning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{Lease: 300 * time.Millisecond, Heartbeat: 20 * time.Millisecond, CancelGrace: 50 * time.Millisecond})
	// stop_aware honours the stop request; stop_ignore must be forced.
	for i, fx := range []string{"stop_aware", "stop_ignore"} {
		task := f.submit(t, fx, tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour}})
		f.waitRunning(t, task.ID, i+1)
		got, err := f.store.Cancel(context.Background(), task.ID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateRunning, got.State)
		require.True(t, got.CancelRequested)
		done := f.wait(t, task.ID)
		require.Equal(t, tasks.StateCancelled, done.State, fx)
	}
}

func TestPoolCancelQueued(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "noop", tasks.Spec{RunAt: time.Now().Add(time.Hour)})
	got, err := f.store.Cancel(context.Background(), task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateCancelled, got.State)
}

func TestPoolQueues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{Queues: map[string]int{"fast": 2}})
	fast := f.submit(t, "noop", tasks.Spec{Queue: "fast"})
	other := f.submit(t, "noop", tasks.Spec{Queue: "other"})
	require.Equal(t, tasks.StateSucceeded, f.wait(t, fast.ID).State)
	got, err := f.store.Get(context.Background(), other.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State, "a queue the pool does not work stays queued")
}

func TestPoolRefusesMountsOutsideAllowList(t *testing.T) {
	t.Parallel()
	allowed := t.TempDir()
	f := newFixture(t, pool.Config{Policy: tasks.Policy{MountsAllow: []string{allowed}}})
	sha := putFixture(t, f.store, "noop")
	_, _, err := f.pl.Submit(context.Background(), tasks.Spec{Module: sha, Mounts: []tasks.Mount{{HostPath: "/etc", GuestPath: "/etc"}}})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	task, _, err := f.pl.Submit(context.Background(), tasks.Spec{Module: sha, Mounts: []tasks.Mount{{HostPath: allowed, GuestPath: "/data"}}})
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, f.wait(t, task.ID).State)
}

func TestPoolMemoryAndOutputLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	mem := f.submit(t, "memgrow", tasks.Spec{MaxAttempts: 1, Limits: tasks.Limits{MemoryBytes: 1 << 20}})
	out := f.submit(t, "flood", tasks.Spec{MaxAttempts: 1, Limits: tasks.Limits{Stdout: 4096}})
	require.Contains(t, f.wait(t, mem.ID).LastError, "memory limit")
	require.Contains(t, f.wait(t, out.ID).LastError, "stdout over its limit of 4096 bytes")
}

func TestRetryPolicyBackoff(t *testing.T) {
	t.Parallel()
	p := tasks.RetryPolicy{Base: time.Second, Max: 8 * time.Second, Jitter: -1}.WithDefaults()
	p.Jitter = 0
	require.Equal(t, time.Second, p.Backoff(1))
	require.Equal(t, 2*time.Second, p.Backoff(2))
	require.Equal(t, 8*time.Second, p.Backoff(4))
	require.Equal(t, 8*time.Second, p.Backoff(40))
	p.Jitter = 0.5
	for range 100 {
		d := p.Backoff(2)
		require.GreaterOrEqual(t, d, time.Second)
		require.LessOrEqual(t, d, 3*time.Second)
	}
}

// TestPoolReleasesTasksClaimedAhead: short tasks are claimed ahead of the
// free workers; when intake stops, those no worker started go back to the
// queue untouched (no attempt recorded, attempt number restored).
func TestPoolReleasesTasksClaimedAhead(t *testing.T) {
	t.Parallel()
	// One stuck task occupies the only worker; the rest wait, claimed.
	f, _, waiting := busyClaimingAhead(t, "stop_ignore", 5)
	testutil.WaitFor(t, "the pool to claim ahead", func() bool {
		if f.pl.Stats().Running >= 6 {
			return true
		}
		f.pl.Wake()
		return false
	})
	f.pl.StopIntake()
	f.pl.ForceStop()
	<-f.pl.Idle()
	for _, w := range waiting {
		got, err := f.store.Get(context.Background(), w.ID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateQueued, got.State)
		require.Zero(t, got.Attempt, "a released claim leaves no trace")
		require.Empty(t, attempts(t, f.store, w.ID))
	}
}

func TestPoolConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := pool.New(nil, nil, pool.Config{})
	require.Error(t, err)
	require.Error(t, pool.Config{Lease: time.Second, Heartbeat: 2 * time.Second}.WithDefaults().Validate())
	require.NoError(t, pool.Config{}.WithDefaults().Validate())
	def := pool.Config{}.WithDefaults()
	require.Equal(t, pool.DefaultLease, def.Lease, "one lease default, runner serve's too")
	require.Equal(t, pool.DefaultLease/3, def.Heartbeat)
}

func TestPoolRecordsProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	task := f.submit(t, "progress", tasks.Spec{})
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateSucceeded, done.State)
	require.EqualValues(t, 3, done.ProgressDone)
	require.EqualValues(t, 10, done.ProgressTotal)
}

func TestPoolWaitUnknownTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{})
	_, err := f.pl.Wait(context.Background(), 424242)
	require.ErrorIs(t, err, tasks.ErrNotFound)
}

// TestPoolWritesProgressWhileRunning: a running guest's progress reaches
// the store every ProgressEvery, not only at the heartbeat (an hour away
// here) or at the end of the attempt.
func TestPoolWritesProgressWhileRunning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{Lease: 2 * time.Hour, Heartbeat: time.Hour, ProgressEvery: 10 * time.Millisecond})
	task := f.submit(t, "progress_wait", tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour}})
	testutil.WaitFor(t, "the progress to reach the store while the task runs", func() bool {
		got, err := f.store.Get(context.Background(), task.ID)
		require.NoError(t, err)
		require.False(t, got.State.Terminal(), "the guest runs until the pool stops")
		return got.ProgressDone == 1 && got.ProgressTotal == 2
	})
	f.pl.RequestStop() // the guest exits 75: the cleanup's Stop is quick
}

// TestPoolRuntimeClosedUnderIt: a sandbox runtime closed while the pool
// runs (its owner stopping out of order) does not make tasks dead: the
// attempt is recorded as not run and not counted, the task is queued
// again, and the pool takes no more tasks.
func TestPoolRuntimeClosedUnderIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{Workers: 1})
	require.NoError(t, f.rt.Close(context.Background()))
	task := f.submit(t, "noop", tasks.Spec{})
	var atts []tasks.Attempt
	testutil.WaitFor(t, "the attempt to be recorded", func() bool {
		atts = attempts(t, f.store, task.ID)
		return len(atts) > 0
	})
	require.Equal(t, "forced", atts[0].Outcome)
	require.False(t, atts[0].Counted)
	require.Contains(t, atts[0].Reason, "sandbox runtime was closed")
	<-f.pl.Idle()
	got, err := f.store.Get(context.Background(), task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)
	require.Zero(t, got.Failures)
	require.Len(t, attempts(t, f.store, task.ID), 1, "the pool took no more tasks")
}
