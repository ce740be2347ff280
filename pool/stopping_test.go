package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/blockhost"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// newFixtureRT is newFixture with a sandbox configuration of its own.
func newFixtureRT(t *testing.T, cfg pool.Config, rcfg sandbox.Config) *fixture {
	t.Helper()
	return newFixtureWrapped(t, cfg, rcfg, nil)
}

// newFixtureWrapped is newFixtureRT whose pool uses wrap(store) (nil: the
// store itself), a wrapper of the real store that fails some of its calls.
func newFixtureWrapped(t *testing.T, cfg pool.Config, rcfg sandbox.Config, wrap func(*sqlite.Store) tasks.Store) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Exclusive: true})
	require.NoError(t, err)
	var ps tasks.Store = store
	if wrap != nil {
		ps = wrap(store)
	}
	rt, err := sandbox.New(ctx, rcfg)
	require.NoError(t, err)
	if cfg.Poll == 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	cfg.Retry = tasks.RetryPolicy{Base: time.Millisecond, Max: 5 * time.Millisecond}
	pl, err := pool.New(ps, rt, cfg)
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		require.NoError(t, pl.Stop(stopCtx))
		// The compilations the tasks gave up on (sandbox's own tests wait
		// for them with an unexported helper; Stats is the public view).
		testutil.WaitFor(t, "the abandoned compilations to end", func() bool { return rt.Stats().Compiling == 0 })
		require.NoError(t, rt.Close(ctx))
		require.NoError(t, store.Close())
	})
	return &fixture{store: store, rt: rt, pl: pl}
}

// slowCompileConfig is the sandbox configuration of every test that
// compiles a slow-to-compile module: whatever refuses such modules before
// compiling (pre-validation limits) must be lifted here.
func slowCompileConfig(cfg sandbox.Config) sandbox.Config {
	const unlimited = 1<<32 - 1 // the code-shape limits that refuse compile bombs
	cfg.ModuleLimits = sandbox.ModuleLimits{MaxFunctionSize: unlimited, MaxLocals: unlimited,
		MaxBrTableTargets: unlimited, MaxBlockDepth: unlimited, MaxBranchesToLabel: unlimited}
	return cfg
}

// fifoDir is a directory holding "fifo", a named pipe nobody writes: the
// stopping_block fixture blocks on it where no forced stop reaches. The
// test's cleanup (run before the fixture's) opens and closes its write
// end, so the stray guests end.
func fifoDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	return dir
}

func releaseFifo(t *testing.T, dir string) {
	t.Cleanup(func() {
		if f, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
}

// waitProgress polls the store until the task's guest reported progress
// (there is no channel to wait on across the store).
func waitProgress(t *testing.T, s tasks.Store, id int64) {
	t.Helper()
	testutil.WaitFor(t, "the guest to report progress", func() bool {
		got, err := s.Get(context.Background(), id)
		require.NoError(t, err)
		return got.ProgressDone > 0
	})
}

// precompile compiles a fixture ahead, so that its tasks' short
// timeouts are not spent compiling (a loaded machine under -race can take
// more than 100 ms).
func precompile(t *testing.T, f *fixture, name string) {
	t.Helper()
	_, err := f.rt.Compile(context.Background(), wat.MustLoad(name))
	require.NoError(t, err)
}

// fifoSpec is a task of the stopping_block fixture that blocks on dir's
// fifo, in a host function that ignores every stop (blockHost).
func fifoSpec(dir string, timeout time.Duration, maxAttempts int) tasks.Spec {
	return tasks.Spec{MaxAttempts: maxAttempts, Limits: tasks.Limits{Timeout: timeout},
		Input: []byte(filepath.Join(dir, "fifo"))}
}

// blockHost holds stopping_block's host function (mounts never block:
// the sandbox opens nothing but regular files and directories in them).
var blockHost = []sandbox.HostModuleDef{blockhost.Def()}

// runUnstoppable starts a one-worker pool over a sandbox whose stop
// watchdog abandons a guest 50ms after its forced stop, and runs a
// stopping_block task (100ms timeout, at most maxAttempts attempts) on a
// fresh fifo until it ends. It returns the fixture, the fifo's directory
// and the ended task.
func runUnstoppable(t *testing.T, maxAttempts int) (*fixture, string, tasks.Task) {
	t.Helper()
	dir := fifoDir(t)
	f := newFixtureRT(t, pool.Config{Workers: 1, Policy: tasks.Policy{MountsAllow: []string{dir}}}, sandbox.Config{StopWatchdog: 50 * time.Millisecond, HostModules: blockHost})
	releaseFifo(t, dir)
	precompile(t, f, "stopping_block")
	task := f.submit(t, "stopping_block", fifoSpec(dir, 100*time.Millisecond, maxAttempts))
	return f, dir, f.wait(t, task.ID)
}

// TestPoolAbandonsUnstoppableAttempt: an attempt whose guest a forced
// stop cannot end is recorded (timed_out, counted, with the reason) and
// its worker's place is taken: with one worker, the next task runs.
func TestPoolAbandonsUnstoppableAttempt(t *testing.T) {
	t.Parallel()
	f, _, done := runUnstoppable(t, 1)
	require.Equal(t, tasks.StateDead, done.State)
	att := onlyAttempt(t, f.store, done.ID, "timed_out")
	require.True(t, att.Counted)
	require.Contains(t, att.Reason, "the guest did not end within 50ms of its forced stop; abandoned (its goroutine still runs)")
	require.Equal(t, 1, f.rt.Stats().Stray)

	next := f.submit(t, "noop", tasks.Spec{})
	require.Equal(t, tasks.StateSucceeded, f.wait(t, next.ID).State, "the worker's place was given back")
	require.Equal(t, 2, f.pl.Stats().Finished)
	<-f.pl.Idle()
}

// TestPoolUnstoppableTwiceIsDead: the second abandoned attempt of a module
// refuses it; the task is dead with that reason, and so is any other task
// of the module, at once.
func TestPoolUnstoppableTwiceIsDead(t *testing.T) {
	t.Parallel()
	f, dir, done := runUnstoppable(t, 10)
	require.Equal(t, tasks.StateDead, done.State)
	require.Equal(t, 2, done.Failures)
	atts := attempts(t, f.store, done.ID)
	require.Len(t, atts, 2)
	require.Equal(t, "timed_out", atts[0].Outcome)
	require.Equal(t, "unstoppable", atts[1].Outcome)
	require.True(t, atts[1].Counted)
	require.Contains(t, atts[1].Reason, "module could not be stopped twice")
	require.Equal(t, 2, f.rt.Stats().Stray)

	other := f.submit(t, "stopping_block", fifoSpec(dir, time.Hour, 10))
	done = f.wait(t, other.ID)
	require.Equal(t, tasks.StateDead, done.State)
	require.Equal(t, "module could not be stopped twice (the stop watchdog abandoned two of its runs); refused until the runner restarts", done.LastError)
	require.Len(t, attempts(t, f.store, other.ID), 1)
}

// TestPoolForceStopAbandoned: at the pool's forced stop, an unstoppable
// guest is abandoned and recorded (counted: a guest that cannot be stopped
// is its own fault), and the pool becomes idle and stops.
func TestPoolForceStopAbandoned(t *testing.T) {
	t.Parallel()
	dir := fifoDir(t)
	f := newFixtureRT(t, pool.Config{Policy: tasks.Policy{MountsAllow: []string{dir}}, ProgressEvery: 5 * time.Millisecond},
		sandbox.Config{StopWatchdog: 50 * time.Millisecond, HostModules: blockHost})
	releaseFifo(t, dir)
	task := f.submit(t, "stopping_block", fifoSpec(dir, time.Hour, 10))
	waitProgress(t, f.store, task.ID) // the guest is about to block: nothing checks the stop until it does
	f.pl.ForceStop()
	select {
	case <-f.pl.Idle():
	case <-time.After(bound):
		t.Fatal("the pool did not become idle after the forced stop")
	}
	att := onlyAttempt(t, f.store, task.ID, "forced")
	require.True(t, att.Counted)
	require.Contains(t, att.Reason, "abandoned (its goroutine still runs)")
	require.Equal(t, 1, f.pl.Stats().Forced)
	got, err := f.store.Get(context.Background(), task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)
	require.Equal(t, 1, got.Failures)
}

// TestPoolCompileNotChargedToAttempt: compiling is not the attempt: a
// task whose module compiles for seconds, under a 500ms attempt timeout,
// succeeds in its first attempt (the compile budget bounds the compile;
// issue 42, item 2).
func TestPoolCompileNotChargedToAttempt(t *testing.T) {
	t.Parallel()
	f := newFixtureRT(t, pool.Config{}, slowCompileConfig(sandbox.Config{}))
	slow := testwasm.BrTableModule(testwasm.SlowBrTableTargets, t.Name())
	sha, err := f.store.PutModule(context.Background(), slow)
	require.NoError(t, err)
	task, _, err := f.pl.Submit(context.Background(), tasks.Spec{Module: sha, MaxAttempts: 1, Limits: tasks.Limits{Timeout: 500 * time.Millisecond}})
	require.NoError(t, err)
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.Len(t, attempts(t, f.store, task.ID), 1)
	require.EqualValues(t, 1, f.rt.Stats().Compilations)
}

// TestPoolCompileBudget: a module past the compile budget is not dead: its
// task is retried after Config.CompileRetry (each attempt counted, and
// refused at once while the compilation goes on in the background), and
// runs once the compilation ended, with no second compilation.
func TestPoolCompileBudget(t *testing.T) {
	t.Parallel()
	f, task, done := slowCompileTask(t, 100*time.Millisecond, 1000)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	atts := attempts(t, f.store, task.ID)
	require.Greater(t, len(atts), 1)
	require.Equal(t, "invalid_module", atts[0].Outcome)
	require.Contains(t, atts[0].Reason, "compiling took longer than the compile budget of 50ms")
	for _, a := range atts[1 : len(atts)-1] {
		require.Equal(t, "invalid_module", a.Outcome, "refused while it compiles")
		require.GreaterOrEqual(t, a.StartedAt.Sub(atts[0].StartedAt), 100*time.Millisecond, "after CompileRetry")
	}
	require.EqualValues(t, 1, f.rt.Stats().Compilations)
}

// slowCompileTask submits a task of maxAttempts attempts whose module
// compiles for longer than the compile budget (50 ms) to a pool that
// retries it after retry, and waits for the task to end: the fixture, the
// task and how it ended.
func slowCompileTask(t *testing.T, retry time.Duration, maxAttempts int) (*fixture, tasks.Task, tasks.Task) {
	t.Helper()
	f := newFixtureRT(t, pool.Config{CompileRetry: retry},
		slowCompileConfig(sandbox.Config{CompileTimeout: 50 * time.Millisecond}))
	sha, err := f.store.PutModule(context.Background(), testwasm.BrTableModule(testwasm.SlowBrTableTargets, t.Name()))
	require.NoError(t, err)
	task, _, err := f.pl.Submit(context.Background(), tasks.Spec{Module: sha, MaxAttempts: maxAttempts})
	require.NoError(t, err)
	return f, task, f.wait(t, task.ID)
}

// TestPoolCompileBudgetAttempts: a task whose module stays past the
// compile budget dies once its attempts are used up.
func TestPoolCompileBudgetAttempts(t *testing.T) {
	t.Parallel()
	f, task, done := slowCompileTask(t, time.Millisecond, 2)
	require.Equal(t, tasks.StateDead, done.State)
	require.Contains(t, done.LastError, "compiling took longer than the compile budget of 50ms")
	require.Len(t, attempts(t, f.store, task.ID), 2)
}
