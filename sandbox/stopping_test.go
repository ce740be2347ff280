package sandbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// slowTargets makes testwasm.BrTableModule take a second or two to
// compile, 20 to 40 times the budgets and timeouts the tests below use
// (50 ms), with or without -race.
const slowTargets = testwasm.SlowBrTableTargets

// slowCompileConfig is the Config of every test that compiles a
// slow-to-compile module: whatever refuses such modules before compiling
// (pre-validation limits) must be lifted here.
func slowCompileConfig(cfg sandbox.Config) sandbox.Config {
	const unlimited = 1<<32 - 1 // the code-shape limits that refuse compile bombs
	cfg.ModuleLimits = sandbox.ModuleLimits{MaxFunctionSize: unlimited, MaxLocals: unlimited,
		MaxBrTableTargets: unlimited, MaxBlockDepth: unlimited, MaxBranchesToLabel: unlimited}
	return cfg
}

// newSlowRuntime is newRuntime for tests that compile slow modules: the
// test ends once every compilation has (they would outlive it otherwise).
func newSlowRuntime(t *testing.T, cfg sandbox.Config) *sandbox.Runtime {
	t.Helper()
	rt := newRuntime(t, slowCompileConfig(cfg))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		require.NoError(t, rt.WaitCompilations(ctx))
	})
	return rt
}

// newLogWatch is testutil.NewLogWatch: a logger whose entries tests can
// wait for.
var newLogWatch = testutil.NewLogWatch

// waitFor waits for ch to close, within bound.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	testutil.WaitClosed(t, ch, what, bound)
}

// TestCompileReturnsAtContextDone: a caller whose context ends gets its
// error at once while the compilation goes on; the next caller waits for
// that same compilation and gets the module.
func TestCompileReturnsAtContextDone(t *testing.T) {
	t.Parallel()
	rt := newSlowRuntime(t, sandbox.Config{})
	slow := testwasm.BrTableModule(slowTargets, t.Name())

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := runBounded(t, func() error { _, err := rt.Compile(ctx, slow); return err })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	st := rt.Stats()
	require.Equal(t, 1, st.Compiling, "the compilation goes on")
	require.Equal(t, 1, st.CompilingAbandoned, "nobody waits for it")

	mod := runBounded(t, func() *sandbox.Module {
		mod, err := rt.Compile(context.Background(), slow)
		require.NoError(t, err)
		return mod
	})
	st = rt.Stats()
	require.EqualValues(t, 1, st.Compilations, "one compilation served both callers")
	require.Zero(t, st.Compiling)
	got, ok := rt.Lookup(mod.SHA256)
	require.True(t, ok)
	require.Same(t, mod, got)
	out := run(t, rt, context.Background(), mod, sandbox.Spec{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
}

// TestLookupDoesNotWait: a module still compiling is not found, at once.
func TestLookupDoesNotWait(t *testing.T) {
	t.Parallel()
	rt := newSlowRuntime(t, sandbox.Config{})
	slow := testwasm.BrTableModule(slowTargets, t.Name())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := rt.Compile(ctx, slow)
	require.ErrorIs(t, err, context.Canceled)
	ok := runBounded(t, func() bool { _, ok := rt.Lookup(sandbox.SHA256(slow)); return ok })
	require.False(t, ok)
}

// TestCompileBudget: a compilation past Config.CompileTimeout refuses the
// module while it goes on in the background; once it ends, the module is
// compiled and runs (a budget passed on a loaded machine says nothing of
// the module), with no second compilation.
func TestCompileBudget(t *testing.T) {
	t.Parallel()
	logger, lw := newLogWatch()
	rt := newSlowRuntime(t, sandbox.Config{CompileTimeout: 250 * time.Millisecond, Logger: logger})
	slow := testwasm.BrTableModule(slowTargets, t.Name())
	ended := lw.Next("a compilation that went past the compile budget has ended")
	// Another module, compiled before the slow one keeps a core busy: under
	// CI's load a compilation started after it could itself outlast a budget of 50ms (it did once: 250ms now, while the slow module takes seconds).
	noop := compile(t, rt, "noop")

	check := func(err error) {
		t.Helper()
		var me *sandbox.ModuleError
		require.ErrorAs(t, err, &me)
		require.Equal(t, sandbox.KindInvalidModule, me.Kind)
		require.ErrorIs(t, err, sandbox.ErrInvalidModule)
		require.ErrorIs(t, err, sandbox.ErrCompileTimeout)
		require.Contains(t, err.Error(), "longer than the compile budget of 250ms (sandbox.compile_timeout)")
		require.Equal(t, sandbox.KindInvalidModule, sandbox.OutcomeFromError(err).Kind)
	}
	err := runBounded(t, func() error { _, err := rt.Compile(context.Background(), slow); return err })
	check(err)
	st := rt.Stats()
	require.EqualValues(t, 1, st.CompileTimeouts)
	require.Equal(t, 1, st.Refused)
	require.Equal(t, 1, st.Compiling, "the compilation goes on past the budget")
	require.Equal(t, 1, st.CompilingAbandoned)

	err = runBounded(t, func() error { _, err := rt.Compile(context.Background(), slow); return err })
	check(err) // at once, while the first compilation still runs
	_, ok := rt.Lookup(sandbox.SHA256(slow))
	require.False(t, ok, "not while it compiles")
	waitFor(t, ended, "the compilation past its budget ends")
	mod, ok := rt.Lookup(sandbox.SHA256(slow))
	require.True(t, ok, "compiled once its compilation ended")
	again, err := rt.Compile(context.Background(), slow)
	require.NoError(t, err)
	require.Same(t, mod, again)
	st = rt.Stats()
	require.EqualValues(t, 2, st.Compilations, "noop's and the slow module's, not the slow one's again")
	require.Zero(t, st.Refused)
	out := run(t, rt, context.Background(), mod, sandbox.Spec{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())

	// Other modules are not affected.
	out = run(t, rt, context.Background(), noop, sandbox.Spec{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind)
}

// TestCloseDuringCompile: closing the runtime under a compilation neither
// panics nor blocks past Close's context; the caller gets ErrClosed.
func TestCloseDuringCompile(t *testing.T) {
	t.Parallel()
	logger, lw := newLogWatch()
	rt, err := sandbox.New(context.Background(), slowCompileConfig(sandbox.Config{Logger: logger}))
	require.NoError(t, err)
	slow := testwasm.BrTableModule(slowTargets, t.Name())
	ended := lw.Next("compilation ended")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // neither Compile nor Close waits for the compilation
	_, err = rt.Compile(ctx, slow)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, rt.Stats().Compiling)
	require.NoError(t, runBounded(t, func() error { return rt.Close(ctx) }))
	_, err = rt.Compile(context.Background(), slow)
	require.ErrorIs(t, err, sandbox.ErrClosed)
	// The compilation ends on its own, its result dropped, and then the
	// runtime is released; let it end before goleak looks.
	waitFor(t, ended, "the compilation under Close ends")
	require.Contains(t, lw.Logs.FilterMessage("compilation ended").All()[0].ContextMap()["error"], "closed")
}

// TestSpecStarted: the attempt timeout counts from Spec.Started.
func TestSpecStarted(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	out := run(t, rt, context.Background(), compile(t, rt, "loop"), sandbox.Spec{
		Started: time.Now().Add(-time.Hour - time.Second), Limits: sandbox.Limits{Timeout: time.Hour}})
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	require.Contains(t, out.Message, "attempt timeout of 1h0m0s reached")
}

// stuckWriter is a stderr tee that blocks, ignoring every context, until
// released: called on the guest's thread, it makes a guest that no forced
// stop can end.
type stuckWriter struct {
	entered, release chan struct{}
	once, rel        sync.Once
}

func newStuckWriter(t *testing.T) *stuckWriter {
	w := &stuckWriter{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(w.free)
	return w
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	return len(p), nil
}

func (w *stuckWriter) free() { w.rel.Do(func() { close(w.release) }) }

// stuckSpec is a run of flood_stderr that blocks in its first write.
func stuckSpec(w *stuckWriter, timeout time.Duration) sandbox.Spec {
	return sandbox.Spec{StderrTee: w, Limits: sandbox.Limits{Timeout: timeout, MaxStderr: 1 << 20}}
}

// TestWatchdogForced: a guest that a forced stop cannot end is abandoned
// StopWatchdog later: the caller gets a forced outcome that says so, once,
// and the stray is counted until it ends.
func TestWatchdogForced(t *testing.T) {
	t.Parallel()
	logger, lw := newLogWatch()
	rt := newRuntime(t, sandbox.Config{StopWatchdog: 50 * time.Millisecond, Logger: logger})
	mod := compile(t, rt, "flood_stderr")
	w := newStuckWriter(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	spec := stuckSpec(w, -1)
	var calls []*sandbox.Outcome
	var mu sync.Mutex
	spec.OnAbandon = func(out *sandbox.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, out)
	}
	go func() {
		<-w.entered
		cancel(errFakeStop)
	}()
	out, err := runBounded(t, func() error2 { out, err := rt.RunBounded(ctx, mod, spec); return error2{out, err} }).split()
	require.NoError(t, err)
	require.Equal(t, sandbox.KindForced, out.Kind, out.String())
	require.True(t, out.Abandoned)
	require.False(t, out.Deadline)
	require.Contains(t, out.Message, "stopped by force: test stop; the guest did not end within 50ms of its forced stop; abandoned (its goroutine still runs)")
	mu.Lock()
	require.Equal(t, []*sandbox.Outcome{out}, calls, "OnAbandon is called once, with the outcome")
	mu.Unlock()
	st := rt.Stats()
	require.EqualValues(t, 1, st.Abandoned)
	require.Equal(t, 1, st.Stray)
	require.Equal(t, 1, lw.Logs.FilterMessageSnippet("run abandoned").FilterField(zap.String("outcome", "forced")).Len())

	ended := lw.Next("an abandoned guest ended after all")
	w.free()
	waitFor(t, ended, "the stray ends once its tee returns")
	require.Zero(t, rt.Stats().Stray)
	require.EqualValues(t, 1, rt.Stats().Abandoned)
	require.Equal(t, 1, lw.Logs.FilterMessageSnippet("run abandoned").Len(), "logged once")

	// One strike does not refuse the module.
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{MaxStderr: 8192}})
	require.Equal(t, sandbox.KindOutputLimit, out.Kind, out.String())
}

var errFakeStop = errorString("test stop")

type errorString string

func (e errorString) Error() string { return string(e) }

// error2 carries an outcome and an error through runBounded.
type error2 struct {
	out *sandbox.Outcome
	err error
}

func (e error2) split() (*sandbox.Outcome, error) { return e.out, e.err }

// TestWatchdogTimedOut: at the attempt deadline the abandoned outcome is
// timed_out; Run itself returns it once the guest ends.
func TestWatchdogTimedOut(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{StopWatchdog: 50 * time.Millisecond})
	mod := compile(t, rt, "flood_stderr")
	w := newStuckWriter(t)
	abandoned := make(chan *sandbox.Outcome, 1)
	spec := stuckSpec(w, 100*time.Millisecond)
	spec.OnAbandon = func(out *sandbox.Outcome) { abandoned <- out }
	ran := make(chan *sandbox.Outcome, 1)
	go func() {
		out, err := rt.Run(context.Background(), mod, spec)
		require.NoError(t, err)
		ran <- out
	}()
	out := runBounded(t, func() *sandbox.Outcome { return <-abandoned })
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	require.True(t, out.Deadline)
	require.True(t, out.Abandoned)
	require.Contains(t, out.Message, "attempt timeout of 100ms reached; forced, but the guest did not end within 50ms of its forced stop; abandoned")
	select {
	case <-ran:
		t.Fatal("Run returned while its guest was stuck")
	default:
	}
	w.free()
	require.Same(t, out, runBounded(t, func() *sandbox.Outcome { return <-ran }), "Run returns what the caller was told")
}

// TestWatchdogTwoStrikes: a module whose runs are abandoned twice is
// refused: the second abandoned run is unstoppable, and so is every later
// run or compile of it (TestWatchdogStrikesOutliveStrays: also when the
// first stray ended in between).
func TestWatchdogTwoStrikes(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{StopWatchdog: 50 * time.Millisecond})
	mod := compile(t, rt, "flood_stderr")
	var kinds []sandbox.Kind
	for range 2 {
		w := newStuckWriter(t) // released at the end: both stray at once
		out, err := runBounded(t, func() error2 {
			out, err := rt.RunBounded(context.Background(), mod, stuckSpec(w, 100*time.Millisecond))
			return error2{out, err}
		}).split()
		require.NoError(t, err)
		require.True(t, out.Abandoned)
		kinds = append(kinds, out.Kind)
		if out.Kind == sandbox.KindUnstoppable {
			require.Contains(t, out.Message, "abandoned run 2 of this module: module could not be stopped twice")
		}
	}
	require.Equal(t, []sandbox.Kind{sandbox.KindTimedOut, sandbox.KindUnstoppable}, kinds)
	require.Equal(t, 2, rt.Stats().Stray)
	require.Equal(t, 1, rt.Stats().Refused)

	out := run(t, rt, context.Background(), mod, sandbox.Spec{})
	require.Equal(t, sandbox.KindUnstoppable, out.Kind)
	require.Contains(t, out.Message, "module could not be stopped twice")
	require.ErrorIs(t, out.Err, sandbox.ErrUnstoppable)
	_, err := rt.Compile(context.Background(), wat.MustLoad("flood_stderr"))
	require.ErrorIs(t, err, sandbox.ErrUnstoppable)
	require.NotErrorIs(t, err, sandbox.ErrInvalidModule, "its own kind")
	_, ok := rt.Lookup(mod.SHA256)
	require.False(t, ok)
}

// TestWatchdogOff: a negative StopWatchdog watches nothing; normal runs
// are not affected either way.
func TestWatchdogOff(t *testing.T) {
	t.Parallel()
	for _, wd := range []time.Duration{-1, 0} {
		rt := newRuntime(t, sandbox.Config{StopWatchdog: wd})
		out := run(t, rt, context.Background(), compile(t, rt, "loop"), sandbox.Spec{Limits: sandbox.Limits{Timeout: 20 * time.Millisecond}})
		require.Equal(t, sandbox.KindTimedOut, out.Kind)
		require.False(t, out.Abandoned)
		require.Zero(t, rt.Stats().Abandoned)
	}
}
