package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestPlansOfADeepQueue: with 20,000 tasks queued at once (no ANALYZE
// since, as after a burst of submits), a runner's first claims and
// completions read what they take, not the queue: no sequential scan of
// the tasks, and a few index entries read per task claimed (the counters
// of pg_stat_user_tables and pg_stat_user_indexes, which the store's
// connections report when they close). With the planner's custom plans
// (the first five executions of a statement on each connection, before
// the claim asked for a generic one: sqlGenericPlan), the first claims
// read and sorted every queued task (a bitmap scan of tasks_ready_queue,
// 20,000 entries and rows to return 64, each time: 80,767 index entries
// read for these 256 tasks).
func TestPlansOfADeepQueue(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := open(t, schema, postgres.Options{})
	ctx := t.Context()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(t, err)
	raw := rawConn(t, schema)
	const queued, batch, rounds = 20000, 64, 4
	_, err = raw.Exec(ctx, `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at)
		SELECT $1, 1, 'default', now() - interval '1 minute', 'queued', now(), now() FROM generate_series(1, $2)`, h, queued)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = postgres.Open(ctx, dsn(t), postgres.Options{Schema: schema})
	require.NoError(t, err)
	for range rounds {
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "o", Max: batch, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, cl, batch)
		cs := make([]tasks.Completion, len(cl))
		for i, c := range cl {
			cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Attempt: tasks.Attempt{Outcome: "succeeded"}}
		}
		errs, err := s.Complete(ctx, cs)
		require.NoError(t, err)
		require.NoError(t, errors.Join(errs...))
	}
	require.NoError(t, s.Close())

	// The counters arrive once the closed connections' backends exit.
	var seqRead, idxRead int64
	read := func() {
		require.NoError(t, raw.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0) FROM pg_stat_user_tables
			WHERE schemaname = $1 AND relname = 'tasks'`, schema).Scan(&seqRead))
		require.NoError(t, raw.QueryRow(ctx, `SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes
			WHERE schemaname = $1 AND relname = 'tasks'`, schema).Scan(&idxRead))
	}
	for range 100 {
		if read(); idxRead > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond) // statistics are not signalled
	}
	t.Logf("%d claims and completions of %d tasks of %d queued: %d rows read by sequential scans, %d index entries",
		rounds, batch, queued, seqRead, idxRead)
	require.Positive(t, idxRead, "the counters arrived")
	require.Zero(t, seqRead, "no sequential scan of the tasks")
	require.Less(t, idxRead, int64(rounds*batch*8), "a few index entries per task, not the queue")
}
