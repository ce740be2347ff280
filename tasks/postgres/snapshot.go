package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// The latest snapshot of each task (tasks.Store.SaveSnapshot): table snapshots
// (schema version 9), its blob (bytea) read by Snapshot alone.

// MaxSnapshot is the largest snapshot the store takes: PostgreSQL's limit
// on one value (1 GB), less room for the protocol, as for an input.
const MaxSnapshot = MaxInput

// sqlSaveSnapshot replaces the snapshot of the task the fence holds, in
// one statement: $1 now, fence $2..$4, $5 size, $6 work units, $7 run
// time (ns), $8 suspended, $9 the bytes. It deletes the parts the one it
// replaces had, adds one to the task's snapshots and ends its lost streak; no row is written when the fenced
// update took no row.
const sqlSaveSnapshot = `WITH t AS (
	UPDATE tasks t SET snapshots = t.snapshots + 1, lost_streak = 0, updated_at = $1
	WHERE t.id = $2 AND ` + isRunning + ` AND t.lease_owner = $3 AND t.attempt = $4
	RETURNING id
), p AS (
	DELETE FROM snapshot_parts WHERE task_id IN (SELECT id FROM t)
)
INSERT INTO snapshots (task_id, size, taken_at, owner, attempt, work, run_time, suspended, blob)
SELECT id, $5, $1, $3, $4, $6, $7, $8, $9::bytea FROM t
ON CONFLICT (task_id) DO UPDATE SET size = excluded.size, taken_at = excluded.taken_at, owner = excluded.owner,
	attempt = excluded.attempt, work = excluded.work, run_time = excluded.run_time,
	suspended = excluded.suspended, blob = excluded.blob`

// sqlAppendFence takes the fence of an append: $1 now, fence $2..$4. It
// adds one to the task's snapshots and ends its lost streak.
const sqlAppendFence = `UPDATE tasks t SET snapshots = t.snapshots + 1, lost_streak = 0, updated_at = $1
	WHERE t.id = $2 AND ` + isRunning + ` AND t.lease_owner = $3 AND t.attempt = $4`

// sqlGrowSnapshot grows the snapshot an append extends: $1 now, $2 the
// task, $3 owner, $4 attempt, $5 its size now, $6 its new size, $7 work,
// $8 run time, $9 suspended.
const sqlGrowSnapshot = `UPDATE snapshots SET size = $6, taken_at = $1, work = $7, run_time = $8, suspended = $9
	WHERE task_id = $2 AND owner = $3 AND attempt = $4 AND size = $5`

// sqlAddPart stores an appended part: $1 task, $2 attempt, $3 offset, $4 bytes.
const sqlAddPart = `INSERT INTO snapshot_parts (task_id, attempt, off, blob) VALUES ($1, $2, $3, $4::bytea)`

// sqlPartsOf reads the parts of a snapshot: $1 task, $2 its attempt, $3
// its blob's length, $4 its size.
const sqlPartsOf = `SELECT off, blob FROM snapshot_parts WHERE task_id = $1 AND attempt = $2 AND off >= $3 AND off < $4 ORDER BY off`

// sqlDropSnapshot deletes the snapshot of the task the fence holds: $1
// now, fence $2..$4. It returns whether the lease held.
const sqlDropSnapshot = `WITH t AS (
	UPDATE tasks t SET updated_at = $1
	WHERE t.id = $2 AND ` + isRunning + ` AND t.lease_owner = $3 AND t.attempt = $4
	RETURNING id
), d AS (
	DELETE FROM snapshots WHERE task_id IN (SELECT id FROM t)
)
SELECT EXISTS (SELECT 1 FROM t)`

// sqlSnapshotOf reads a task's snapshot (NULLs: none; no row: no task).
const sqlSnapshotOf = `SELECT s.size, s.taken_at, s.owner, s.attempt, s.work, s.run_time, s.suspended, s.blob
FROM tasks t LEFT JOIN snapshots s ON s.task_id = t.id WHERE t.id = $1`

// SaveSnapshot replaces the task's snapshot with blob, in one statement,
// if lease still holds the task (an error wrapping tasks.ErrStaleLease
// otherwise, tasks.ErrNotFound for an unknown task): the store fills
// info's Size, TakenAt (now), Owner and Attempt. It adds one to the task's
// Snapshots and ends its lost streak. It has committed when it returns
// nil.
func (s *Store) SaveSnapshot(ctx context.Context, lease tasks.Lease, blob []byte, info tasks.SnapshotInfo) error {
	if len(blob) > MaxSnapshot {
		return fmt.Errorf("postgres: save snapshot: task %d: the snapshot of %d bytes is over the store's maximum of %d",
			lease.TaskID, len(blob), MaxSnapshot)
	}
	if blob == nil {
		blob = []byte{}
	}
	var tag pgconn.CommandTag
	err := retry(func() (err error) {
		tag, err = s.pool.Exec(ctx, sqlSaveSnapshot, s.clock(), lease.TaskID, lease.Owner, lease.Token,
			len(blob), info.Work, int64(info.RunTime), info.Suspended, blob)
		return err
	})
	if err != nil {
		return s.dbErr("save snapshot", err)
	}
	if tag.RowsAffected() == 0 {
		return s.staleError(ctx, "save snapshot", lease)
	}
	return nil
}

// AppendSnapshot extends the task's snapshot with blob, in one
// transaction, if lease still holds the task (tasks.ErrStaleLease
// otherwise) and its snapshot is one this attempt saved, base bytes long
// (tasks.ErrSnapshotMoved otherwise): blob becomes a part of it (schema
// version 14), and its row says the new size and info.
func (s *Store) AppendSnapshot(ctx context.Context, lease tasks.Lease, base int, blob []byte, info tasks.SnapshotInfo) error {
	if base+len(blob) > MaxSnapshot {
		return fmt.Errorf("postgres: append snapshot: task %d: the snapshot of %d bytes is over the store's maximum of %d",
			lease.TaskID, base+len(blob), MaxSnapshot)
	}
	if blob == nil {
		blob = []byte{}
	}
	var fenced, moved bool
	err := retry(func() error {
		fenced, moved = false, false
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			now := s.clock()
			tag, err := tx.Exec(ctx, sqlAppendFence, now, lease.TaskID, lease.Owner, lease.Token)
			if err != nil || tag.RowsAffected() == 0 {
				return err // not fenced: the transaction commits nothing
			}
			fenced = true
			tag, err = tx.Exec(ctx, sqlGrowSnapshot, now, lease.TaskID, lease.Owner, lease.Token, base, base+len(blob),
				info.Work, int64(info.RunTime), info.Suspended)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				moved = true
				return errMoved
			}
			_, err = tx.Exec(ctx, sqlAddPart, lease.TaskID, lease.Token, base, blob)
			return err
		})
	})
	switch {
	case moved:
		return fmt.Errorf("postgres: append snapshot: task %d: %w", lease.TaskID, tasks.ErrSnapshotMoved)
	case err != nil:
		return s.dbErr("append snapshot", err)
	case !fenced:
		return s.staleError(ctx, "append snapshot", lease)
	}
	return nil
}

// errMoved rolls back an append whose snapshot moved.
var errMoved = errors.New("moved")

// Snapshot returns the task's snapshot and what describes it: a nil blob
// and a zero info when it has none; an error wrapping tasks.ErrNotFound
// for an unknown task.
func (s *Store) Snapshot(ctx context.Context, id int64) ([]byte, tasks.SnapshotInfo, error) {
	var (
		size, attempt *int
		taken         *time.Time
		owner         *string
		work, runTime *int64
		suspended     *bool
		blob          []byte
	)
	err := s.pool.QueryRow(ctx, sqlSnapshotOf, id).Scan(&size, &taken, &owner, &attempt, &work, &runTime, &suspended, &blob)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, tasks.SnapshotInfo{}, fmt.Errorf("postgres: snapshot of task %d: %w", id, tasks.ErrNotFound)
	}
	if err != nil {
		return nil, tasks.SnapshotInfo{}, s.dbErr("snapshot", err)
	}
	if size == nil {
		return nil, tasks.SnapshotInfo{}, nil
	}
	if blob == nil {
		blob = []byte{}
	}
	if len(blob) < *size {
		if blob, err = s.snapshotParts(ctx, id, *attempt, blob, *size); err != nil {
			return nil, tasks.SnapshotInfo{}, err
		}
	}
	return blob, tasks.SnapshotInfo{Size: *size, TakenAt: utc(taken), Owner: *owner, Attempt: *attempt,
		Work: *work, RunTime: time.Duration(*runTime), Suspended: *suspended}, nil
}

// DropSnapshot deletes the task's snapshot, if it has one, when lease
// still holds the task (an error wrapping tasks.ErrStaleLease otherwise).
func (s *Store) DropSnapshot(ctx context.Context, lease tasks.Lease) error {
	var held bool
	err := retry(func() error {
		return s.pool.QueryRow(ctx, sqlDropSnapshot, s.clock(), lease.TaskID, lease.Owner, lease.Token).Scan(&held)
	})
	if err != nil {
		return s.dbErr("drop snapshot", err)
	}
	if !held {
		return s.staleError(ctx, "drop snapshot", lease)
	}
	return nil
}

// MarkResumed records, when lease still holds the task (an error wrapping
// tasks.ErrStaleLease otherwise), that its attempt resumed from the
// snapshot from (nil: none, as the claim leaves it), so that the record
// of the attempt if it is lost (a takeover, a recovery) says so, as
// Complete's does.
func (s *Store) MarkResumed(ctx context.Context, lease tasks.Lease, from *tasks.SnapshotInfo) error {
	tag, err := s.pool.Exec(ctx, sqlMarkResumed, specrow.ResumedFrom(from), lease.TaskID, lease.Owner, lease.Token)
	if err != nil {
		return s.dbErr("mark resumed", err)
	}
	if tag.RowsAffected() == 0 {
		return s.staleError(ctx, "mark resumed", lease)
	}
	return nil
}

// snapshotParts returns blob, the first bytes of a snapshot of size bytes
// taken in attempt, followed by its parts.
func (s *Store) snapshotParts(ctx context.Context, id int64, attempt int, blob []byte, size int) ([]byte, error) {
	rows, err := s.pool.Query(ctx, sqlPartsOf, id, attempt, len(blob), size)
	if err != nil {
		return nil, s.dbErr("snapshot", err)
	}
	defer rows.Close()
	whole := make([]byte, len(blob), size)
	copy(whole, blob)
	for rows.Next() {
		var (
			off  int64
			part []byte
		)
		if err := rows.Scan(&off, &part); err != nil {
			return nil, s.dbErr("snapshot", err)
		}
		if off != int64(len(whole)) || len(whole)+len(part) > size {
			return nil, fmt.Errorf("postgres: snapshot of task %d: a part of %d bytes at %d after %d bytes of %d: damaged", id, len(part), off, len(whole), size)
		}
		whole = append(whole, part...)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("snapshot", err)
	}
	if len(whole) != size {
		return nil, fmt.Errorf("postgres: snapshot of task %d: its parts hold %d of its %d bytes: damaged", id, len(whole), size)
	}
	return whole, nil
}
