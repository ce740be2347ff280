package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/stint-run/stint/tasks"
)

// The latest snapshot of each task (tasks.Snapshotter): table snapshots
// (schema version 8), its blob read by Snapshot alone.

var _ tasks.Snapshotter = (*Store)(nil)

// MaxSnapshot is the largest snapshot the store takes: SQLite's limit on
// one value (SQLITE_MAX_LENGTH), as for an input.
const MaxSnapshot = MaxInput

const (
	// ?1 now, fence ?2..?4.
	sqlSnapshotTask = `UPDATE tasks SET snapshots = snapshots + 1, lost_streak = 0, updated_at = ?1 WHERE ` +
		`id = ?2 AND state = 'running' AND lease_owner = ?3 AND attempt = ?4`
	sqlSnapshotPut = `INSERT INTO snapshots (task_id, size, taken_at, owner, attempt, work, run_time, suspended, blob)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET size = excluded.size, taken_at = excluded.taken_at, owner = excluded.owner,
			attempt = excluded.attempt, work = excluded.work, run_time = excluded.run_time,
			suspended = excluded.suspended, blob = excluded.blob`
	// ?1 now, fence ?2..?4: the lease holds (changes only updated_at).
	sqlSnapshotFence = `UPDATE tasks SET updated_at = ?1 WHERE id = ?2 AND state = 'running' AND lease_owner = ?3 AND attempt = ?4`
	sqlSnapshotOf    = `SELECT s.size, s.taken_at, s.owner, s.attempt, s.work, s.run_time, s.suspended, s.blob
		FROM tasks t LEFT JOIN snapshots s ON s.task_id = t.id WHERE t.id = ?`
)

// SaveSnapshot replaces the task's snapshot with blob, in one transaction,
// if lease still holds the task (an error wrapping tasks.ErrStaleLease
// otherwise, tasks.ErrNotFound for an unknown task): the store fills
// info's Size, TakenAt (now), Owner and Attempt. It adds one to the task's
// Snapshots and ends its lost streak. It has committed when it returns
// nil.
func (s *Store) SaveSnapshot(ctx context.Context, lease tasks.Lease, blob []byte, info tasks.SnapshotInfo) error {
	if len(blob) > MaxSnapshot {
		return fmt.Errorf("sqlite: save snapshot: task %d: the snapshot of %d bytes is over the store's maximum of %d",
			lease.TaskID, len(blob), MaxSnapshot)
	}
	if blob == nil {
		blob = []byte{}
	}
	now := micros(s.clock())
	return s.write(ctx, "save snapshot", func(ctx context.Context) error {
		if err := s.snapshotFence(ctx, "save snapshot", sqlSnapshotTask, now, lease); err != nil {
			return err
		}
		_, err := s.wc.ExecContext(ctx, sqlSnapshotPut, lease.TaskID, len(blob), now, lease.Owner, lease.Token,
			info.Work, int64(info.RunTime), boolInt(info.Suspended), blob)
		return s.dbErrOrNil("save snapshot", err)
	})
}

// snapshotFence runs q (?1 now, fence ?2..?4) and explains a lease that
// does not hold.
func (s *Store) snapshotFence(ctx context.Context, op, q string, now int64, lease tasks.Lease) error {
	res, err := s.wc.ExecContext(ctx, q, now, lease.TaskID, lease.Owner, lease.Token)
	if err != nil {
		return s.dbErr(op, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.dbErr(op, err)
	} else if n == 0 {
		item, err := s.leaseError(ctx, op, lease)
		return errors.Join(item, err)
	}
	return nil
}

// Snapshot returns the task's snapshot and what describes it: a nil blob
// and a zero info when it has none; an error wrapping tasks.ErrNotFound
// for an unknown task.
func (s *Store) Snapshot(ctx context.Context, id int64) ([]byte, tasks.SnapshotInfo, error) {
	var (
		size, attempt                   sql.NullInt64
		taken, work, runTime, suspended sql.NullInt64
		owner                           sql.NullString
		blob                            []byte
	)
	err := s.r.QueryRowContext(ctx, sqlSnapshotOf, id).Scan(&size, &taken, &owner, &attempt, &work, &runTime, &suspended, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, tasks.SnapshotInfo{}, fmt.Errorf("sqlite: snapshot of task %d: %w", id, tasks.ErrNotFound)
	}
	if err != nil {
		return nil, tasks.SnapshotInfo{}, s.dbErr("snapshot", err)
	}
	if !size.Valid {
		return nil, tasks.SnapshotInfo{}, nil
	}
	if blob == nil {
		blob = []byte{}
	}
	return blob, tasks.SnapshotInfo{
		Size: int(size.Int64), TakenAt: fromMicros(taken), Owner: owner.String, Attempt: int(attempt.Int64),
		Work: work.Int64, RunTime: time.Duration(runTime.Int64), Suspended: suspended.Int64 != 0,
	}, nil
}

// DropSnapshot deletes the task's snapshot, if it has one, when lease
// still holds the task (an error wrapping tasks.ErrStaleLease otherwise).
func (s *Store) DropSnapshot(ctx context.Context, lease tasks.Lease) error {
	now := micros(s.clock())
	return s.write(ctx, "drop snapshot", func(ctx context.Context) error {
		if err := s.snapshotFence(ctx, "drop snapshot", sqlSnapshotFence, now, lease); err != nil {
			return err
		}
		_, err := s.st.wDropSnapshot.ExecContext(ctx, lease.TaskID)
		return s.dbErrOrNil("drop snapshot", err)
	})
}
