package e2e

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/tasks"
)

// BenchmarkServePostgresRunners: trivial (noop) tasks per second worked by
// 1, 2 and 3 `runner serve` processes (2 workers each) on one PostgreSQL
// schema, end to end through the real binary. The tasks are queued before
// with a run_at a few seconds ahead, so that every runner is ready when
// they become due; the rate is tasks over the span from the first
// attempt's start to the last one's end, as the store recorded them.
//
//	STINT_TEST_POSTGRES=... go test ./cmd/runner/e2e -run '^$' -bench ServePostgresRunners -benchtime 1x -count 3
func BenchmarkServePostgresRunners(b *testing.B) {
	const n = 3000
	for _, k := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("runners=%d", k), func(b *testing.B) {
			for range b.N {
				rate := servePostgresRunners(b, k, n)
				b.ReportMetric(rate, "tasks/s")
			}
		})
	}
}

func servePostgresRunners(b *testing.B, k, n int) float64 {
	s, url := pgStore(b)
	ctx := context.Background()
	sha, err := s.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(b, err)
	due := time.Now().Add(8 * time.Second)
	submitMany(b, s, tasks.Spec{Module: sha, MaxAttempts: 1, RunAt: due}, n)
	var ps []*proc
	for i := range k {
		ps = append(ps, pgRunner(b, url, fmt.Sprintf("bench-%d", i)))
	}
	require.True(b, time.Now().Before(due), "the runners were not ready before the tasks were due")
	testutil.WaitFor(b, "every task to succeed", func() bool { return allSucceeded(b, s, n) })
	stopAll(b, ps...)
	all, err := s.List(ctx, tasks.ListFilter{Limit: n + 1})
	require.NoError(b, err)
	var first, last time.Time
	for _, task := range all {
		atts, err := s.Attempts(ctx, task.ID)
		require.NoError(b, err)
		for _, a := range atts {
			if first.IsZero() || a.StartedAt.Before(first) {
				first = a.StartedAt
			}
			if a.EndedAt.After(last) {
				last = a.EndedAt
			}
		}
	}
	return float64(n) / last.Sub(first).Seconds()
}

// BenchmarkServePostgresKillToResume: the time from a runner's SIGKILL to
// its task claimed by the other runner (lease 2s, so at
// best 2s after its last heartbeat, plus the other runner's claim poll).
// Reported per kill, in ms; the lease was last renewed up to a third of it
// before the kill, so the expected value is between 2/3 and 1 lease.
//
//	STINT_TEST_POSTGRES=... go test ./cmd/runner/e2e -run '^$' -bench ServePostgresKillToResume -benchtime 5x
func BenchmarkServePostgresKillToResume(b *testing.B) {
	var ms []float64
	for range b.N {
		s, url := pgStore(b)
		ctx := context.Background()
		a := pgRunner(b, url, "doomed", "--lease", "2s", "--workers", "1")
		id := submitMany(b, s, primesSpec(b, s), 1)[0]
		testutil.WaitFor(b, "the task running on the doomed runner", func() bool {
			task, err := s.Get(ctx, id)
			require.NoError(b, err)
			return task.LeaseOwner == "doomed"
		})
		o := pgRunner(b, url, "other", "--lease", "2s", "--workers", "1")
		killed := time.Now()
		a.kill(b)
		// Seen by polling the store every 20 ms: the resolution.
		testutil.WaitFor(b, "the task running on the other runner", func() bool {
			task, err := s.Get(ctx, id)
			require.NoError(b, err)
			return task.LeaseOwner == "other" && task.Attempt == 2
		})
		ms = append(ms, float64(time.Since(killed).Microseconds())/1000)
		stopAll(b, o)
	}
	sort.Float64s(ms)
	b.ReportMetric(ms[len(ms)/2], "ms-median")
	b.ReportMetric(ms[len(ms)-1], "ms-max")
}
