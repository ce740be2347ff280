package stint_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/pgtest"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
	"github.com/stint-run/stint/tasks/sqlite"
)

// pgStore returns the URL of a fresh schema on the test database
// (STINT_TEST_POSTGRES; the test skips without it), dropped when t ends.
func pgStore(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("STINT_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set STINT_TEST_POSTGRES to a postgres:// URL to run it")
	}
	schema := pgtest.Schema(t, dsn, "stint_root_")
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	return pgtest.SearchPathURL(dsn, schema)
}

// TestSchedulesOnePerPeriod: two runners on one store, firing a fast
// schedule at the same moments of a clock the test drives, submit exactly
// one task per period; a gap of many periods makes one task, not a
// burst. On SQLite the second runner is a second connection to the store
// file (a second Runner cannot take the store's lock); on PostgreSQL two
// Runners.
func TestSchedulesOnePerPeriod(t *testing.T) {
	t.Parallel()
	type firer func(ctx context.Context, now time.Time) ([]tasks.Fired, error)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			var (
				a      *stint.Runner
				second firer
			)
			if backend == "sqlite" {
				path := filepath.Join(t.TempDir(), "stint.db")
				a = openRunner(t, stint.Config{Store: path, ScheduleEvery: -1})
				s, err := sqlite.Open(ctx, path, sqlite.Options{})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, s.Close()) })
				second = func(ctx context.Context, now time.Time) ([]tasks.Fired, error) {
					return tasks.FireSchedules(ctx, s, now, s.Submit)
				}
			} else {
				url := pgStore(t)
				a = openRunner(t, stint.Config{Store: url, Owner: "a", ScheduleEvery: -1})
				b := openRunner(t, stint.Config{Store: url, Owner: "b", ScheduleEvery: -1})
				second = b.FireSchedules
			}
			sha, err := a.PutModule(ctx, wat.MustLoad("noop"))
			require.NoError(t, err)
			sc, err := a.Store().AddSchedule(ctx,
				tasks.Schedule{Name: "fast", Every: time.Minute, Overlap: tasks.OverlapAllow, Spec: tasks.Spec{Module: sha, Queue: "edge"}})
			require.NoError(t, err)

			periods := map[time.Time]bool{}
			now := sc.Created
			step := func(d time.Duration) {
				now = now.Add(d)
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, f := range []firer{a.FireSchedules, second} {
					wg.Go(func() { _, errs[i] = f(ctx, now) })
				}
				wg.Wait()
				require.NoError(t, errs[0])
				require.NoError(t, errs[1])
			}
			// Each step reaches the period holding now: it gets one task
			// (the first period is the first after the schedule's creation).
			steps := []time.Duration{}
			for range 20 {
				steps = append(steps, 25*time.Second)
			}
			steps = append(steps, 2*time.Hour, time.Second) // a gap of 120 periods: one task
			for _, d := range steps {
				step(d)
				if p := now.Truncate(time.Minute); p.After(sc.Created) {
					periods[p] = true
				}
			}
			list, err := a.Store().List(ctx, tasks.ListFilter{Limit: 1000})
			require.NoError(t, err)
			require.Len(t, list, len(periods))
			require.Greater(t, len(periods), 8)
			keys := map[string]bool{}
			for _, task := range list {
				require.Equal(t, "fast", task.Labels[tasks.ScheduleLabel])
				require.Equal(t, "edge", task.Queue)
				require.False(t, keys[task.IdempotencyKey], "one task per key")
				keys[task.IdempotencyKey] = true
			}
			got, err := a.Store().GetSchedule(ctx, "fast")
			require.NoError(t, err)
			require.Equal(t, list[len(list)-1].ID, got.LastTask)
			require.Equal(t, now.Truncate(time.Minute), got.LastRun)
		})
	}
}

// TestRunnerRecordsItself: a started Runner is listed in its store with
// its owner, workers and version; draining once its intake stops; and
// removed when it closes. A schedule due fires on its own (the Runner's
// loop, on the real clock).
func TestRunnerRecordsItself(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "stint.db")
	r, err := stint.Open(ctx, stint.Config{Store: path, Owner: "me", Version: "v9"})
	require.NoError(t, err)
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	sha, err := r.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	_, err = s.AddSchedule(ctx, tasks.Schedule{Name: "sec", Every: time.Second, Spec: tasks.Spec{Module: sha}})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))

	list, err := s.Runners(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1, "recorded at start")
	me := list[0]
	require.Equal(t, "me", me.Owner)
	require.Equal(t, "v9", me.Version)
	require.Equal(t, os.Getpid(), me.PID)
	require.Positive(t, me.Workers)
	require.False(t, me.Silent)
	require.False(t, me.Draining)

	testutil.WaitFor(t, "a scheduled task to succeed", func() bool {
		l, err := s.List(ctx, tasks.ListFilter{State: tasks.StateSucceeded})
		require.NoError(t, err)
		return len(l) > 0 && l[0].Labels[tasks.ScheduleLabel] == "sec"
	})

	r.StopIntake()
	testutil.WaitFor(t, "the runner to be recorded draining", func() bool {
		list, err := s.Runners(ctx)
		require.NoError(t, err)
		return len(list) == 1 && list[0].Draining
	})
	require.NoError(t, r.Close(ctx))
	list, err = s.Runners(ctx)
	require.NoError(t, err)
	require.Empty(t, list, "a runner that stopped cleanly removes its record")
}
