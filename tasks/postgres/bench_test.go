package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
	"github.com/stint-run/stint/tasks/storetest"
)

// benchBatch is the claim and completion batch of the benchmarks, as a
// worker pool claiming ahead for short tasks would use.
const benchBatch = 64

// owners opens n Stores on one fresh schema (n runners, each with its own
// connection pool) and stores the benchmark's module.
func owners(b testing.TB, n int) ([]*postgres.Store, string) {
	b.Helper()
	schema := newSchema(b)
	stores := make([]*postgres.Store, n)
	for i := range stores {
		stores[i] = open(b, schema, postgres.Options{})
	}
	h := putModule(b, stores[0])
	return stores, h
}

// claimComplete claims up to benchBatch tasks and completes them as
// succeeded; it returns how many it moved.
func claimComplete(ctx context.Context, s *postgres.Store, owner string) (int, error) {
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: owner, Max: benchBatch, Lease: time.Minute})
	if err != nil || len(cl) == 0 {
		return 0, err
	}
	cs := make([]tasks.Completion, len(cl))
	for i, c := range cl {
		cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte("ok"),
			Attempt: tasks.Attempt{Outcome: "succeeded"}}
	}
	errs, err := s.Complete(ctx, cs)
	if err != nil {
		return 0, err
	}
	return len(cl), errors.Join(errs...)
}

// runOwners runs work on every store at once until it has moved b.N
// tasks, and reports the tasks per second.
func runOwners(b *testing.B, stores []*postgres.Store, work func(s *postgres.Store, owner string, done *atomic.Int64) error) {
	b.Helper()
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	b.ResetTimer()
	start := time.Now()
	for i, s := range stores {
		wg.Go(func() { errs[i] = work(s, fmt.Sprint("owner-", i), &done) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	require.NoError(b, errors.Join(errs...))
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
}

// benchSubmitters is how many goroutines submit at once in
// BenchmarkThroughput, as clients of the API would: PostgreSQL then flushes
// their commits together (group commit).
const benchSubmitters = 8

// BenchmarkThroughput moves b.N trivial tasks end to end: a client (its
// own Store) submits them one per Submit from benchSubmitters goroutines,
// while 1, 2 or 3 owners (Stores with their own pools, as runners on
// several machines would be) claim them in batches of 64 and complete them
// in batches of 64. An owner that finds nothing waits for a wake-up
// (ListenWakeups), or 10 ms.
func BenchmarkThroughput(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprint("owners=", n), func(b *testing.B) {
			stores, h := owners(b, n)
			ctx := context.Background()
			client := open(b, stores[0].Schema(), postgres.Options{MaxConns: benchSubmitters})
			var submitted atomic.Int64
			var wg sync.WaitGroup
			subErrs := make([]error, benchSubmitters)
			defer func() {
				wg.Wait()
				require.NoError(b, errors.Join(subErrs...))
			}()
			wakes := make([]<-chan struct{}, n)
			for i, s := range stores {
				ch, stop, err := s.ListenWakeups()
				require.NoError(b, err)
				b.Cleanup(func() { require.NoError(b, stop()) })
				<-ch // listening
				wakes[i] = ch
			}
			started := make(chan struct{})
			for i := range benchSubmitters {
				wg.Go(func() {
					<-started
					for submitted.Add(1) <= int64(b.N) {
						if _, _, err := client.Submit(ctx, tasks.Spec{Module: h}); err != nil {
							subErrs[i] = err
							return
						}
					}
				})
			}
			index := map[*postgres.Store]int{}
			for i, s := range stores {
				index[s] = i
			}
			runOwners(b, stores, func(s *postgres.Store, owner string, done *atomic.Int64) error {
				if index[s] == 0 {
					close(started)
				}
				t := time.NewTimer(0)
				defer t.Stop()
				for done.Load() < int64(b.N) {
					k, err := claimComplete(ctx, s, owner)
					if err != nil {
						return err
					}
					done.Add(int64(k))
					if k == 0 {
						t.Reset(10 * time.Millisecond)
						select {
						case <-wakes[index[s]]:
						case <-t.C:
						}
					}
				}
				return nil
			})
		})
	}
}

// BenchmarkClaimComplete moves b.N trivial tasks, inserted in bulk before
// the timer starts, through Claim and Complete (batches of 64) with 1, 2
// and 3 owners at once: the queue without the submits.
func BenchmarkClaimComplete(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprint("owners=", n), func(b *testing.B) { benchClaimComplete(b, n, 0) })
	}
}

// BenchmarkClaimTenants is BenchmarkClaimComplete with the tasks spread
// over tenants: none (the ordered claim), or 2 or 100 named tenants (the
// fair claim, tasks/fair.go), with 1 and 2 owners at once: what fairness
// costs a claim, and whether fair claims of two runners get in each
// other's way (they take turns on the queue's clock).
func BenchmarkClaimTenants(b *testing.B) {
	for _, n := range []int{1, 2} {
		for _, k := range []int{0, 2, 100} {
			b.Run(fmt.Sprintf("owners=%d/tenants=%d", n, k), func(b *testing.B) { benchClaimComplete(b, n, k) })
		}
	}
}

// benchClaimComplete moves b.N tasks, inserted in bulk (spread over
// tenants named tenants; 0: none) before the timer starts, through Claim
// and Complete with n owners at once.
func benchClaimComplete(b *testing.B, n, tenants int) {
	stores, h := owners(b, n)
	ctx := context.Background()
	raw := rawConn(b, stores[0].Schema())
	_, err := raw.Exec(ctx, `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at, tenant)
		SELECT $1, 3, 'default', now() - interval '1 hour', 'queued', now(), now(),
			CASE WHEN $3::integer > 0 THEN 't' || (i % $3::integer) ELSE '' END
		FROM generate_series(1, $2) i`, h, b.N, tenants)
	require.NoError(b, err)
	_, err = raw.Exec(ctx, `VACUUM ANALYZE tasks`)
	require.NoError(b, err)
	runOwners(b, stores, func(s *postgres.Store, owner string, done *atomic.Int64) error {
		for done.Load() < int64(b.N) {
			k, err := claimComplete(ctx, s, owner)
			if err != nil {
				return err
			}
			done.Add(int64(k))
		}
		return nil
	})
}

// BenchmarkWakeLatency measures enqueue-to-wake: from the start of a Submit
// on one Store to the wake-up on the channel of another Store's
// ListenWakeups (LISTEN/NOTIFY through the server), one task at a time. It
// reports the median and the 99th percentile, and the median of the
// Submit alone.
func BenchmarkWakeLatency(b *testing.B) {
	stores, h := owners(b, 2)
	ctx := context.Background()
	ch, stop, err := stores[0].ListenWakeups()
	require.NoError(b, err)
	defer func() { require.NoError(b, stop()) }()
	<-ch // listening
	lat := make([]time.Duration, 0, b.N)
	sub := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, _, err := stores[1].Submit(ctx, tasks.Spec{Module: h}); err != nil {
			b.Fatal(err)
		}
		sub = append(sub, time.Since(start))
		<-ch
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat, "", "")
	slices.Sort(sub)
	// The Submit alone (its commit waits for the WAL flush): the rest of
	// p50 is the wake-up.
	b.ReportMetric(float64(sub[len(sub)/2].Microseconds()), "submit-p50-µs")
}

// BenchmarkSubmitMany: 1000 tasks by one Submit each against one
// SubmitMany (storetest.BenchmarkSubmitMany).
func BenchmarkSubmitMany(b *testing.B) {
	s := open(b, newSchema(b), postgres.Options{})
	h := putModule(b, s)
	storetest.BenchmarkSubmitMany(b, s, h)
}

// BenchmarkClaimHistory claims and completes b.N trivial tasks (batches of
// benchBatch, one owner) in a table that also holds 0 or 1,000,000 ended
// tasks, each with its attempt record, and reports the median and 99th
// percentile of a claim and of a completion: the queue's statements must
// not slow down with the history (the bound: claim p99 within 2x).
func BenchmarkClaimHistory(b *testing.B) {
	for _, history := range []int{0, 1_000_000} {
		b.Run(fmt.Sprint("history=", history), func(b *testing.B) {
			stores, h := owners(b, 1)
			s := stores[0]
			ctx := context.Background()
			raw := rawConn(b, s.Schema())
			if history > 0 {
				_, err := raw.Exec(ctx, `WITH t AS (
					INSERT INTO tasks (module, max_attempts, queue, run_at, state, attempt, created_at, updated_at, finished_at)
					SELECT $1, 3, 'default', now() - interval '2 days', 'succeeded', 1, now() - interval '2 days',
						now() - interval '1 day', now() - interval '1 day' FROM generate_series(1, $2)
					RETURNING id)
					INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, counted, resumed)
					SELECT id, 1, 'old', now() - interval '1 day', now() - interval '1 day', 'succeeded', 0, false, false FROM t`, h, history)
				require.NoError(b, err)
			}
			_, err := raw.Exec(ctx, `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at)
				SELECT $1, 3, 'default', now() - interval '1 hour', 'queued', now(), now() FROM generate_series(1, $2)`, h, b.N)
			require.NoError(b, err)
			for _, table := range []string{"tasks", "attempts"} {
				_, err = raw.Exec(ctx, `VACUUM ANALYZE `+table)
				require.NoError(b, err)
			}
			var claims, completes []time.Duration
			b.ResetTimer()
			for done := 0; done < b.N; {
				t0 := time.Now()
				cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "o", Max: benchBatch, Lease: time.Minute})
				require.NoError(b, err)
				require.NotEmpty(b, cl)
				t1 := time.Now()
				cs := make([]tasks.Completion, len(cl))
				for i, c := range cl {
					cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Attempt: tasks.Attempt{Outcome: "succeeded"}}
				}
				errs, err := s.Complete(ctx, cs)
				require.NoError(b, err)
				require.NoError(b, errors.Join(errs...))
				claims, completes = append(claims, t1.Sub(t0)), append(completes, time.Since(t1))
				done += len(cl)
			}
			b.StopTimer()
			reportPercentiles(b, claims, "claim-", "")
			reportPercentiles(b, completes, "complete-", "")
		})
	}
}

// reportPercentiles sorts ds and reports its median and 99th percentile
// in microseconds, as the metrics prefix+"p50-µs"+suffix and
// prefix+"p99-µs"+suffix.
func reportPercentiles(b *testing.B, ds []time.Duration, prefix, suffix string) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), prefix+"p50-µs"+suffix)
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), prefix+"p99-µs"+suffix)
}
