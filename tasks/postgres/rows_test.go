package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// tableStats are a table's cumulative row counters and the sizes of it and
// of its indexes.
type tableStats struct {
	ins, upd, hot int64
	size          int64
	index         map[string]int64
}

// readStats reads the counters of the store's tables in schema, once the
// counts stop moving (a backend reports its counts when it exits, which
// the closed store's connections do a moment after).
func readStats(t testing.TB, schema string) map[string]tableStats {
	t.Helper()
	raw := rawConn(t, schema)
	read := func() map[string]tableStats {
		out := map[string]tableStats{}
		rows, err := raw.Query(context.Background(), `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd,
			pg_relation_size(relid) FROM pg_stat_user_tables WHERE schemaname = $1`, schema)
		require.NoError(t, err)
		for rows.Next() {
			var name string
			var s tableStats
			require.NoError(t, rows.Scan(&name, &s.ins, &s.upd, &s.hot, &s.size))
			s.index = map[string]int64{}
			out[name] = s
		}
		require.NoError(t, rows.Err())
		rows, err = raw.Query(context.Background(), `SELECT relname, indexrelname, pg_relation_size(indexrelid)
			FROM pg_stat_user_indexes WHERE schemaname = $1`, schema)
		require.NoError(t, err)
		for rows.Next() {
			var table, index string
			var size int64
			require.NoError(t, rows.Scan(&table, &index, &size))
			out[table].index[index] = size
		}
		require.NoError(t, rows.Err())
		return out
	}
	prev := read()
	for range 50 {
		time.Sleep(100 * time.Millisecond) // the exited backends' counts arrive
		cur := read()
		if fmt.Sprint(cur) == fmt.Sprint(prev) {
			return cur
		}
		prev = cur
	}
	return prev
}

// BenchmarkRowsPerTask counts what PostgreSQL writes per task: b.N tasks
// queued (SubmitMany), then claimed and completed as succeeded in batches
// of benchBatch through CompleteAndClaim, as a runner does; "progress"
// also reports progress, heartbeats and saves a checkpoint during each
// attempt. It reports, per task, the heap rows inserted, updated and
// updated HOT in tasks and attempts, and the growth of each table and
// index in bytes (pg_relation_size; autovacuum may reuse space meanwhile).
// With -v it logs the plans (EXPLAIN ANALYZE, BUFFERS, WAL) of one
// batch's statements.
//
//	STINT_TEST_POSTGRES=... go test ./tasks/postgres -run '^$' -bench RowsPerTask -benchtime 5000x -v
func BenchmarkRowsPerTask(b *testing.B) {
	for _, v := range []struct {
		name     string
		progress bool
		ddl      string
	}{
		{"trivial", false, ""},
		{"progress", true, ""},
		{"progress-fillfactor80", true, `ALTER TABLE tasks SET (fillfactor = 80)`},
	} {
		b.Run(v.name, func(b *testing.B) {
			schema := newSchema(b)
			s := open(b, schema, postgres.Options{})
			ctx := context.Background()
			if v.ddl != "" {
				_, err := rawConn(b, schema).Exec(ctx, v.ddl)
				require.NoError(b, err)
			}
			h := putModule(b, s)
			for left := b.N; left > 0; left -= 1000 {
				specs := make([]tasks.Spec, min(left, 1000))
				for i := range specs {
					specs[i] = tasks.Spec{Module: h}
				}
				_, err := tasks.SubmitMany(ctx, s, specs)
				require.NoError(b, err)
			}
			require.NoError(b, s.Close())
			before := readStats(b, schema)

			s = open(b, schema, postgres.Options{})
			req := tasks.ClaimRequest{Owner: "o", Max: benchBatch, Lease: time.Minute}
			b.ResetTimer()
			cl, err := s.Claim(ctx, req)
			require.NoError(b, err)
			done, explained := 0, false
			for len(cl) > 0 {
				cs := make([]tasks.Completion, len(cl))
				for i, c := range cl {
					if v.progress {
						require.NoError(b, s.Progress(ctx, c.Lease, 1, 2))
						lost, _, err := s.Heartbeat(ctx, []tasks.Lease{c.Lease}, time.Minute)
						require.NoError(b, err)
						require.Empty(b, lost)
						require.NoError(b, s.SaveCheckpoint(ctx, c.Lease, []byte("cp")))
					}
					cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded,
						Attempt: tasks.Attempt{Outcome: "succeeded", Work: 1000}}
				}
				done += len(cl)
				if !explained && done >= b.N/2 && testing.Verbose() {
					plans, err := s.Explain(ctx, cs, req)
					require.NoError(b, err)
					b.Logf("plans of one batch (%d completions), completion, reap, claim:\n%s", len(cs), strings.Join(plans, "\n--\n"))
					explained = true
					// The claim explained took tasks: complete them next.
					running, err := s.List(ctx, tasks.ListFilter{State: tasks.StateRunning, Limit: benchBatch})
					require.NoError(b, err)
					cl = cl[:0]
					for _, task := range running {
						cl = append(cl, tasks.Claimed{Task: task, Lease: tasks.Lease{TaskID: task.ID, Owner: task.LeaseOwner, Token: task.Attempt}})
					}
					continue
				}
				var errs []error
				errs, cl, err = s.CompleteAndClaim(ctx, cs, req)
				require.NoError(b, err)
				require.NoError(b, errors.Join(errs...))
			}
			b.StopTimer()
			require.Equal(b, b.N, done)
			require.NoError(b, s.Close())
			after := readStats(b, schema)
			n := float64(b.N)
			for _, table := range []string{"tasks", "attempts", "checkpoints"} {
				x, y := before[table], after[table]
				b.ReportMetric(float64(y.ins-x.ins)/n, table+"-ins/task")
				b.ReportMetric(float64(y.upd-x.upd)/n, table+"-upd/task")
				b.ReportMetric(float64(y.hot-x.hot)/n, table+"-hot/task")
				b.ReportMetric(float64(y.size-x.size)/n, table+"-B/task")
				for index, size := range y.index {
					b.ReportMetric(float64(size-x.index[index])/n, index+"-B/task")
				}
			}
		})
	}
}

// TestClaimReadsSeekTheirIndexes pins the plans of what a claim reads
// on the table that misled PostgreSQL: statistics taken while most tasks
// were queued and named a tenant, then a history of finished tasks at the
// head of the table, which a sequential scan that stops at the first
// match walks through at every claim. The probe that chooses a fair claim,
// alone and as the ordered claim's guard, seeks tasks_tenanted (it
// scanned the table as an EXISTS); the fair claim's reads (flows,
// candidates, running counts) scan no table either.
func TestClaimReadsSeekTheirIndexes(t *testing.T) {
	schema := newSchema(t)
	s := open(t, schema, postgres.Options{})
	h := putModule(t, s)
	raw := rawConn(t, schema)
	ctx := context.Background()
	_, err := raw.Exec(ctx, `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at, tenant)
		SELECT $1, 3, 'default', now() - interval '1 hour', 'queued', now(), now(), 't' || (i % 2)
		FROM generate_series(1, 20000) i`, h)
	require.NoError(t, err)
	_, err = raw.Exec(ctx, `ANALYZE tasks`)
	require.NoError(t, err)
	_, err = raw.Exec(ctx, `UPDATE tasks SET state = 'succeeded', finished_at = now() WHERE id <= 10000`)
	require.NoError(t, err)
	_, err = raw.Exec(ctx, `UPDATE tasks SET state = 'running', lease_owner = 'r0', lease_expiry = now() + interval '1 hour'
		WHERE id BETWEEN 10001 AND 10100`)
	require.NoError(t, err)

	plan := func(q string, args ...any) string {
		rows, err := raw.Query(ctx, "EXPLAIN (COSTS OFF) "+q, args...)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return strings.Join(lines, "\n")
	}
	probe := plan(postgres.SQLTenanted)
	require.Contains(t, probe, "tasks_tenanted", probe)
	require.NotContains(t, probe, "Seq Scan on tasks", probe)

	for name, q := range map[string]string{"flows": postgres.SQLQueuedFlows, "running by tenant": postgres.SQLRunningByTenant} {
		p := plan(q)
		require.NotContains(t, p, "Seq Scan on tasks", "%s:\n%s", name, p)
	}
	for name, p := range map[string]string{
		"candidates":       plan(postgres.SQLFairCandidates, []string{"default", "default"}, []string{"t0", "t1"}, []int32{64, 64}, time.Now()),
		"running by queue": plan(postgres.SQLRunningByQueue, []string{"default"}),
	} {
		require.NotContains(t, p, "Seq Scan on tasks", "%s:\n%s", name, p)
	}

	// The ordered claim's guard, in the plan of the claim a runner sends.
	plans, err := s.Explain(ctx, nil, tasks.ClaimRequest{Owner: "r1", Max: 2, Lease: time.Minute})
	require.NoError(t, err)
	claim := plans[len(plans)-1]
	require.Contains(t, claim, "tasks_tenanted", claim)
	require.NotContains(t, claim, "Seq Scan on tasks", claim)
}

// TestClaimsSkipTheOrderedClaimWhileFair: once a claim finds a tenant, the
// next goes straight to the fair claim (no probe, no ordered claim), and
// takes the tenants in turn; once a fair claim finds neither a tenant nor
// a limit, the claims are ordered again, in priority order across queues,
// and a tenant's task submitted then makes them fair again.
func TestClaimsSkipTheOrderedClaimWhileFair(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t), postgres.Options{})
	ctx := t.Context()
	h := putModule(t, s)
	submit := func(tenant, queue string, priority int) int64 {
		task, _, err := s.Submit(ctx, tasks.Spec{Module: h, Tenant: tenant, Queue: queue, Priority: priority})
		require.NoError(t, err)
		return task.ID
	}
	claim := func(n int) []string {
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "r", Max: n, Lease: time.Hour})
		require.NoError(t, err)
		var got []string
		for _, c := range cl {
			got = append(got, c.Task.Tenant+"/"+c.Task.Queue)
		}
		return got
	}
	require.False(t, s.FairLast())
	for range 3 {
		submit("a", "", 0)
	}
	submit("b", "", 0)
	require.Equal(t, []string{"a/default"}, claim(1)) // the probe finds tenants: fair
	require.True(t, s.FairLast())
	require.Equal(t, []string{"b/default"}, claim(1), "b's turn, claimed without the ordered claim")
	require.Equal(t, []string{"a/default", "a/default"}, claim(5))
	require.True(t, s.FairLast(), "the last claim found tenants")

	// No tenant left: the next fair claim finds none and gives the claims
	// back to the ordered claim, in priority order across queues.
	submit("", "low", 1)
	submit("", "high", 5)
	require.Equal(t, []string{"/high"}, claim(1))
	require.False(t, s.FairLast())
	require.Equal(t, []string{"/low"}, claim(1))
	require.False(t, s.FairLast())

	submit("c", "", 0)
	require.Equal(t, []string{"c/default"}, claim(1))
	require.True(t, s.FairLast())
	require.Empty(t, claim(1), "nothing queued")
	require.False(t, s.FairLast(), "a fair claim that finds no flow gives the next claim back to the ordered one")
}
