package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// writeVersion1 writes at path a store of schema version 1 (inputs and
// results in the tasks rows): task 1 succeeded with a large input and a
// result, task 2 queued with an input, a checkpoint and an attempt, task 3
// queued with nothing. It returns task 1's input.
func writeVersion1(t *testing.T, path string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	big := bytes.Repeat([]byte("0123456789"), 30_000) // overflow pages
	module := []byte("\x00asm\x01\x00\x00\x00")
	sum := sha256.Sum256(module)
	hash := hex.EncodeToString(sum[:])
	for _, q := range []string{
		`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)`,
		migrations[0],
		`INSERT INTO schema_version (version, applied) VALUES (1, 0)`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	_, err = db.Exec(`INSERT INTO modules (sha256, bytes, size, created) VALUES (?, ?, 8, 0)`, hash, module)
	require.NoError(t, err)
	insert := `INSERT INTO tasks (id, module, input, max_attempts, queue, run_at, state, attempt, result, created_at, updated_at)
		VALUES (?, ?, ?, 3, 'default', 0, ?, ?, ?, 0, 0)`
	for _, row := range []struct {
		id            int64
		input, result any
		state         string
		attempt       int
	}{
		{1, big, []byte("done"), "succeeded", 1},
		{2, []byte("half"), nil, "queued", 1},
		{3, nil, nil, "queued", 0},
	} {
		_, err := db.Exec(insert, row.id, hash, row.input, row.state, row.attempt, row.result)
		require.NoError(t, err)
	}
	for _, q := range []string{
		`INSERT INTO checkpoints (task_id, blob, updated) VALUES (2, X'0102', 0)`,
		`UPDATE tasks SET checkpoint_size = 2 WHERE id = 2`,
		`INSERT INTO attempts (task_id, number, owner, outcome, exit_code, counted, resumed)
			VALUES (1, 1, 'old', 'succeeded', 0, 0, 0), (2, 1, 'old', 'interrupted', 75, 0, 0)`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	return big
}

// writeVersion writes at path the store of writeVersion1 upgraded to schema
// version (as a runner of that version leaves it).
func writeVersion(t *testing.T, path string, version int) {
	t.Helper()
	writeVersion1(t, path)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	for v := 1; v < version; v++ {
		_, err := db.Exec(migrations[v])
		require.NoError(t, err, "migration %d", v+1)
		_, err = db.Exec(`INSERT INTO schema_version (version, applied) VALUES (?, 0)`, v+1)
		require.NoError(t, err)
	}
}

// openMigrated opens the store at path (closed when t ends) and requires
// that it is at SchemaVersion.
func openMigrated(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	var version int
	require.NoError(t, s.r.QueryRowContext(t.Context(), `SELECT max(version) FROM schema_version`).Scan(&version))
	require.Equal(t, SchemaVersion, version)
	return s
}

// TestMigrateFromVersion1: a store written by schema version 1 opens with
// every task's input, result, checkpoint and attempts as they were, and
// runs on.
func TestMigrateFromVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	big := writeVersion1(t, path)

	s := openMigrated(t, path, Options{})
	ctx := t.Context()

	one, err := s.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, big, one.Input)
	require.Equal(t, []byte("done"), one.Result)
	require.Equal(t, len(big), one.InputSize)
	require.Equal(t, 4, one.ResultSize)
	two, err := s.Get(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, []byte("half"), two.Input)
	require.Nil(t, two.Result)
	require.Equal(t, 2, two.CheckpointSize)
	three, err := s.Get(ctx, 3)
	require.NoError(t, err)
	require.Nil(t, three.Input)
	require.Zero(t, three.InputSize)
	atts, err := s.Attempts(ctx, 1)
	require.NoError(t, err)
	require.Len(t, atts, 1)

	// The queued tasks run on: task 2 resumes with its input and checkpoint.
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "new", Max: 10, Lease: 60e9})
	require.NoError(t, err)
	require.Len(t, cl, 2)
	require.Equal(t, []byte("half"), cl[0].Task.Input)
	require.Equal(t, []byte{1, 2}, cl[0].Checkpoint)
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded,
		Result: []byte("whole"), Attempt: tasks.Attempt{Outcome: "succeeded"}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	two, err = s.Get(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, []byte("whole"), two.Result)

	// The succeeded tasks are counted by queue: task 1, from before the
	// migration (version 6 counted it), and task 2, by the triggers.
	counts, err := s.CountTasks(ctx)
	require.NoError(t, err)
	require.True(t, counts.SucceededByQueue)
	require.Contains(t, counts.ByQueue, tasks.QueueCount{Queue: "default", State: tasks.StateSucceeded, Count: 2})
}

// TestMigrateRefusedUnderARunningRunner: a store that needs a migration is
// not migrated while a runner holds its lock file (an older `runner serve`,
// whose statements name the old schema): the error says so and the store
// is left as it was.
func TestMigrateRefusedUnderARunningRunner(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	writeVersion1(t, path)
	held, err := lockFile(path+".lock", path)
	require.NoError(t, err)

	_, err = Open(t.Context(), path, Options{})
	require.ErrorIs(t, err, tasks.ErrLocked)
	require.ErrorContains(t, err, "its schema is version 1 and this runner needs "+fmt.Sprint(SchemaVersion))
	require.ErrorContains(t, err, "nothing was changed")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	var version int
	require.NoError(t, db.QueryRow(`SELECT max(version) FROM schema_version`).Scan(&version))
	require.NoError(t, db.Close())
	require.Equal(t, 1, version)

	// Once that runner is gone, the upgrade goes ahead.
	require.NoError(t, held.Close())
	s, err := Open(t.Context(), path, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestMigrateSnapshots: a store of version 7 (task 2 queued with a
// checkpoint, after writeVersion1's upgrade to 7) opens at version 8 with
// no snapshot, nothing stored and no lost streak; its tasks then keep
// snapshots, which no way of ending or deleting a task leaves behind
// (trigger tasks_ended_snapshot, Delete, Prune, and the foreign key for a
// task row deleted by hand).
func TestMigrateSnapshots(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	writeVersion(t, path, 7)

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openMigrated(t, path, Options{Now: func() time.Time { return now }})
	ctx := t.Context()
	list, err := s.List(ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 3)
	for _, task := range list {
		require.Nil(t, task.Snapshot)
		require.Zero(t, task.Snapshots)
		require.Zero(t, task.LostStreak)
	}
	blob, _, err := s.Snapshot(ctx, 2)
	require.NoError(t, err)
	require.Nil(t, blob)

	snapshots := func() int {
		t.Helper()
		var n int
		require.NoError(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM snapshots`).Scan(&n))
		return n
	}
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "new", Max: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 2)
	for _, c := range cl {
		require.NoError(t, s.SaveSnapshot(ctx, c.Lease, []byte("snap"), tasks.SnapshotInfo{Work: 1}))
	}
	require.Equal(t, 2, snapshots())
	// Task 2 succeeds: the trigger drops its snapshot.
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Equal(t, 1, snapshots())
	// Task 3, interrupted, keeps it until it is deleted.
	errs, err = s.Complete(ctx, []tasks.Completion{{Lease: cl[1].Lease, State: tasks.StateQueued}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Equal(t, 1, snapshots())
	require.NoError(t, s.Delete(ctx, 3))
	require.Zero(t, snapshots())

	// A task row deleted by hand takes its snapshot (ON DELETE CASCADE).
	task, _, err := s.Submit(ctx, tasks.Spec{Module: list[0].Module})
	require.NoError(t, err)
	cl, err = s.Claim(ctx, tasks.ClaimRequest{Owner: "new", Max: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.NoError(t, s.SaveSnapshot(ctx, cl[0].Lease, []byte("snap"), tasks.SnapshotInfo{}))
	require.Equal(t, 1, snapshots())
	require.NoError(t, s.write(ctx, "test", func(ctx context.Context) error {
		for _, table := range []string{"attempts", "checkpoints", "inputs", "results"} {
			if _, err := s.wc.ExecContext(ctx, `DELETE FROM `+table+` WHERE task_id = ?`, task.ID); err != nil {
				return err
			}
		}
		_, err := s.wc.ExecContext(ctx, `DELETE FROM tasks WHERE id = ?`, task.ID)
		return err
	}))
	require.Zero(t, snapshots())

	// Prune leaves none either (a task that ended dropped it already).
	n, err := s.Prune(ctx, now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n, "task 2 (task 1 was written without a finish time)")
	require.Zero(t, snapshots())
}

// TestMigrateOnRetry: a store of version 9 opens at version 10 with its
// tasks as they were, each one resuming on a retry (OnRetry ""); a task
// submitted after keeps its OnRetry.
func TestMigrateOnRetry(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	writeVersion(t, path, 9)

	s := openMigrated(t, path, Options{})
	ctx := t.Context()
	list, err := s.List(ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 3)
	for _, task := range list {
		require.Empty(t, task.OnRetry, "task %d", task.ID)
	}
	task, _, err := s.Submit(ctx, tasks.Spec{Module: list[0].Module, OnRetry: tasks.OnRetryRestart})
	require.NoError(t, err)
	got, err := s.Get(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.OnRetryRestart, got.OnRetry)
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "new", Max: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 3, "tasks 2, 3 and the new one")
	for _, c := range cl {
		want := ""
		if c.Task.ID == task.ID {
			want = tasks.OnRetryRestart
		}
		require.Equal(t, want, c.Task.OnRetry, "task %d", c.Task.ID)
	}
}
