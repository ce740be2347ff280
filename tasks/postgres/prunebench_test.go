package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// pruneHistory is how many ended tasks BenchmarkPruneWhileClaiming
// prunes; pruneWindow is how long it claims before and after the prune
// (the windows without it), pruneClaimEvery the pace of its claims and
// pruneClaimMax their size.
const (
	pruneHistory    = 1_000_000
	pruneWindow     = 15 * time.Second
	pruneClaimEvery = 20 * time.Millisecond
	pruneClaimMax   = 16
)

// BenchmarkPruneWhileClaiming prunes 1,000,000 ended tasks (each with its
// attempt record and a result) while one owner claims and completes
// batches of pruneClaimMax queued tasks at a steady pace, one every
// pruneClaimEvery, as a runner working a queue would. Claims run for
// pruneWindow before the prune, through it, and for pruneWindow after it,
// so that the claims without a prune are measured in the same run on both
// sides of it. It reports the prune's duration and rate and the claim and
// completion latencies (p50, p99) in each window, and how often the
// claimer's sessions were seen waiting on a lock in each (sampled every
// 10 ms in pg_stat_activity; the locks waited on are logged). Run it once
// (-benchtime 1x): each iteration loads and prunes its own million.
func BenchmarkPruneWhileClaiming(b *testing.B) {
	for range b.N {
		stores, h := owners(b, 1)
		pruner := stores[0]
		// The claimer's connections carry a name of their own, so that
		// its lock waits can be told from other sessions'.
		const claimerApp = "stint prune bench claimer"
		claimer, err := postgres.Open(context.Background(), dsnWith(b, "application_name", claimerApp),
			postgres.Options{Schema: pruner.Schema()})
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, claimer.Close()) })
		ctx := context.Background()
		raw := rawConn(b, claimer.Schema())
		_, err = raw.Exec(ctx, `WITH t AS (
			INSERT INTO tasks (module, max_attempts, queue, run_at, state, attempt, created_at, updated_at, finished_at, result_size)
			SELECT $1, 3, 'default', now() - interval '2 days', 'succeeded', 1, now() - interval '2 days',
				now() - interval '1 day', now() - interval '1 day', 2 FROM generate_series(1, $2)
			RETURNING id), a AS (
			INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, counted, resumed)
			SELECT id, 1, 'old', now() - interval '1 day', now() - interval '1 day', 'succeeded', 0, false, false FROM t)
			INSERT INTO results (task_id, blob) SELECT id, 'ok' FROM t`, h, pruneHistory)
		require.NoError(b, err)
		// Enough queued tasks for the three windows at the claims' pace,
		// for a prune of up to five minutes.
		queued := int((2*pruneWindow + 5*time.Minute) / pruneClaimEvery * pruneClaimMax)
		_, err = raw.Exec(ctx, `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at)
			SELECT $1, 3, 'default', now() - interval '1 hour', 'queued', now(), now() FROM generate_series(1, $2)`, h, queued)
		require.NoError(b, err)
		for _, table := range []string{"tasks", "attempts", "results"} {
			_, err = raw.Exec(ctx, `VACUUM ANALYZE `+table)
			require.NoError(b, err)
		}

		// The claim loop: one claim and one completion every
		// pruneClaimEvery, their latencies tagged by the window they
		// started in.
		const (
			before = iota
			during
			after
		)
		window := make(chan int, 1)
		type sample struct {
			window          int
			claim, complete time.Duration
		}
		var samples []sample
		claimsDone := make(chan error, 1)
		stop := make(chan struct{})
		go func() {
			tick := time.NewTicker(pruneClaimEvery)
			defer tick.Stop()
			w := before
			for {
				select {
				case <-stop:
					claimsDone <- nil
					return
				case w = <-window:
				case <-tick.C:
				}
				t0 := time.Now()
				cl, err := claimer.Claim(ctx, tasks.ClaimRequest{Owner: "o", Max: pruneClaimMax, Lease: time.Minute})
				if err == nil && len(cl) == 0 {
					err = errors.New("the queued tasks ran out: queue more")
				}
				if err != nil {
					claimsDone <- err
					return
				}
				t1 := time.Now()
				cs := make([]tasks.Completion, len(cl))
				for i, c := range cl {
					cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte("ok"),
						Attempt: tasks.Attempt{Outcome: "succeeded"}}
				}
				errs, err := claimer.Complete(ctx, cs)
				if err == nil {
					err = errors.Join(errs...)
				}
				if err != nil {
					claimsDone <- err
					return
				}
				samples = append(samples, sample{w, t1.Sub(t0), time.Since(t1)})
			}
		}()

		// Lock waits of the claimer: its sessions sampled every 10 ms in
		// pg_stat_activity (waiting on a lock, and which), by window.
		mon := rawConn(b, "")
		var cur atomic.Int32 // the window now
		var lockSamples, lockWaits [3]int
		waitedOn := map[string]int{}
		pruned := make(chan struct{})
		sampled := make(chan error, 1)
		go func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-pruned:
					sampled <- nil
					return
				case <-tick.C:
				}
				w := cur.Load()
				rows, err := mon.Query(ctx, `SELECT wait_event FROM pg_stat_activity
					WHERE application_name = $1 AND wait_event_type = 'Lock'`, claimerApp)
				if err == nil {
					var events []string
					events, err = pgx.CollectRows(rows, pgx.RowTo[string])
					for _, e := range events {
						lockWaits[w]++
						waitedOn[e]++
					}
				}
				if err != nil {
					sampled <- err
					return
				}
				lockSamples[w]++
			}
		}()

		b.ResetTimer()
		time.Sleep(pruneWindow) // a window of claims without a prune: the pace is the point
		window <- during
		cur.Store(during)
		t0 := time.Now()
		deleted, err := pruner.Prune(ctx, time.Now().Add(-time.Hour))
		took := time.Since(t0)
		require.NoError(b, err)
		require.Equal(b, pruneHistory, deleted)
		window <- after
		cur.Store(after)
		time.Sleep(pruneWindow)
		close(stop)
		close(pruned)
		require.NoError(b, <-claimsDone)
		require.NoError(b, <-sampled)
		b.StopTimer()

		b.ReportMetric(took.Seconds(), "prune-s")
		b.ReportMetric(float64(deleted)/took.Seconds(), "pruned/s")
		if len(waitedOn) > 0 {
			b.Logf("the claimer's lock waits, by wait_event (samples): %v", waitedOn)
		}
		for w, name := range []string{"before", "during", "after"} {
			var claims, completes []time.Duration
			for _, s := range samples {
				if s.window == w {
					claims, completes = append(claims, s.claim), append(completes, s.complete)
				}
			}
			require.NotEmpty(b, claims, "claims %s the prune", name)
			b.ReportMetric(float64(len(claims)), "claims-"+name)
			b.ReportMetric(float64(lockSamples[w]), "lock-samples-"+name)
			b.ReportMetric(float64(lockWaits[w]), "claimer-lock-waits-"+name)
			reportPercentiles(b, claims, "claim-", "-"+name)
			reportPercentiles(b, completes, "complete-", "-"+name)
		}
		var left int
		require.NoError(b, raw.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE finished_at < now() - interval '1 hour'`).Scan(&left))
		require.Zero(b, left, "every ended task of the history was pruned")
	}
}
