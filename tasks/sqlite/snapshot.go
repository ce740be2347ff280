package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// The latest snapshot of each task (tasks.Store.SaveSnapshot): a row of table
// snapshots (schema version 9) describes it and names its file in the
// snapshot directory (SnapshotDir), which holds its bytes; snapfiles.go
// has the files and the rules that keep them in step with the rows.

// MaxSnapshot is the largest snapshot the store takes, as for an input
// (Snapshot reads it whole into memory).
const MaxSnapshot = MaxInput

const (
	// ?1 now, fence ?2..?4.
	sqlSnapshotTask = `UPDATE tasks SET snapshots = snapshots + 1, lost_streak = 0, updated_at = ?1 WHERE ` +
		`id = ?2 AND state = 'running' AND lease_owner = ?3 AND attempt = ?4`
	sqlSnapshotFileOf = `SELECT file FROM snapshots WHERE task_id = ?`
	sqlSnapshotPut    = `INSERT INTO snapshots (task_id, size, taken_at, owner, attempt, work, run_time, suspended, file, blob)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
		ON CONFLICT (task_id) DO UPDATE SET size = excluded.size, taken_at = excluded.taken_at, owner = excluded.owner,
			attempt = excluded.attempt, work = excluded.work, run_time = excluded.run_time,
			suspended = excluded.suspended, file = excluded.file, blob = NULL`
	// The row an append extends: this attempt's, of the size it extends.
	sqlSnapshotAppendOf = `SELECT file FROM snapshots WHERE task_id = ? AND owner = ? AND attempt = ? AND size = ? AND file IS NOT NULL`
	sqlSnapshotGrow     = `UPDATE snapshots SET size = ?, taken_at = ?, work = ?, run_time = ?, suspended = ?
		WHERE task_id = ? AND owner = ? AND attempt = ? AND size = ? AND file = ?`
	// ?1 now, fence ?2..?4: the lease holds (changes only updated_at).
	sqlSnapshotFence = `UPDATE tasks SET updated_at = ?1 WHERE id = ?2 AND state = 'running' AND lease_owner = ?3 AND attempt = ?4`
	// The blob is read only for a row of schema version 8 (no file).
	sqlSnapshotOf = `SELECT s.size, s.taken_at, s.owner, s.attempt, s.work, s.run_time, s.suspended, s.file,
		CASE WHEN s.file IS NULL THEN s.blob END
		FROM tasks t LEFT JOIN snapshots s ON s.task_id = t.id WHERE t.id = ?`
)

// SaveSnapshot replaces the task's snapshot with blob if lease still holds
// the task (an error wrapping tasks.ErrStaleLease otherwise,
// tasks.ErrNotFound for an unknown task): the store fills info's Size,
// TakenAt (now), Owner and Attempt. It adds one to the task's Snapshots
// and ends its lost streak. The blob goes to a new file, written and
// synced before the transaction that points the task's row at it (a
// short one: the write holds up no other write of the store); the
// previous file is deleted after the commit, the new one when the save
// fails (snapfiles.go). It has committed when it returns nil.
func (s *Store) SaveSnapshot(ctx context.Context, lease tasks.Lease, blob []byte, info tasks.SnapshotInfo) error {
	if len(blob) > MaxSnapshot {
		return fmt.Errorf("sqlite: save snapshot: task %d: the snapshot of %d bytes is over the store's maximum of %d",
			lease.TaskID, len(blob), MaxSnapshot)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: save snapshot: task %d: %w", lease.TaskID, err)
	}
	name, err := s.snaps.write(lease.TaskID, lease.Token, blob)
	if err != nil {
		return fmt.Errorf("sqlite: save snapshot: task %d: write its file in %s: %w", lease.TaskID, s.snaps.dir, err)
	}
	path, err := s.snaps.path(name)
	if err != nil {
		return err
	}
	now := micros(s.clock())
	var prev sql.NullString
	err = s.write(ctx, "save snapshot", func(ctx context.Context) error {
		if err := s.snapshotFence(ctx, "save snapshot", sqlSnapshotTask, now, lease); err != nil {
			return err
		}
		// A sweep deletes a file no row names once it is a minute old,
		// under the write lock: a save that waited that long for it
		// must not name a deleted file.
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("sqlite: save snapshot: task %d: its file is gone before the commit (the save waited "+
				"over %v for the store, and a sweep took the file for an orphan?): %w", lease.TaskID, snapshotGrace, err)
		}
		prev = sql.NullString{}
		err := s.wc.QueryRowContext(ctx, sqlSnapshotFileOf, lease.TaskID).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.dbErr("save snapshot", err)
		}
		_, err = s.wc.ExecContext(ctx, sqlSnapshotPut, lease.TaskID, len(blob), now, lease.Owner, lease.Token,
			info.Work, int64(info.RunTime), boolInt(info.Suspended), name)
		return s.dbErrOrNil("save snapshot", err)
	})
	if err != nil {
		s.discardSnapshotFile(ctx, name)
		return err
	}
	if prev.Valid && prev.String != name {
		s.removeSnapshotFile(prev.String)
	}
	return nil
}

// AppendSnapshot extends the task's snapshot with blob if lease still
// holds the task (tasks.ErrStaleLease otherwise) and its snapshot is one
// this attempt saved, base bytes long (tasks.ErrSnapshotMoved otherwise).
// The blob is written into the snapshot's file after its base bytes
// (what a failed append left there is cut off) and synced before the
// transaction that grows the row's size: until that commits, a read reads
// the file's first size bytes, the snapshot as it was.
func (s *Store) AppendSnapshot(ctx context.Context, lease tasks.Lease, base int, blob []byte, info tasks.SnapshotInfo) error {
	if base+len(blob) > MaxSnapshot {
		return fmt.Errorf("sqlite: append snapshot: task %d: the snapshot of %d bytes is over the store's maximum of %d",
			lease.TaskID, base+len(blob), MaxSnapshot)
	}
	var name string
	err := s.r.QueryRowContext(ctx, sqlSnapshotAppendOf, lease.TaskID, lease.Owner, lease.Token, base).Scan(&name)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s.dbErr("append snapshot", err)
	}
	if name != "" {
		if err := s.snaps.writeAt(name, int64(base), blob); err != nil {
			return fmt.Errorf("sqlite: append snapshot: task %d: write its file in %s: %w", lease.TaskID, s.snaps.dir, err)
		}
	}
	now := micros(s.clock())
	return s.write(ctx, "append snapshot", func(ctx context.Context) error {
		if err := s.snapshotFence(ctx, "append snapshot", sqlSnapshotTask, now, lease); err != nil {
			return err
		}
		if name == "" {
			return fmt.Errorf("sqlite: append snapshot: task %d: %w", lease.TaskID, tasks.ErrSnapshotMoved)
		}
		res, err := s.wc.ExecContext(ctx, sqlSnapshotGrow, base+len(blob), now, info.Work, int64(info.RunTime), boolInt(info.Suspended),
			lease.TaskID, lease.Owner, lease.Token, base, name)
		if err != nil {
			return s.dbErr("append snapshot", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.dbErr("append snapshot", err)
		} else if n == 0 {
			return fmt.Errorf("sqlite: append snapshot: task %d: %w", lease.TaskID, tasks.ErrSnapshotMoved)
		}
		return nil
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
// for an unknown task. It reads the snapshot's file (or, for a snapshot
// stored by schema version 8, its row's blob); a missing file, or one
// whose size is not the row's, is an error that says so.
func (s *Store) Snapshot(ctx context.Context, id int64) ([]byte, tasks.SnapshotInfo, error) {
	var missing string
	for try := 0; ; try++ {
		var (
			size, attempt                   sql.NullInt64
			taken, work, runTime, suspended sql.NullInt64
			owner, file                     sql.NullString
			blob                            []byte
		)
		err := s.r.QueryRowContext(ctx, sqlSnapshotOf, id).Scan(&size, &taken, &owner, &attempt, &work, &runTime, &suspended, &file, &blob)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, tasks.SnapshotInfo{}, fmt.Errorf("sqlite: snapshot of task %d: %w", id, tasks.ErrNotFound)
		}
		if err != nil {
			return nil, tasks.SnapshotInfo{}, s.dbErr("snapshot", err)
		}
		if !size.Valid {
			return nil, tasks.SnapshotInfo{}, nil
		}
		info := tasks.SnapshotInfo{
			Size: int(size.Int64), TakenAt: fromMicros(taken), Owner: owner.String, Attempt: int(attempt.Int64),
			Work: work.Int64, RunTime: time.Duration(runTime.Int64), Suspended: suspended.Int64 != 0,
		}
		if file.Valid {
			blob, err = s.snaps.read(file.String, size.Int64)
			if errors.Is(err, fs.ErrNotExist) && file.String != missing && try < 8 {
				// A newer save (or a drop) may have replaced the row, and
				// deleted its file, since the row was read: read it again.
				missing = file.String
				continue
			}
			if err != nil {
				return nil, tasks.SnapshotInfo{}, fmt.Errorf("sqlite: snapshot of task %d: %w", id, err)
			}
		}
		if blob == nil {
			blob = []byte{}
		}
		return blob, info, nil
	}
}

// DropSnapshot deletes the task's snapshot, if it has one, when lease
// still holds the task (an error wrapping tasks.ErrStaleLease otherwise),
// and its file after the commit.
func (s *Store) DropSnapshot(ctx context.Context, lease tasks.Lease) error {
	now := micros(s.clock())
	var file sql.NullString
	err := s.write(ctx, "drop snapshot", func(ctx context.Context) error {
		if err := s.snapshotFence(ctx, "drop snapshot", sqlSnapshotFence, now, lease); err != nil {
			return err
		}
		var err error
		file, err = s.dropSnapshotRow(ctx, lease.TaskID)
		return s.dbErrOrNil("drop snapshot", err)
	})
	if err == nil && file.Valid {
		s.removeSnapshotFile(file.String)
	}
	return err
}

// MarkResumed records, when lease still holds the task (an error wrapping
// tasks.ErrStaleLease otherwise), that its attempt resumed from the
// snapshot from (nil: none, as the claim leaves it), so that the record
// of the attempt if it is lost (a takeover, RecoverRunning) says so, as
// Complete's does.
func (s *Store) MarkResumed(ctx context.Context, lease tasks.Lease, from *tasks.SnapshotInfo) error {
	return s.write(ctx, "mark resumed", func(ctx context.Context) error {
		res, err := s.st.wMarkResumed.ExecContext(ctx, specrow.ResumedFrom(from), lease.TaskID, lease.Owner, lease.Token)
		if err != nil {
			return s.dbErr("mark resumed", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.dbErr("mark resumed", err)
		} else if n == 0 {
			item, err := s.leaseError(ctx, "mark resumed", lease)
			return errors.Join(item, err)
		}
		return nil
	})
}

// dropSnapshotRow deletes the snapshot row of task id, in a write
// transaction, and returns the file it named (none: no row, or a blob
// row), for the caller to delete after the commit.
func (s *Store) dropSnapshotRow(ctx context.Context, id int64) (sql.NullString, error) {
	var file sql.NullString
	err := s.st.wDropSnapshot.QueryRowContext(ctx, id).Scan(&file)
	if errors.Is(err, sql.ErrNoRows) {
		return sql.NullString{}, nil
	}
	return file, err
}
