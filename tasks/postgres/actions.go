package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-run/stint/tasks"
)

// sqlClaimAllUnpaused is sqlClaimAll skipping the queues of $5 (the
// paused ones): the claim of every queue while some queue is paused.
const sqlClaimAllUnpaused = claimSet + `SELECT ctid FROM tasks WHERE state = 'queued' AND run_at <= $3
	AND queue <> ALL($5::text[]) AND ` + noTenants + readyOrder + ` LIMIT $4 FOR UPDATE SKIP LOCKED` + claimReturning

// unpaused returns req without the paused queues, and the paused queues
// when req.Queues is nil (every queue): the claim must skip them itself.
// none is true when every queue req names is paused.
func (s *Store) unpaused(ctx context.Context, req tasks.ClaimRequest) (out tasks.ClaimRequest, paused []string, none bool, err error) {
	paused, err = s.pausedNames(ctx)
	if err != nil || len(paused) == 0 {
		return req, nil, false, err
	}
	if req.Queues == nil {
		return req, paused, false, nil
	}
	out = req
	out.Queues = make(map[string]int, len(req.Queues))
	for q, n := range req.Queues {
		if n > 0 && !slices.Contains(paused, q) {
			out.Queues[q] = n
		}
	}
	return out, nil, len(out.Queues) == 0, nil
}

// pausedNames returns the paused queues, read again when the last read is
// older than Options.PausedRecheck (a second by default: reading them at
// every claim would cost a round trip each). A Store's own PauseQueue and
// ResumeQueue take effect at its next claim.
func (s *Store) pausedNames(ctx context.Context) ([]string, error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if !s.pread.IsZero() && time.Since(s.pread) < s.opts.PausedRecheck {
		return s.pset, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT queue FROM paused_queues ORDER BY queue`)
	if err != nil {
		return nil, s.dbErr("read paused queues", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.dbErr("read paused queues", err)
	}
	s.pset, s.pread = names, time.Now()
	return names, nil
}

// forgetPaused makes the next claim read the paused queues again.
func (s *Store) forgetPaused() {
	s.pmu.Lock()
	s.pread = time.Time{}
	s.pmu.Unlock()
}

// PauseQueue pauses queue: no claim takes its tasks until ResumeQueue
// (other runners' claims within Options.PausedRecheck, a second).
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	if err := tasks.CheckQueueName(queue); err != nil {
		return fmt.Errorf("postgres: pause queue: %w", err)
	}
	defer s.forgetPaused()
	_, err := s.pool.Exec(ctx, `INSERT INTO paused_queues (queue, paused) VALUES ($1, $2) ON CONFLICT (queue) DO NOTHING`, queue, s.clock())
	if err != nil {
		return s.dbErr("pause queue", err)
	}
	return nil
}

// ResumeQueue resumes queue and wakes the runners waiting for work.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	if err := tasks.CheckQueueName(queue); err != nil {
		return fmt.Errorf("postgres: resume queue: %w", err)
	}
	defer s.forgetPaused()
	if _, err := s.pool.Exec(ctx, `DELETE FROM paused_queues WHERE queue = $1`, queue); err != nil {
		return s.dbErr("resume queue", err)
	}
	s.notify()
	return nil
}

// PausedQueues lists the paused queues by name.
func (s *Store) PausedQueues(ctx context.Context) ([]tasks.PausedQueue, error) {
	rows, err := s.pool.Query(ctx, `SELECT queue, paused FROM paused_queues ORDER BY queue`)
	if err != nil {
		return nil, s.dbErr("paused queues", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tasks.PausedQueue, error) {
		var p tasks.PausedQueue
		err := r.Scan(&p.Queue, &p.PausedAt)
		p.PausedAt = p.PausedAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, s.dbErr("paused queues", err)
	}
	if out == nil {
		out = []tasks.PausedQueue{}
	}
	return out, nil
}

// Delete deletes a task that is not running, with its input, result,
// checkpoint, snapshot (ON DELETE CASCADE) and attempt records
// (sqlDeleteBatch); its module stays.
func (s *Store) Delete(ctx context.Context, id int64) error {
	var n int
	err := s.pool.QueryRow(ctx, sqlDeleteBatch, []int64{id}).Scan(&n)
	if err != nil {
		return s.dbErr("delete", err)
	}
	if n == 1 {
		return nil
	}
	var state string
	err = s.pool.QueryRow(ctx, `SELECT state FROM tasks WHERE id = $1`, id).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: delete task %d: %w", id, tasks.ErrNotFound)
	}
	if err != nil {
		return s.dbErr("delete", err)
	}
	return fmt.Errorf("postgres: delete task %d: it is %s; cancel it first: %w", id, state, tasks.ErrInvalidState)
}

// NameModule records name as the name of the stored module sha256 (the
// latest name given wins). ErrModuleNotFound if it is not stored.
func (s *Store) NameModule(ctx context.Context, sha256, name string) error {
	if err := tasks.CheckModuleName(name); err != nil {
		return fmt.Errorf("postgres: name module: %w", err)
	}
	var one int
	err := s.pool.QueryRow(ctx, `WITH u AS (UPDATE modules SET name = $2 WHERE sha256 = $1 AND name IS DISTINCT FROM $2)
		SELECT 1 FROM modules WHERE sha256 = $1`, sha256, name).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: name module %.12s: %w", sha256, tasks.ErrModuleNotFound)
	}
	if err != nil {
		return s.dbErr("name module", err)
	}
	return nil
}

// ModuleNames returns the names of the named modules among shas.
func (s *Store) ModuleNames(ctx context.Context, shas []string) (map[string]string, error) {
	out := map[string]string{}
	if len(shas) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT sha256, name FROM modules WHERE sha256 = ANY($1) AND name IS NOT NULL`, shas)
	if err != nil {
		return nil, s.dbErr("module names", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h, n string
		if err := rows.Scan(&h, &n); err != nil {
			return nil, s.dbErr("module names", err)
		}
		out[h] = n
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("module names", err)
	}
	return out, nil
}

// batchSQL turns the single-task update q (its id $2, RETURNING the task)
// into the update of the tasks of the array $2, locked in id order (two
// bulk actions over the same tasks wait for each other instead of
// deadlocking), returning nothing.
func batchSQL(q string) string {
	body, _, ok := strings.Cut(q, "\nRETURNING ")
	if !ok || !strings.Contains(body, "WHERE t.id = $2 ") {
		panic("postgres: batchSQL: unexpected statement")
	}
	return strings.Replace(body, "WHERE t.id = $2 ", "WHERE t.id IN (SELECT id FROM tasks WHERE id = ANY($2) ORDER BY id FOR UPDATE) ", 1)
}

// The statements of ActBatch.
var (
	sqlRetryBatch  = batchSQL(sqlRetry)
	sqlCancelBatch = batchSQL(sqlCancel)
)

// sqlDeleteBatch deletes the tasks of the array $1 that are not running,
// and their attempts (which have no foreign key since schema 6: the
// inputs, results, checkpoints and snapshots go by ON DELETE CASCADE), and
// returns how many tasks it deleted.
const sqlDeleteBatch = `WITH d AS (
	DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE id = ANY($1) ORDER BY id FOR UPDATE) AND state <> 'running'
	RETURNING id
), a AS (
	DELETE FROM attempts WHERE task_id IN (SELECT id FROM d)
)
SELECT count(*) FROM d`

// ActBatch applies a to each task of ids in one statement (one
// transaction; tasks.Store.ActBatch): as Retry, Cancel or Delete would each,
// a task that moved on (or is gone) left alone and not counted. A retry
// notifies the wake-up channel.
func (s *Store) ActBatch(ctx context.Context, a tasks.Action, ids []int64) (int, error) {
	if err := tasks.CheckBatch(a, ids); err != nil {
		return 0, fmt.Errorf("postgres: bulk: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var tag pgconn.CommandTag
	var n int
	var err error
	switch a {
	case tasks.ActionRetry:
		tag, err = s.pool.Exec(ctx, sqlRetryBatch, s.clock(), ids)
	case tasks.ActionCancel:
		tag, err = s.pool.Exec(ctx, sqlCancelBatch, s.clock(), ids)
	case tasks.ActionDelete:
		err = s.pool.QueryRow(ctx, sqlDeleteBatch, ids).Scan(&n)
	}
	if err != nil {
		return 0, s.dbErr("bulk "+string(a), err)
	}
	if a != tasks.ActionDelete {
		n = int(tag.RowsAffected())
	}
	if a == tasks.ActionRetry && n > 0 {
		s.notify()
	}
	return n, nil
}
