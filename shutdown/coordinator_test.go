package shutdown

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// harness is a coordinator with the default config, a fake clock and an
// observed logger.
type harness struct {
	*Coordinator
	clk    *fakeClock
	logs   *observer.ObservedLogs
	phases chan Phase
}

// newTest returns a harness with ws registered.
func newTest(t *testing.T, ws ...Workload) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	clk := newFakeClock()
	c, err := New(Config{}, Options{Logger: zap.New(core), Clock: clk})
	require.NoError(t, err)
	h := &harness{Coordinator: c, clk: clk, logs: logs, phases: make(chan Phase, 8)}
	c.onPhase = func(p Phase) { h.phases <- p }
	for _, w := range ws {
		require.NoError(t, c.Register(w))
	}
	return h
}

// fireIn waits until the stop is in phase p, then for a timer set for
// t0+offset, and moves the clock there.
func (h *harness) fireIn(t *testing.T, p Phase, offset time.Duration) {
	t.Helper()
	for recv(t, h.phases) != p { //nolint:revive // skips the earlier phases
	}
	h.clk.fireAt(t, offset)
}

// start runs Shutdown on a goroutine and returns where its report arrives.
func start(ctx context.Context, c interface{ Shutdown(context.Context) Report }) <-chan Report {
	ch := make(chan Report, 1)
	go func() { ch <- c.Shutdown(ctx) }()
	return ch
}

// startOne registers one fake workload with running attempts that end
// on mode, starts the stop on a goroutine and waits for the workload's
// StopIntake. It returns the workload, the harness and where the report
// arrives.
func startOne(t *testing.T, running int, mode endsOn) (*fakeWorkload, *harness, <-chan Report) {
	t.Helper()
	w := newFakeWorkload(running, mode)
	c := newTest(t, w)
	got := start(context.Background(), c)
	recv(t, w.intake)
	return w, c, got
}

func requireSkipped(t *testing.T, r Report, want ...Phase) {
	t.Helper()
	skipped := map[Phase]bool{}
	for _, p := range want {
		skipped[p] = true
	}
	require.Len(t, r.Phases, 5)
	for i, pr := range r.Phases {
		require.Equal(t, Phase(i+1), pr.Phase)
		require.Equal(t, skipped[pr.Phase], pr.Skipped, "phase %s skipped", pr.Phase)
	}
}

func TestDrainFinishes(t *testing.T) {
	t.Parallel()
	w, _, got := startOne(t, 2, endsNever)
	w.finish()
	r := recv(t, got)

	requireSkipped(t, r, PhaseCancel, PhaseForce, PhaseHooks)
	require.Equal(t, 2, r.Finished)
	// Finished in phase 1 or 2, depending on when StopIntake returned.
	require.Equal(t, 2, r.Phase(PhaseIntake).Finished+r.Phase(PhaseDrain).Finished)
	require.Zero(t, r.Cooperative)
	require.Zero(t, r.Forced)
	require.Zero(t, r.NotEnded)
	require.False(t, r.Escalated)
	require.False(t, r.Canceled)
	require.NoError(t, r.Err())
	require.False(t, isClosed(w.requested), "RequestStop must not be called")
	require.False(t, isClosed(w.forced), "ForceStop must not be called")
}

func TestNothingRunning(t *testing.T) {
	t.Parallel()
	c := newTest(t)
	r := c.Shutdown(context.Background())
	requireSkipped(t, r, PhaseCancel, PhaseForce, PhaseHooks)
	require.Zero(t, r.Total)
}

func TestCooperativeStop(t *testing.T) {
	t.Parallel()
	w, c, got := startOne(t, 1, endsRequest)
	c.fireIn(t, PhaseDrain, 5*time.Second) // drain runs out
	r := recv(t, got)

	requireSkipped(t, r, PhaseForce, PhaseHooks)
	require.Equal(t, 1, r.Cooperative)
	require.Equal(t, 1, r.Phase(PhaseCancel).Interrupted)
	require.Equal(t, 5*time.Second, r.Phase(PhaseDrain).Duration)
	require.Zero(t, r.Forced)
	require.Zero(t, r.NotEnded)
	require.False(t, isClosed(w.forced))
}

func TestForcedStop(t *testing.T) {
	t.Parallel()
	w, c, got := startOne(t, 3, endsForce)
	c.fireIn(t, PhaseDrain, 5*time.Second) // drain runs out
	recv(t, w.requested)
	c.fireIn(t, PhaseCancel, 20*time.Second) // cancel runs out
	r := recv(t, got)

	requireSkipped(t, r, PhaseHooks)
	require.Equal(t, 3, r.Forced)
	require.Equal(t, 3, r.Phase(PhaseForce).Forced)
	require.Zero(t, r.Cooperative)
	require.Zero(t, r.NotEnded)
	require.Equal(t, 15*time.Second, r.Phase(PhaseCancel).Duration)
}

func TestMixedWorkloads(t *testing.T) {
	t.Parallel()
	drains := newFakeWorkload(1, endsNever)
	coop := newFakeWorkload(2, endsRequest)
	forced := newFakeWorkload(3, endsForce)
	c := newTest(t, drains, coop, forced)

	got := start(context.Background(), c)
	recv(t, forced.intake)
	drains.finish()
	c.fireIn(t, PhaseDrain, 5*time.Second)
	recv(t, coop.idle)
	recv(t, forced.requested)
	c.fireIn(t, PhaseCancel, 20*time.Second)
	r := recv(t, got)

	require.Equal(t, 1, r.Finished)
	require.Equal(t, 2, r.Cooperative)
	require.Equal(t, 3, r.Forced)
	require.Zero(t, r.NotEnded)
	require.Equal(t, 3, r.Phase(PhaseCancel).Running) // forced ones left after phase 3
	require.Zero(t, r.Phase(PhaseForce).Running)
}

func TestNeverEnds(t *testing.T) {
	t.Parallel()
	w := newFakeWorkload(2, endsNever)
	c := newTest(t, w)

	got := start(context.Background(), c)
	c.fireIn(t, PhaseDrain, 5*time.Second)
	recv(t, w.requested)
	c.fireIn(t, PhaseCancel, 20*time.Second)
	recv(t, w.forced)
	c.fireIn(t, PhaseForce, 21*time.Second)
	r := recv(t, got)

	require.Equal(t, 2, r.NotEnded)
	require.Equal(t, 21*time.Second, r.Total)
	require.LessOrEqual(t, r.Total, r.Budget)
	require.ErrorIs(t, r.Err(), ErrNotEnded)
}

func TestBudgetCutsHooks(t *testing.T) {
	t.Parallel()
	w := newFakeWorkload(1, endsNever)
	c := newTest(t, w)
	causes := make(chan error, 1)
	require.NoError(t, c.AddHook(Hook{Name: "slow", Timeout: 10 * time.Second, Run: func(ctx context.Context) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}}))
	ran := false
	require.NoError(t, c.AddHook(Hook{Name: "late", Priority: 1, Run: func(context.Context) error {
		ran = true
		return nil
	}}))

	got := start(context.Background(), c)
	c.fireIn(t, PhaseDrain, 5*time.Second)
	c.fireIn(t, PhaseCancel, 20*time.Second)
	c.fireIn(t, PhaseForce, 21*time.Second)
	c.fireIn(t, PhaseHooks, 25*time.Second) // "slow" gets the 4s left, not its 10s
	r := recv(t, got)

	require.Equal(t, r.Budget, r.Total)
	require.Len(t, r.Hooks, 2)
	slow, late := r.Hooks[0], r.Hooks[1]
	require.True(t, slow.TimedOut)
	require.ErrorIs(t, slow.Err, ErrHookTimeout)
	require.ErrorIs(t, slow.Err, ErrBudgetExhausted)
	require.Equal(t, 10*time.Second, slow.Timeout)
	require.Equal(t, 4*time.Second, slow.Duration)
	require.True(t, late.Skipped)
	require.ErrorIs(t, late.Err, ErrBudgetExhausted)
	require.False(t, ran)
	// The abandoned hook got its ctx cancelled, the budget named as cause.
	cause := recv(t, causes)
	require.ErrorIs(t, cause, ErrHookTimeout)
	require.ErrorIs(t, cause, ErrBudgetExhausted)
	require.Equal(t, 1, c.logs.FilterMessage("shutdown finished").Len())
}

func TestBlockedStopIntakeDoesNotBlockTheStop(t *testing.T) {
	t.Parallel()
	w := newFakeWorkload(1, endsForce)
	w.block = make(chan struct{})
	c := newTest(t, w)

	got := start(context.Background(), c)
	recv(t, w.intake)
	c.fireIn(t, PhaseIntake, 5*time.Second) // phase 1 gives up on StopIntake; drain is spent too
	c.fireIn(t, PhaseCancel, 20*time.Second)
	c.fireIn(t, PhaseForce, 21*time.Second)
	r := recv(t, got)

	require.Equal(t, 5*time.Second, r.Phase(PhaseIntake).Duration)
	require.Equal(t, 1, r.NotEnded)
	// Calls to one workload stay in order: nothing after a blocked StopIntake.
	require.False(t, isClosed(w.requested))
	require.False(t, isClosed(w.forced))

	close(w.block)
	recv(t, w.forced) // the queued calls go through once it returns
	recv(t, w.idle)
}

func TestEscalateDuringDrain(t *testing.T) {
	t.Parallel()
	w, c, got := startOne(t, 1, endsForce)
	c.Escalate()
	r := recv(t, got)

	require.True(t, r.Escalated)
	require.False(t, r.Canceled)
	require.True(t, r.Phase(PhaseCancel).Skipped)
	require.False(t, r.Phase(PhaseForce).Skipped)
	require.Equal(t, 1, r.Forced)
	require.False(t, isClosed(w.requested), "escalation skips RequestStop")

	c.Escalate() // after the stop: nothing happens
}

func TestEscalateBeforeShutdown(t *testing.T) {
	t.Parallel()
	w := newFakeWorkload(1, endsForce)
	c := newTest(t, w)
	c.Escalate()
	require.True(t, c.Ready(), "Escalate alone does not start the stop")

	r := c.Shutdown(context.Background())
	require.True(t, r.Escalated)
	requireSkipped(t, r, PhaseDrain, PhaseCancel, PhaseHooks)
	require.True(t, isClosed(w.intake), "intake is always stopped first")
	require.Equal(t, 1, r.Forced)
}

func TestContextCanceled(t *testing.T) {
	t.Parallel()
	t.Run("before", func(t *testing.T) {
		t.Parallel()
		w := newFakeWorkload(1, endsForce)
		c := newTest(t, w)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := c.Shutdown(ctx)
		require.True(t, r.Canceled)
		require.False(t, r.Escalated)
		require.True(t, r.Phase(PhaseCancel).Skipped)
		require.Equal(t, 1, r.Forced)
	})
	t.Run("during drain", func(t *testing.T) {
		t.Parallel()
		w := newFakeWorkload(1, endsForce)
		c := newTest(t, w)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := start(ctx, c)
		recv(t, w.intake)
		cancel()
		r := recv(t, got)
		require.True(t, r.Canceled)
		require.True(t, r.Phase(PhaseCancel).Skipped)
		require.Equal(t, 1, r.Forced)
	})
	t.Run("second caller", func(t *testing.T) {
		t.Parallel()
		_, c, first := startOne(t, 1, endsForce)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := c.Shutdown(ctx) // waits for the stop it forced
		require.True(t, r.Canceled)
		require.Equal(t, 1, r.Forced)
		require.Equal(t, r, recv(t, first))
	})
}

func TestHooksInPriorityOrder(t *testing.T) {
	t.Parallel()
	c := newTest(t)
	var mu sync.Mutex
	var order []string
	for _, h := range []struct {
		name string
		prio int
	}{{"c", 30}, {"a1", 10}, {"b", 20}, {"a2", 10}, {"first", -5}} {
		require.NoError(t, c.AddHook(Hook{Name: h.name, Priority: h.prio, Run: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, h.name)
			return nil
		}}))
	}
	r := c.Shutdown(context.Background())
	require.Equal(t, []string{"first", "a1", "a2", "b", "c"}, order)
	var names []string
	for _, h := range r.Hooks {
		names = append(names, h.Name)
		require.NoError(t, h.Err)
		require.Equal(t, 2*time.Second, h.Timeout)
	}
	require.Equal(t, order, names)
	require.False(t, r.Phase(PhaseHooks).Skipped)
	require.NoError(t, r.Err())
}

func TestHookFailures(t *testing.T) {
	t.Parallel()
	c := newTest(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	causes := make(chan error, 1)
	okRan := make(chan struct{})
	hooks := []Hook{
		{Name: "hang", Priority: 1, Timeout: 3 * time.Second, Run: func(ctx context.Context) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}},
		{Name: "stubborn", Priority: 2, Run: func(context.Context) error {
			<-release // ignores its ctx: abandoned, not waited for
			return nil
		}},
		{Name: "fail", Priority: 3, Run: func(context.Context) error { return errors.New("boom") }},
		{Name: "panic", Priority: 4, Run: func(context.Context) error { panic("oops") }},
		{Name: "ok", Priority: 5, Run: func(context.Context) error { close(okRan); return nil }},
	}
	for _, h := range hooks {
		require.NoError(t, c.AddHook(h))
	}

	got := start(context.Background(), c)
	c.fireIn(t, PhaseHooks, 3*time.Second) // "hang" times out
	c.clk.fireAt(t, 5*time.Second)         // "stubborn" times out (default 2s)
	r := recv(t, got)
	recv(t, okRan)

	require.Len(t, r.Hooks, 5)
	hang, stubborn, fail, pnc, ok := r.Hooks[0], r.Hooks[1], r.Hooks[2], r.Hooks[3], r.Hooks[4]
	require.True(t, hang.TimedOut)
	require.ErrorIs(t, hang.Err, ErrHookTimeout)
	require.NotErrorIs(t, hang.Err, ErrBudgetExhausted)
	require.EqualError(t, hang.Err, "shutdown: hook timed out after 3s")
	require.ErrorIs(t, recv(t, causes), ErrHookTimeout)
	require.True(t, stubborn.TimedOut)
	require.Equal(t, 2*time.Second, stubborn.Duration)
	require.False(t, fail.TimedOut)
	require.EqualError(t, fail.Err, "boom")
	require.ErrorIs(t, pnc.Err, ErrHookPanicked)
	require.ErrorContains(t, pnc.Err, "oops")
	require.NoError(t, ok.Err)
	require.Len(t, r.HookFailures(), 4)

	err := r.Err()
	require.ErrorIs(t, err, ErrHookTimeout)
	require.ErrorContains(t, err, `hook "fail": boom`)

	// One summary line and one line per failed hook.
	summary := c.logs.FilterMessage("shutdown finished").All()
	require.Len(t, summary, 1)
	require.Equal(t, zapcore.WarnLevel, summary[0].Level)
	require.EqualValues(t, 4, summary[0].ContextMap()["hooks_failed"])
	failed := c.logs.FilterMessage("shutdown hook failed").All()
	require.Len(t, failed, 4)
	require.Equal(t, "hang", failed[0].ContextMap()["hook"])
	require.Equal(t, true, failed[0].ContextMap()["timed_out"])
}

func TestHookDeadlineWithSystemClock(t *testing.T) {
	t.Parallel()
	c, err := New(Config{}, Options{})
	require.NoError(t, err)
	type key struct{}
	require.NoError(t, c.AddHook(Hook{Name: "deadline", Run: func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		if ctx.Value(key{}) != "v" {
			return errors.New("lost the context's values")
		}
		return nil
	}}))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	defer cancel()
	r := c.Shutdown(ctx)
	require.NoError(t, r.Err())
}

func TestHookTimeoutWithSystemClock(t *testing.T) {
	t.Parallel()
	// The hook's deadline and the coordinator's timer end together: the
	// hook may return first, the timer may fire first, or both may be
	// ready at once. Each order must say "timed out", so try many times.
	for range 300 {
		c, err := New(Config{}, Options{})
		require.NoError(t, err)
		require.NoError(t, c.AddHook(Hook{Name: "waits", Timeout: time.Microsecond, Run: func(ctx context.Context) error {
			<-ctx.Done()
			return fmt.Errorf("server: shutdown: %w", ctx.Err())
		}}))
		r := c.Shutdown(context.Background())
		require.Len(t, r.Hooks, 1)
		require.True(t, r.Hooks[0].TimedOut, "%v", r.Hooks[0].Err)
		require.ErrorIs(t, r.Hooks[0].Err, ErrHookTimeout)
	}
}

func TestShutdownTwice(t *testing.T) {
	t.Parallel()
	w := newFakeWorkload(1, endsNever)
	c := newTest(t, w)
	var readyAtIntake bool
	var phaseAtIntake Phase
	w.onIntake = func() {
		readyAtIntake = c.Ready()
		phaseAtIntake = c.Phase()
	}
	require.True(t, c.Ready())
	require.Equal(t, PhaseNone, c.Phase())
	_, ok := c.Report()
	require.False(t, ok)

	first := start(context.Background(), c)
	recv(t, w.intake)
	require.False(t, readyAtIntake)
	require.Equal(t, PhaseIntake, phaseAtIntake)
	require.False(t, c.Ready())
	require.ErrorIs(t, c.Register(newFakeWorkload(0, endsNever)), ErrStopping)
	require.ErrorIs(t, c.AddHook(Hook{Name: "late", Run: func(context.Context) error { return nil }}), ErrStopping)

	second := start(context.Background(), c) // concurrent: waits for the first
	w.finish()
	r1, r2 := recv(t, first), recv(t, second)
	require.Equal(t, r1, r2)
	r3 := c.Shutdown(context.Background()) // after: returns at once
	require.Equal(t, r1, r3)
	r4, ok := c.Report()
	require.True(t, ok)
	require.Equal(t, r1, r4)
	require.True(t, isClosed(c.Done()))
	require.Equal(t, PhaseDone, c.Phase())
	require.False(t, c.Ready())

	// Reports are copies.
	r4.Phases[0].Skipped = true
	r5, _ := c.Report()
	require.False(t, r5.Phases[0].Skipped)
}

type panicky struct{ *fakeWorkload }

func (p panicky) StopIntake() {
	p.fakeWorkload.StopIntake()
	panic("bad workload")
}

func TestWorkloadPanicIsLogged(t *testing.T) {
	t.Parallel()
	w := newFakeWorkload(1, endsNever)
	c := newTest(t, panicky{w})
	got := start(context.Background(), c)
	recv(t, w.intake)
	w.finish()
	r := recv(t, got)
	require.Equal(t, 1, r.Finished)
	require.Equal(t, 1, c.logs.FilterMessage("shutdown: workload panicked").Len())
}

func TestRegisterAndAddHookRefuseBadInput(t *testing.T) {
	t.Parallel()
	c := newTest(t)
	require.Error(t, c.Register(nil))
	require.ErrorContains(t, c.AddHook(Hook{Name: "x"}), `hook "x" has no Run func`)
	require.ErrorContains(t, c.AddHook(Hook{Name: "y", Timeout: -time.Second, Run: func(context.Context) error { return nil }}), "negative timeout (-1s)")
}

func TestReportLog(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	r := Report{
		Budget: 25 * time.Second,
		Phases: []PhaseReport{{Phase: PhaseIntake}, {Phase: PhaseDrain, Finished: 2}, {Phase: PhaseCancel, Skipped: true}},
		Hooks: []HookReport{
			{Name: "http", Priority: 10, Duration: time.Second, TimedOut: true, Err: ErrHookTimeout},
			{Name: "store", Priority: 90, Duration: time.Millisecond},
		},
		Finished: 2,
	}
	r.Log(zap.New(core))
	r.Log(nil)
	all := logs.All()
	require.Len(t, all, 2, "the summary and one line for the failed hook")
	require.Equal(t, zapcore.WarnLevel, all[0].Level)
	require.Equal(t, "shutdown hook failed", all[1].Message)
	require.Equal(t, []any{
		map[string]any{"hook": "http", "priority": 10, "duration": time.Second, "timed_out": true, "error": ErrHookTimeout.Error()},
		map[string]any{"hook": "store", "priority": 90, "duration": time.Millisecond},
	}, all[0].ContextMap()["hook_runs"])
	require.EqualValues(t, 2, all[0].ContextMap()["finished"])
	phases, ok := all[0].ContextMap()["phases"].([]any)
	require.True(t, ok)
	require.Len(t, phases, 3)
	require.Equal(t, map[string]any{"phase": "cancel", "skipped": true}, phases[2])
}

func TestPhaseString(t *testing.T) {
	t.Parallel()
	var names []string
	for p := PhaseNone; p <= PhaseDone+1; p++ {
		names = append(names, p.String())
	}
	require.Equal(t, []string{"none", "intake", "drain", "cancel", "force", "hooks", "done", "phase(7)"}, names)
}
