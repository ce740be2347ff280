package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestMigrateRace: five runners opening one fresh schema at once migrate it
// once (the advisory lock), and all of them work on it.
func TestMigrateRace(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	core, logs := observer.New(zap.InfoLevel)
	const n = 5
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema, Logger: zap.New(core)})
		})
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		if s != nil {
			t.Cleanup(func() { require.NoError(t, s.Close()) })
		}
		require.NoError(t, errs[i], "store %d", i)
	}
	require.Equal(t, 1, logs.FilterMessage("store schema migrated").Len(), "migrated once")

	var versions int
	require.NoError(t, rawConn(t, schema).QueryRow(t.Context(), `SELECT count(*) FROM schema_version`).Scan(&versions))
	require.Equal(t, postgres.SchemaVersion, versions)

	// Each one works on the same queue.
	h := putModule(t, stores[0])
	for i, s := range stores {
		task, _, err := s.Submit(t.Context(), tasks.Spec{Module: h, IdempotencyKey: fmt.Sprint(i)})
		require.NoError(t, err)
		got, err := stores[(i+1)%n].Get(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, task, got)
	}
}

// TestSchemaTooNew: a schema written by a newer Stint is refused with a
// message that says what to do, and left as it was.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := open(t, schema, postgres.Options{})
	require.NoError(t, s.Close())
	raw := rawConn(t, schema)
	_, err := raw.Exec(t.Context(), `INSERT INTO schema_version (version, applied) VALUES ($1, now())`, postgres.SchemaVersion+1)
	require.NoError(t, err)

	_, err = postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema})
	t.Log(err)
	require.ErrorIs(t, err, postgres.ErrSchemaTooNew)
	require.ErrorContains(t, err, fmt.Sprintf("is version %d, this runner knows up to %d", postgres.SchemaVersion+1, postgres.SchemaVersion))
	require.ErrorContains(t, err, "upgrade the runner")
	require.ErrorContains(t, err, schema)
	var max int
	require.NoError(t, raw.QueryRow(t.Context(), `SELECT max(version) FROM schema_version`).Scan(&max))
	require.Equal(t, postgres.SchemaVersion+1, max)
}

// TestNotStore: a schema holding another application's tables is refused.
func TestNotStore(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	raw := rawConn(t, "")
	_, err := raw.Exec(t.Context(), `CREATE SCHEMA `+quote(schema)+`; CREATE TABLE `+quote(schema)+`.orders (id int)`)
	require.NoError(t, err)
	_, err = postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema})
	t.Log(err)
	require.ErrorIs(t, err, postgres.ErrNotStore)
	require.ErrorContains(t, err, "schema of its own")
}

// TestOpenSearchPath: without Options.Schema, the store lives in the
// schema the connection's search path names (here through the connection
// string), and Open says so when that schema does not exist.
func TestOpenSearchPath(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	withPath := dsnWith(t, "search_path", schema)
	_, err := postgres.Open(t.Context(), withPath, postgres.Options{})
	t.Log(err)
	require.ErrorContains(t, err, "names no existing schema")

	_, err = rawConn(t, "").Exec(t.Context(), `CREATE SCHEMA `+quote(schema))
	require.NoError(t, err)
	s, err := postgres.Open(t.Context(), withPath, postgres.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Equal(t, schema, s.Schema())
	var n int
	require.NoError(t, rawConn(t, schema).QueryRow(t.Context(), `SELECT count(*) FROM schema_version`).Scan(&n))
	require.Equal(t, postgres.SchemaVersion, n)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	o := postgres.Options{}.WithDefaults()
	require.NotNil(t, o.Now)
	require.NotNil(t, o.Logger)
	require.Equal(t, postgres.DefaultReconnectMin, o.ReconnectMin)
	require.Equal(t, postgres.DefaultReconnectMax, o.ReconnectMax)
	require.NoError(t, o.Validate())
	require.Error(t, postgres.Options{MaxConns: -1}.Validate())
	require.Error(t, postgres.Options{ReconnectMin: 2, ReconnectMax: 1}.Validate())
	require.Error(t, postgres.Options{Schema: string(make([]byte, 64))}.Validate())
	_, err := postgres.Open(context.Background(), "postgres://%zz", postgres.Options{})
	require.ErrorContains(t, err, "parse the connection string")
}

// TestMigrateAttemptsInRow: a schema of version 7 holding tasks and their
// attempt rows (as version 7 recorded every attempt) migrates to version 8
// with every history read back as it was; a first-try success completed
// after the migration keeps its attempt in its task row (no attempts row)
// and reads back the same; Prune then deletes everything.
func TestMigrateAttemptsInRow(t *testing.T) {
	t.Parallel()
	schema, raw, t0, mod := schemaAt(t, 7)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	// A first-try success, a success after a lost attempt, a dead task.
	old := map[int64][]tasks.Attempt{}
	for i, st := range []string{"succeeded", "succeeded", "dead"} {
		var id int64
		require.NoError(t, raw.QueryRow(t.Context(), `INSERT INTO tasks (module, max_attempts, queue, run_at, state, attempt,
			failures, created_at, updated_at, finished_at) VALUES ($6, 3, 'default', $1, $2, $3, $4, $1, $5, $5) RETURNING id`,
			t0, st, i+1, i, sec(10), mod).Scan(&id))
		for n := 1; n <= i+1; n++ {
			a := tasks.Attempt{TaskID: id, Number: n, Owner: fmt.Sprint("r", n), StartedAt: sec(n), EndedAt: sec(n + 1),
				Outcome: "succeeded", Work: int64(100 * n), Stderr: "err\n"}
			if n < i+1 || st == "dead" {
				a.Outcome, a.ExitCode, a.Reason, a.Counted = "lost", -1, "lease of r expired without a heartbeat", true
			}
			_, err := raw.Exec(t.Context(), `INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code,
				reason, counted, resumed, stderr, work) VALUES ($1, $2, $3, $4, $5, $6, $7, nullif($8, ''), $9, false, $10, $11)`,
				id, n, a.Owner, a.StartedAt, a.EndedAt, a.Outcome, a.ExitCode, a.Reason, a.Counted, a.Stderr, a.Work)
			require.NoError(t, err)
			old[id] = append(old[id], a)
		}
	}

	now := sec(100)
	s := open(t, schema, postgres.Options{Now: func() time.Time { return now }})
	requireLatest(t, raw)
	for id, want := range old {
		got, err := s.Attempts(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, want, utcAttempts(got), "task %d", id)
	}

	// A first-try success on the new schema: no attempts row, the same history.
	task, _, err := s.Submit(t.Context(), tasks.Spec{Module: mod})
	require.NoError(t, err)
	cl, err := s.Claim(t.Context(), tasks.ClaimRequest{Owner: "new", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	now = sec(103)
	errs, err := s.Complete(t.Context(), []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded", Stderr: "tail", Work: 42}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	got, err := s.Attempts(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, []tasks.Attempt{{TaskID: task.ID, Number: 1, Owner: "new", StartedAt: sec(100), EndedAt: sec(103),
		Outcome: "succeeded", Stderr: "tail", Work: 42}}, utcAttempts(got))
	var rows int
	require.NoError(t, raw.QueryRow(t.Context(), `SELECT count(*) FROM attempts WHERE task_id = $1`, task.ID).Scan(&rows))
	require.Zero(t, rows, "a first-try success writes no attempts row")

	// Prune deletes every task and every attempt, wherever it is kept.
	now = sec(1000)
	n, err := s.Prune(t.Context(), sec(500))
	require.NoError(t, err)
	require.Equal(t, 4, n)
	for _, table := range []string{"tasks", "attempts"} {
		require.NoError(t, raw.QueryRow(t.Context(), `SELECT count(*) FROM `+table).Scan(&rows))
		require.Zero(t, rows, table)
	}
}

// schemaAt creates a schema of t's own as Open of a runner of the given
// schema version leaves it, holding one module, mod, created at t0. It
// returns the schema's name and a raw connection to it.
func schemaAt(t *testing.T, version int) (schema string, raw *pgx.Conn, t0 time.Time, mod string) {
	t.Helper()
	schema = newSchema(t)
	_, err := rawConn(t, "").Exec(t.Context(), `CREATE SCHEMA `+quote(schema))
	require.NoError(t, err)
	raw = rawConn(t, schema)
	_, err = raw.Exec(t.Context(), `CREATE TABLE schema_version (version integer PRIMARY KEY, applied timestamptz NOT NULL)`)
	require.NoError(t, err)
	for v := range version {
		_, err = raw.Exec(t.Context(), postgres.Migrations[v])
		require.NoError(t, err, "migration %d", v+1)
		_, err = raw.Exec(t.Context(), `INSERT INTO schema_version VALUES ($1, now())`, v+1)
		require.NoError(t, err)
	}
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mod = strings.Repeat("ab", 32)
	_, err = raw.Exec(t.Context(), `INSERT INTO modules (sha256, bytes, size, created) VALUES ($2, '\x00'::bytea, 1, $1)`, t0, mod)
	require.NoError(t, err)
	return schema, raw, t0, mod
}

// requireLatest requires that the schema raw is connected to is at
// postgres.SchemaVersion.
func requireLatest(t *testing.T, raw *pgx.Conn) {
	t.Helper()
	var version int
	require.NoError(t, raw.QueryRow(t.Context(), `SELECT max(version) FROM schema_version`).Scan(&version))
	require.Equal(t, postgres.SchemaVersion, version)
}

// utcAttempts puts the times of as in UTC, for Equal.
func utcAttempts(as []tasks.Attempt) []tasks.Attempt {
	for i := range as {
		as[i].StartedAt, as[i].EndedAt = as[i].StartedAt.UTC(), as[i].EndedAt.UTC()
	}
	return as
}

// TestMigrateSnapshots: a schema of version 8 with a task running under a
// lease and a queued one migrates to version 9: no snapshot, nothing
// stored, no lost streak, and the running attempt's lease takes a
// snapshot. No way of ending or deleting a task leaves a snapshot row
// behind: the trigger (for any statement that ends a task, a version 8
// runner's too), the foreign key (a delete, a bulk delete, Prune).
func TestMigrateSnapshots(t *testing.T) {
	t.Parallel()
	schema, raw, t0, mod := schemaAt(t, 8)
	var running, queued int64
	require.NoError(t, raw.QueryRow(t.Context(), `INSERT INTO tasks (module, max_attempts, queue, run_at, state, attempt,
		lease_owner, lease_expiry, started_at, created_at, updated_at) VALUES ($2, 3, 'default', $1, 'running', 1, 'old',
		$1::timestamptz + interval '1 hour', $1, $1, $1) RETURNING id`, t0, mod).Scan(&running))
	require.NoError(t, raw.QueryRow(t.Context(), `INSERT INTO tasks (module, max_attempts, queue, run_at, state,
		created_at, updated_at) VALUES ($2, 3, 'default', $1, 'queued', $1, $1) RETURNING id`, t0, mod).Scan(&queued))

	now := t0.Add(time.Minute)
	s := open(t, schema, postgres.Options{Now: func() time.Time { return now }})
	ctx := t.Context()
	requireLatest(t, raw)
	list, err := s.List(ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	for _, task := range list {
		require.Nil(t, task.Snapshot)
		require.Zero(t, task.Snapshots)
		require.Zero(t, task.LostStreak)
	}
	snapshots := func() int {
		t.Helper()
		var n int
		require.NoError(t, raw.QueryRow(ctx, `SELECT count(*) FROM snapshots`).Scan(&n))
		return n
	}
	old := tasks.Lease{TaskID: running, Owner: "old", Token: 1}
	require.NoError(t, s.SaveSnapshot(ctx, old, []byte("snap"), tasks.SnapshotInfo{Work: 7, RunTime: time.Second}))
	blob, info, err := s.Snapshot(ctx, running)
	require.NoError(t, err)
	require.Equal(t, []byte("snap"), blob)
	require.Equal(t, tasks.SnapshotInfo{Size: 4, TakenAt: now, Owner: "old", Attempt: 1, Work: 7, RunTime: time.Second}, info)
	got, err := s.Get(ctx, running)
	require.NoError(t, err)
	require.Equal(t, &info, got.Snapshot)
	require.Equal(t, 1, snapshots())

	// A version 8 runner's statement that ends the task: the trigger drops
	// the snapshot all the same.
	_, err = raw.Exec(ctx, `UPDATE tasks SET state = 'succeeded', lease_owner = NULL, finished_at = $2 WHERE id = $1`, running, now)
	require.NoError(t, err)
	require.Zero(t, snapshots())

	// Deleted with its task: Delete, a bulk delete, a row deleted by hand.
	for _, del := range []string{"delete", "bulk", "by hand"} {
		task, _, err := s.Submit(ctx, tasks.Spec{Module: mod})
		require.NoError(t, err)
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "new", Max: 10, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, cl, 2, del) // and the queued task
		for _, c := range cl {
			require.NoError(t, s.SaveSnapshot(ctx, c.Lease, []byte("snap"), tasks.SnapshotInfo{}))
		}
		require.NoError(t, s.Release(ctx, []tasks.Lease{cl[0].Lease, cl[1].Lease}))
		require.Equal(t, 2, snapshots(), del)
		switch del {
		case "delete":
			require.NoError(t, s.Delete(ctx, task.ID))
		case "bulk":
			n, err := s.ActBatch(ctx, tasks.ActionDelete, []int64{task.ID})
			require.NoError(t, err)
			require.Equal(t, 1, n)
		default:
			_, err := raw.Exec(ctx, `DELETE FROM tasks WHERE id = $1`, task.ID)
			require.NoError(t, err)
		}
		require.Equal(t, 1, snapshots(), "%s: the queued task's is left", del)
	}
	// The queued task is cancelled (its snapshot dropped) and pruned.
	_, err = s.Cancel(ctx, queued)
	require.NoError(t, err)
	require.Zero(t, snapshots())
	now = now.Add(time.Hour)
	n, err := s.Prune(ctx, now)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Zero(t, snapshots())
}

// TestMigrateOnRetry: a schema of version 9 with a queued task migrates
// to version 10: the task resumes on a retry (OnRetry ""), and a task
// submitted after keeps its OnRetry. A version 9 runner's insert (which
// names no on_retry) still works.
func TestMigrateOnRetry(t *testing.T) {
	t.Parallel()
	schema, raw, t0, mod := schemaAt(t, 9)
	insert := `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at)
		VALUES ($2, 3, 'default', $1, 'queued', $1, $1) RETURNING id`
	var old int64
	require.NoError(t, raw.QueryRow(t.Context(), insert, t0, mod).Scan(&old))

	s := open(t, schema, postgres.Options{Now: func() time.Time { return t0.Add(time.Minute) }})
	ctx := t.Context()
	requireLatest(t, raw)
	got, err := s.Get(ctx, old)
	require.NoError(t, err)
	require.Empty(t, got.OnRetry)
	task, _, err := s.Submit(ctx, tasks.Spec{Module: mod, OnRetry: tasks.OnRetryRestart})
	require.NoError(t, err)
	require.Equal(t, tasks.OnRetryRestart, task.OnRetry)
	var v9 int64
	require.NoError(t, raw.QueryRow(ctx, insert, t0, mod).Scan(&v9), "a version 9 runner's insert")
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "new", Max: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 3)
	for _, c := range cl {
		want := ""
		if c.Task.ID == task.ID {
			want = tasks.OnRetryRestart
		}
		require.Equal(t, want, c.Task.OnRetry, "task %d", c.Task.ID)
	}
}
