package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"

	"github.com/stint-run/stint/tasks"
)

// claimAllUnpausedSQL is claimAllSQL skipping the paused queues' tasks:
// the claim of every queue while some queue is paused. It walks the ready
// index in claim order past the paused queues' tasks.
const claimAllUnpausedSQL = claimSet + `SELECT id FROM tasks INDEXED BY tasks_ready WHERE state = 'queued' AND run_at <= ?3
	AND queue NOT IN (SELECT queue FROM paused_queues) ` + readyOrder + ` LIMIT +?4` + claimReturning

// unpaused returns req without the paused queues. With req.Queues nil
// (every queue) and some queue paused, exceptPaused is true: the claim
// must skip the paused queues' tasks itself. none is true when every queue
// req names is paused. The paused set is read before the claim's write
// transaction: a pause that returned before Claim was called is always
// honoured.
func (s *Store) unpaused(ctx context.Context, req tasks.ClaimRequest) (out tasks.ClaimRequest, exceptPaused, none bool, err error) {
	paused, err := s.pausedSet(ctx)
	if err != nil || len(paused) == 0 {
		return req, false, false, err
	}
	if req.Queues == nil {
		return req, true, false, nil
	}
	out = req
	out.Queues = maps.Clone(req.Queues)
	for q := range paused {
		delete(out.Queues, q)
	}
	for _, n := range out.Queues {
		if n > 0 {
			return out, false, false, nil
		}
	}
	return out, false, true, nil
}

// pausedSet reads the names of the paused queues.
func (s *Store) pausedSet(ctx context.Context) (map[string]bool, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT queue FROM paused_queues`)
	if err != nil {
		return nil, s.dbErr("read paused queues", err)
	}
	defer rows.Close()
	var set map[string]bool
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			return nil, s.dbErr("read paused queues", err)
		}
		if set == nil {
			set = map[string]bool{}
		}
		set[q] = true
	}
	return set, s.dbErrOrNil("read paused queues", rows.Err())
}

func (s *Store) dbErrOrNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return s.dbErr(op, err)
}

// PauseQueue pauses queue: no claim takes its tasks until ResumeQueue.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	if err := tasks.CheckQueueName(queue); err != nil {
		return fmt.Errorf("sqlite: pause queue: %w", err)
	}
	now := micros(s.clock())
	return s.write(ctx, "pause queue", func(ctx context.Context) error {
		_, err := s.wc.ExecContext(ctx, `INSERT INTO paused_queues (queue, paused) VALUES (?, ?) ON CONFLICT (queue) DO NOTHING`, queue, now)
		return s.dbErrOrNil("pause queue", err)
	})
}

// ResumeQueue resumes queue and wakes the runners waiting for work.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	if err := tasks.CheckQueueName(queue); err != nil {
		return fmt.Errorf("sqlite: resume queue: %w", err)
	}
	err := s.write(ctx, "resume queue", func(ctx context.Context) error {
		_, err := s.wc.ExecContext(ctx, `DELETE FROM paused_queues WHERE queue = ?`, queue)
		return s.dbErrOrNil("resume queue", err)
	})
	if err == nil {
		s.wake.ping()
	}
	return err
}

// PausedQueues lists the paused queues by name.
func (s *Store) PausedQueues(ctx context.Context) ([]tasks.PausedQueue, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT queue, paused FROM paused_queues ORDER BY queue`)
	if err != nil {
		return nil, s.dbErr("paused queues", err)
	}
	defer rows.Close()
	out := []tasks.PausedQueue{}
	for rows.Next() {
		var p tasks.PausedQueue
		var at sql.NullInt64
		if err := rows.Scan(&p.Queue, &at); err != nil {
			return nil, s.dbErr("paused queues", err)
		}
		p.PausedAt = fromMicros(at)
		out = append(out, p)
	}
	return out, s.dbErrOrNil("paused queues", rows.Err())
}

// Delete deletes a task that is not running, with its input, result,
// checkpoint, snapshot (its file after the commit) and attempt records
// (its module stays).
func (s *Store) Delete(ctx context.Context, id int64) error {
	var file sql.NullString
	err := s.write(ctx, "delete", func(ctx context.Context) error {
		var state string
		err := s.wc.QueryRowContext(ctx, `SELECT state FROM tasks WHERE id = ?`, id).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: delete task %d: %w", id, tasks.ErrNotFound)
		}
		if err != nil {
			return s.dbErr("delete", err)
		}
		if tasks.State(state) == tasks.StateRunning {
			return fmt.Errorf("sqlite: delete task %d: it is running; cancel it first: %w", id, tasks.ErrInvalidState)
		}
		file, err = s.deleteTask(ctx, id)
		return s.dbErrOrNil("delete", err)
	})
	if err == nil && file.Valid {
		s.removeSnapshotFile(file.String)
	}
	return err
}

// deleteTask deletes task id and everything stored for it but its module,
// in a write transaction, and returns the file its snapshot row named, for
// the caller to delete after the commit.
func (s *Store) deleteTask(ctx context.Context, id int64) (sql.NullString, error) {
	for _, table := range []string{"attempts", "checkpoints", "inputs", "results"} {
		if _, err := s.wc.ExecContext(ctx, `DELETE FROM `+table+` WHERE task_id = ?`, id); err != nil {
			return sql.NullString{}, err
		}
	}
	file, err := s.dropSnapshotRow(ctx, id)
	if err != nil {
		return sql.NullString{}, err
	}
	_, err = s.wc.ExecContext(ctx, `DELETE FROM tasks WHERE id = ?`, id)
	return file, err
}

// NameModule records name as the name of the stored module sha256 (the
// latest name given wins). ErrModuleNotFound if it is not stored.
func (s *Store) NameModule(ctx context.Context, sha256, name string) error {
	if err := tasks.CheckModuleName(name); err != nil {
		return fmt.Errorf("sqlite: name module: %w", err)
	}
	return s.write(ctx, "name module", func(ctx context.Context) error {
		res, err := s.wc.ExecContext(ctx, `UPDATE modules SET name = ? WHERE sha256 = ? AND name IS NOT ?`, name, sha256, name)
		if err != nil {
			return s.dbErr("name module", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			if err := s.wc.QueryRowContext(ctx, `SELECT 1 FROM modules WHERE sha256 = ?`, sha256).Scan(&one); errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: name module %.12s: %w", sha256, tasks.ErrModuleNotFound)
			}
		}
		return nil
	})
}

// ModuleNames returns the names of the named modules among shas.
func (s *Store) ModuleNames(ctx context.Context, shas []string) (map[string]string, error) {
	out := map[string]string{}
	for _, h := range shas {
		if _, done := out[h]; done {
			continue
		}
		var name sql.NullString
		err := s.r.QueryRowContext(ctx, `SELECT name FROM modules WHERE sha256 = ?`, h).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, s.dbErr("module names", err)
		}
		if name.Valid {
			out[h] = name.String
		}
	}
	return out, nil
}

// ActBatch applies a to each task of ids in one write transaction
// (tasks.Store.ActBatch): Retry, Cancel or Delete of each, a task that moved
// on (or is gone) left alone and not counted. A retry wakes the runners.
func (s *Store) ActBatch(ctx context.Context, a tasks.Action, ids []int64) (int, error) {
	if err := tasks.CheckBatch(a, ids); err != nil {
		return 0, fmt.Errorf("sqlite: bulk: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	now := micros(s.clock())
	op := "bulk " + string(a)
	done := 0
	var files []string // of the deleted tasks' snapshots
	err := s.write(ctx, op, func(ctx context.Context) error {
		done, files = 0, nil
		for _, id := range ids {
			ok, err := s.actOne(ctx, a, id, now, &files)
			if err != nil {
				return s.dbErr(op, err)
			}
			if ok {
				done++
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		s.removeSnapshotFile(f)
	}
	if a == tasks.ActionRetry && done > 0 {
		s.wake.ping()
	}
	return done, nil
}

// actOne applies a to task id inside ActBatch's transaction, and says
// whether it did (false: the task is in a state a does not apply to, or
// gone). A deleted task's snapshot file is appended to files.
func (s *Store) actOne(ctx context.Context, a tasks.Action, id, now int64, files *[]string) (bool, error) {
	var err error
	switch a {
	case tasks.ActionRetry:
		_, err = scanTask(s.st.wRetry.QueryRowContext(ctx, now, id))
	case tasks.ActionCancel:
		_, err = scanTask(s.st.wCancel.QueryRowContext(ctx, now, id))
	case tasks.ActionDelete:
		var state string
		if err = s.wc.QueryRowContext(ctx, `SELECT state FROM tasks WHERE id = ?`, id).Scan(&state); err != nil {
			break
		}
		if tasks.State(state) == tasks.StateRunning {
			return false, nil
		}
		var file sql.NullString
		if file, err = s.deleteTask(ctx, id); err == nil && file.Valid {
			*files = append(*files, file.String)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
