package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// The runners that record themselves in a store (tasks.Store.RecordRunner)
// and the schedules it keeps (tasks.Store.AddSchedule and the rest).

// testRunners: a record round-trips, is replaced by the next, keeps a
// drain asked (RequestDrain) until the runner starts again, shows
// Silent once its lease passes by the store's clock, is removed, and old
// ones are pruned.
func testRunners(t *testing.T, e *env) {
	list, err := e.s.Runners(e.ctx)
	require.NoError(t, err)
	require.NotNil(t, list)
	require.Empty(t, list)

	a := tasks.RunnerInfo{Owner: "a", Host: "h1", PID: 42, Version: "v1", Started: Start.Add(-time.Hour),
		Lease: 30 * time.Second, Workers: 4, InFlight: 2, Held: 1}
	record := func(r tasks.RunnerInfo) bool {
		t.Helper()
		draining, err := e.s.RecordRunner(e.ctx, r)
		require.NoError(t, err)
		return draining
	}
	require.False(t, record(a))
	e.clock.Advance(time.Second)
	b := tasks.RunnerInfo{Owner: "b", Host: "h2", PID: 7, Version: "v2", Started: Start, Lease: 10 * time.Second, Workers: 1}
	require.False(t, record(b))
	_, err = e.s.RecordRunner(e.ctx, tasks.RunnerInfo{})
	require.Error(t, err, "a record needs an owner")

	list, err = e.s.Runners(e.ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	want := a
	want.LastSeen = Start
	require.Equal(t, want, list[0])
	require.Equal(t, "b", list[1].Owner)
	require.Equal(t, Start.Add(time.Second), list[1].LastSeen)

	// b falls silent past its 10 s lease; a, recorded again, does not.
	e.clock.Advance(20 * time.Second)
	a.InFlight, a.Held, a.Draining = 0, 0, true
	require.True(t, record(a))
	e.clock.Advance(time.Second)
	list, err = e.s.Runners(e.ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.False(t, list[0].Silent)
	require.True(t, list[0].Draining)
	require.Equal(t, 0, list[0].InFlight)
	require.Equal(t, 0, list[0].Held)
	require.True(t, list[1].Silent, "b was last seen past its lease")

	// A drain asked of b is told to b at its next record, and stays asked
	// while b runs (however b records itself); b started again (another
	// Started) is not draining. An owner with no record is an error.
	require.NoError(t, e.s.RequestDrain(e.ctx, "b"))
	require.True(t, record(b), "the drain asked")
	require.True(t, record(b), "still asked")
	list, err = e.s.Runners(e.ctx)
	require.NoError(t, err)
	require.True(t, list[1].Draining)
	b2 := b
	b2.Started = b.Started.Add(time.Minute)
	require.False(t, record(b2), "a new start of b")
	require.ErrorIs(t, e.s.RequestDrain(e.ctx, "nobody"), tasks.ErrRunnerNotFound)
	e.clock.Advance(time.Second)

	require.NoError(t, e.s.RemoveRunner(e.ctx, "a"))
	require.NoError(t, e.s.RemoveRunner(e.ctx, "nobody"))
	list, err = e.s.Runners(e.ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)

	n, err := e.s.PruneRunners(e.ctx, Start)
	require.NoError(t, err)
	require.Zero(t, n, "b was seen after Start")
	n, err = e.s.PruneRunners(e.ctx, e.clock.Now())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	list, err = e.s.Runners(e.ctx)
	require.NoError(t, err)
	require.Empty(t, list)
}

// testSchedules: add, list, get, pause, resume, remove, and the errors.
func testSchedules(t *testing.T, e *env) {
	list, err := e.s.Schedules(e.ctx)
	require.NoError(t, err)
	require.NotNil(t, list)
	require.Empty(t, list)

	spec := e.spec()
	spec.Args, spec.Labels, spec.Queue = []string{"x"}, map[string]string{"k": "v"}, "edge"
	spec.Limits.Timeout = 5 * time.Second
	sc, err := e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "hourly", Cron: "0 * * * *", Spec: spec, LastTask: 9})
	require.NoError(t, err)
	require.Equal(t, Start, sc.Created)
	require.Zero(t, sc.LastTask)
	_, err = e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "hourly", Every: time.Minute, Spec: spec})
	require.ErrorIs(t, err, tasks.ErrScheduleExists)
	_, err = e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "fast", Every: time.Minute, Spec: spec})
	require.NoError(t, err)

	for _, bad := range []tasks.Schedule{
		{Name: "no period", Spec: spec},
		{Name: "x", Spec: spec},
		{Name: "both", Every: time.Minute, Cron: "* * * * *", Spec: spec},
		{Name: "short", Every: time.Millisecond, Spec: spec},
		{Name: "badcron", Cron: "61 * * * *", Spec: spec},
		{Name: "sixfields", Cron: "0 0 * * * *", Spec: spec},
		{Name: "", Every: time.Minute, Spec: spec},
		{Name: "bad/name", Every: time.Minute, Spec: spec},
	} {
		_, err := e.s.AddSchedule(e.ctx, bad)
		require.ErrorIs(t, err, tasks.ErrInvalidSchedule, "%+v", bad)
	}
	_, err = e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "nomodule", Every: time.Minute, Spec: tasks.Spec{Module: sha256Of([]byte("none"))}})
	require.ErrorIs(t, err, tasks.ErrModuleNotFound)

	list, err = e.s.Schedules(e.ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "fast", list[0].Name)
	require.Equal(t, time.Minute, list[0].Every)
	require.Equal(t, sc, list[1])
	require.Equal(t, spec, list[1].Spec, "the spec round-trips")

	got, err := e.s.GetSchedule(e.ctx, "hourly")
	require.NoError(t, err)
	require.Equal(t, sc, got)
	_, err = e.s.GetSchedule(e.ctx, "none")
	require.ErrorIs(t, err, tasks.ErrScheduleNotFound)

	p, err := e.s.PauseSchedule(e.ctx, "hourly", true)
	require.NoError(t, err)
	require.True(t, p.Paused)
	e.clock.Advance(90 * time.Minute)
	p, err = e.s.PauseSchedule(e.ctx, "hourly", false)
	require.NoError(t, err)
	require.False(t, p.Paused)
	require.Equal(t, e.clock.Now(), p.LastRun, "resuming skips the periods paused")
	_, ok := p.Due(e.clock.Now())
	require.False(t, ok)
	_, err = e.s.PauseSchedule(e.ctx, "none", true)
	require.ErrorIs(t, err, tasks.ErrScheduleNotFound)

	require.NoError(t, e.s.MarkScheduleRun(e.ctx, "fast", Start.Add(2*time.Minute), 5))
	require.NoError(t, e.s.MarkScheduleRun(e.ctx, "fast", Start.Add(time.Minute), 4), "an earlier period leaves it")
	got, err = e.s.GetSchedule(e.ctx, "fast")
	require.NoError(t, err)
	require.Equal(t, Start.Add(2*time.Minute), got.LastRun)
	require.Equal(t, int64(5), got.LastTask)
	require.NoError(t, e.s.MarkScheduleRun(e.ctx, "gone", Start, 1))

	require.NoError(t, e.s.RemoveSchedule(e.ctx, "fast"))
	require.ErrorIs(t, e.s.RemoveSchedule(e.ctx, "fast"), tasks.ErrScheduleNotFound)
	list, err = e.s.Schedules(e.ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
}

// testScheduleOnePerPeriod: runners firing one store's schedules at once,
// period after period, submit exactly one task per period; a gap of
// several periods with nothing firing makes one task (the latest period),
// not a burst.
func testScheduleOnePerPeriod(t *testing.T, e *env) {
	// Its tasks are never run here: allow, or skip would hold every period
	// back behind the first (testScheduleOverlap).
	_, err := e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "tick", Every: 10 * time.Second, Overlap: tasks.OverlapAllow, Spec: e.spec()})
	require.NoError(t, err)

	fire := func(now time.Time) {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				_, err := tasks.FireSchedules(e.ctx, e.s, now, e.s.Submit)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	periods := map[string]bool{}
	for range 12 {
		now := e.clock.Advance(3 * time.Second)
		fire(now)
		if p, ok := (tasks.Schedule{Every: 10 * time.Second, Created: Start}).Due(now); ok {
			periods[tasks.ScheduleKey("tick", p)] = true
		}
	}
	// A gap of a minute: six periods missed, one task.
	now := e.clock.Advance(time.Minute)
	fire(now)
	fire(now.Add(time.Second))
	all := e.all(tasks.ListFilter{})
	keys := map[string]int{}
	for _, task := range all {
		require.Equal(t, "tick", task.Labels[tasks.ScheduleLabel])
		keys[task.IdempotencyKey]++
	}
	for k, n := range keys {
		require.Equal(t, 1, n, "key %s", k)
	}
	require.Len(t, all, len(periods)+1, "one task per period reached, and one for the gap")
	sc, err := e.s.GetSchedule(e.ctx, "tick")
	require.NoError(t, err)
	require.Equal(t, all[len(all)-1].ID, sc.LastTask)
}

// testScheduleOverlap: the overlap policies. skip (the default) submits
// no task while the last is queued or running, the period counted as run
// (not made up later); queue_one submits one while the last runs, none
// while it is queued; allow submits every period. RunScheduleNow submits
// one at once, paused or not, leaving the periods alone.
func testScheduleOverlap(t *testing.T, e *env) {
	for _, o := range []string{"", tasks.OverlapQueueOne, tasks.OverlapAllow} {
		_, err := e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "o-" + o, Every: 10 * time.Second, Overlap: o, Spec: e.spec()})
		require.NoError(t, err)
	}
	_, err := e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "bad", Every: 10 * time.Second, Overlap: "sometimes", Spec: e.spec()})
	require.ErrorIs(t, err, tasks.ErrInvalidSchedule)
	count := func(name string) int {
		n := 0
		for _, task := range e.all(tasks.ListFilter{}) {
			if task.Labels[tasks.ScheduleLabel] == name {
				n++
			}
		}
		return n
	}
	fire := func() []tasks.Fired {
		fired, err := tasks.FireSchedules(e.ctx, e.s, e.clock.Advance(10*time.Second), e.s.Submit)
		require.NoError(t, err)
		return fired
	}
	fire() // one task each, queued
	skipped := 0
	for _, f := range fire() { // the last still queued: only allow submits
		if f.Skipped != "" {
			skipped++
			require.Contains(t, f.Skipped, "still queued")
		}
	}
	require.Equal(t, 2, skipped)
	require.Equal(t, 1, count("o-"))
	require.Equal(t, 1, count("o-queue_one"))
	require.Equal(t, 2, count("o-allow"))
	// The last of each running now: queue_one submits one more, skip none.
	require.Len(t, e.claim("r", 10), 4)
	fire()
	require.Equal(t, 1, count("o-"), "skip: the last still runs")
	require.Equal(t, 2, count("o-queue_one"))
	require.Equal(t, 3, count("o-allow"))

	_, err = e.s.PauseSchedule(e.ctx, "o-", true)
	require.NoError(t, err)
	now, err := tasks.RunScheduleNow(e.ctx, e.s, "o-", e.clock.Now(), e.s.Submit)
	require.NoError(t, err)
	require.Equal(t, "o-", now.Labels[tasks.ScheduleLabel])
	require.Equal(t, 2, count("o-"), "run now: paused or not, its last task running or not")
	_, err = tasks.RunScheduleNow(e.ctx, e.s, "nope", e.clock.Now(), e.s.Submit)
	require.ErrorIs(t, err, tasks.ErrScheduleNotFound)
}

// testScheduleDue: DueSchedules gives the unpaused schedules whose next
// period (DeferSchedule) has begun or is not known, without their specs;
// FireSchedules defers each it looks at to its next period, so that one
// not due is not read again before it; a resumed schedule is looked at
// again at once; a deferral of a schedule removed and added again under
// its name leaves the new one alone.
func testScheduleDue(t *testing.T, e *env) {
	spec := e.spec()
	spec.Input = bytes.Repeat([]byte("in"), 4096)
	for _, sc := range []tasks.Schedule{
		{Name: "ten", Every: 10 * time.Second, Overlap: tasks.OverlapAllow, Spec: spec},
		{Name: "hourly", Cron: "0 * * * *", Overlap: tasks.OverlapAllow, Spec: spec},
		{Name: "paused", Every: 10 * time.Second, Paused: true, Spec: spec},
	} {
		_, err := e.s.AddSchedule(e.ctx, sc)
		require.NoError(t, err)
	}
	due := func(now time.Time) []string {
		t.Helper()
		list, err := e.s.DueSchedules(e.ctx, now)
		require.NoError(t, err)
		var names []string
		for _, sc := range list {
			require.Empty(t, sc.Spec.Module, "%s: no spec", sc.Name)
			full, err := e.s.GetSchedule(e.ctx, sc.Name)
			require.NoError(t, err)
			full.Spec = tasks.Spec{}
			require.Equal(t, full, sc, "all but the spec")
			names = append(names, sc.Name)
		}
		return names
	}
	fire := func(now time.Time) int {
		t.Helper()
		fired, err := tasks.FireSchedules(e.ctx, e.s, now, e.s.Submit)
		require.NoError(t, err)
		for _, f := range fired {
			require.Equal(t, spec.Input, f.Task.Input, "the task has the schedule's input")
		}
		return len(fired)
	}
	require.Equal(t, []string{"hourly", "ten"}, due(e.clock.Now()), "added: next period not known")
	states, err := e.s.ScheduleStates(e.ctx)
	require.NoError(t, err)
	require.Len(t, states, 3)
	for i, name := range []string{"hourly", "paused", "ten"} {
		full, err := e.s.GetSchedule(e.ctx, name)
		require.NoError(t, err)
		full.Spec = tasks.Spec{}
		require.Equal(t, full, states[i], "ScheduleStates: all but the spec")
	}

	now := e.clock.Advance(10 * time.Second)
	require.Equal(t, 1, fire(now), "ten's first period")
	require.Empty(t, due(now), "each deferred to its next period")
	require.Empty(t, due(now.Add(4*time.Second)), "ten's periods start on multiples of 10s")
	require.Equal(t, []string{"ten"}, due(now.Add(5*time.Second)))
	require.Equal(t, []string{"hourly", "ten"}, due(now.Add(time.Hour)))
	require.Equal(t, 1, fire(e.clock.Advance(10*time.Second)), "ten's second period")
	require.Equal(t, 2, fire(e.clock.Advance(time.Hour)), "both")

	// A submit that fails leaves the period due: the next call fires it.
	now = e.clock.Advance(10 * time.Second)
	_, err = tasks.FireSchedules(e.ctx, e.s, now, func(context.Context, tasks.Spec) (tasks.Task, bool, error) {
		return tasks.Task{}, false, errors.New("the store is down (simulated)")
	})
	require.ErrorContains(t, err, "the store is down")
	require.Equal(t, []string{"ten"}, due(now), "not deferred")
	require.Equal(t, 1, fire(now))

	// Paused: never given; resumed: given at once.
	_, err = e.s.PauseSchedule(e.ctx, "ten", true)
	require.NoError(t, err)
	require.Equal(t, []string{"hourly"}, due(now.Add(48*time.Hour)))
	_, err = e.s.PauseSchedule(e.ctx, "ten", false)
	require.NoError(t, err)
	require.Equal(t, []string{"ten"}, due(e.clock.Now()))
	require.Equal(t, 0, fire(e.clock.Now()), "resumed: the periods paused are not made up")
	require.Empty(t, due(e.clock.Now()))

	// Removed and added again: the old one's deferral does not apply.
	old, err := e.s.GetSchedule(e.ctx, "ten")
	require.NoError(t, err)
	require.NoError(t, e.s.RemoveSchedule(e.ctx, "ten"))
	e.clock.Advance(time.Second)
	_, err = e.s.AddSchedule(e.ctx, tasks.Schedule{Name: "ten", Every: time.Minute, Spec: spec})
	require.NoError(t, err)
	require.NoError(t, e.s.DeferSchedule(e.ctx, old, e.clock.Now().Add(24*time.Hour)))
	require.Equal(t, []string{"ten"}, due(e.clock.Now()))
	require.NoError(t, e.s.DeferSchedule(e.ctx, tasks.Schedule{Name: "gone", Created: Start}, e.clock.Now()), "a schedule not stored: no error")
}

// ScheduleCap checks a store opened to hold at most max schedules (its
// Options.MaxSchedules): the next AddSchedule fails with
// ErrTooManySchedules, naming the config key, and succeeds again once one
// is removed. Each backend calls it from its own tests.
func ScheduleCap(t *testing.T, s tasks.Store, max int) {
	ctx := t.Context()
	module, err := s.PutModule(ctx, wasmHeader)
	require.NoError(t, err)
	add := func(name string) error {
		_, err := s.AddSchedule(ctx, tasks.Schedule{Name: name, Every: time.Minute, Spec: tasks.Spec{Module: module}})
		return err
	}
	for i := range max {
		require.NoError(t, add(fmt.Sprint("s", i)))
	}
	err = add("one-more")
	require.ErrorIs(t, err, tasks.ErrTooManySchedules)
	require.Contains(t, err.Error(), "schedules.max")
	require.ErrorIs(t, add("s0"), tasks.ErrScheduleExists, "a taken name is still named as such")
	require.NoError(t, s.RemoveSchedule(ctx, "s0"))
	require.NoError(t, add("one-more"))
	list, err := s.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, max)
}

// sha256Of is the hex sha256 of b.
func sha256Of(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
