package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"

	"github.com/stint-run/stint/tasks"
)

// CountTasks counts the tasks by state and queue, in one read transaction.
// Queued (with what they wait for: TaskCounts.Waiting), running, dead and
// cancelled tasks are counted from their partial
// indexes; succeeded tasks, most of the table and in no index, from the
// count by queue that triggers keep (table queue_succeeded, schema version
// 6): grouping them by queue sorted the whole table, about a second per
// 200,000 tasks.
func (s *Store) CountTasks(ctx context.Context) (tasks.TaskCounts, error) {
	c := tasks.TaskCounts{Total: map[tasks.State]int64{}, ByQueue: []tasks.QueueCount{}, Waiting: []tasks.QueueWaiting{}}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, s.dbErr("count tasks", err)
	}
	defer func() { _ = tx.Rollback() }()
	c.Now = s.now().UTC()
	byQueue := map[string]map[tasks.State]int64{}
	// The queued tasks, and what they wait for, in one pass over their index.
	rows, err := tx.QueryContext(ctx, `SELECT queue, count(*), coalesce(sum(run_at > ?1), 0),
		min(CASE WHEN run_at <= ?1 THEN run_at END)
		FROM tasks INDEXED BY tasks_ready_queue WHERE state = 'queued' GROUP BY queue ORDER BY queue`, micros(c.Now))
	if err != nil {
		return c, s.dbErr("count tasks", err)
	}
	for rows.Next() {
		var (
			w      tasks.QueueWaiting
			n      int64
			oldest sql.NullInt64
		)
		if err := rows.Scan(&w.Queue, &n, &w.Scheduled, &oldest); err != nil {
			_ = rows.Close()
			return c, s.dbErr("count tasks", err)
		}
		w.OldestReady = fromMicros(oldest)
		c.Waiting = append(c.Waiting, w)
		byQueue[w.Queue] = map[tasks.State]int64{tasks.StateQueued: n}
		c.Total[tasks.StateQueued] += n
	}
	if err := rows.Close(); err != nil {
		return c, s.dbErr("count tasks", err)
	}
	for _, q := range []string{
		`SELECT queue, CASE WHEN began_at IS NULL THEN 'claimed' ELSE 'running' END AS shown, count(*)
			FROM tasks INDEXED BY tasks_leases WHERE state = 'running' GROUP BY queue, shown`,
		`SELECT queue, state, count(*) FROM tasks INDEXED BY tasks_failed WHERE state IN ('dead', 'cancelled') GROUP BY queue, state`,
	} {
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return c, s.dbErr("count tasks", err)
		}
		for rows.Next() {
			var qc tasks.QueueCount
			if err := rows.Scan(&qc.Queue, &qc.State, &qc.Count); err != nil {
				_ = rows.Close()
				return c, s.dbErr("count tasks", err)
			}
			if byQueue[qc.Queue] == nil {
				byQueue[qc.Queue] = map[tasks.State]int64{}
			}
			byQueue[qc.Queue][qc.State] += qc.Count
			c.Total[qc.State] += qc.Count
		}
		if err := rows.Close(); err != nil {
			return c, s.dbErr("count tasks", err)
		}
	}
	rows, err = tx.QueryContext(ctx, `SELECT queue, n FROM queue_succeeded WHERE n > 0`)
	if err != nil {
		return c, s.dbErr("count tasks", err)
	}
	for rows.Next() {
		var q string
		var n int64
		if err := rows.Scan(&q, &n); err != nil {
			_ = rows.Close()
			return c, s.dbErr("count tasks", err)
		}
		if byQueue[q] == nil {
			byQueue[q] = map[tasks.State]int64{}
		}
		byQueue[q][tasks.StateSucceeded] = n
		c.Total[tasks.StateSucceeded] += n
	}
	if err := rows.Close(); err != nil {
		return c, s.dbErr("count tasks", err)
	}
	c.SucceededByQueue = true
	queues := make([]string, 0, len(byQueue))
	for q := range byQueue {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, q := range queues {
		for _, st := range []tasks.State{tasks.StateQueued, tasks.StateClaimed, tasks.StateRunning, tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled} {
			if n := byQueue[q][st]; n > 0 {
				c.ByQueue = append(c.ByQueue, tasks.QueueCount{Queue: q, State: st, Count: n})
			}
		}
	}
	return c, nil
}

// ListNewest returns the tasks matching f by descending id, without their
// input and result. Dead and cancelled tasks are read from their index in
// id order; other states are left to the planner.
func (s *Store) ListNewest(ctx context.Context, f tasks.NewestFilter) ([]tasks.Task, error) {
	if f.State != "" && !f.State.Valid() && f.State != tasks.StateClaimed {
		return nil, fmt.Errorf("sqlite: list newest: unknown state %q", f.State)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	before := f.BeforeID
	if before <= 0 {
		before = math.MaxInt64
	}
	q := `SELECT ` + listCols + ` FROM tasks `
	if f.State == tasks.StateDead || f.State == tasks.StateCancelled {
		q += `INDEXED BY tasks_failed `
	}
	q += `WHERE id < ?`
	args := []any{before}
	if f.State != "" {
		// A known constant (checked above), written into the query so
		// that SQLite can use the partial index for that state.
		q += ` AND ` + stateCond(f.State)
		if f.State == tasks.StateDead || f.State == tasks.StateCancelled {
			q += ` AND state IN ('dead', 'cancelled')`
		}
	}
	if f.Queue != "" {
		q += ` AND queue = ?`
		args = append(args, f.Queue)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr("list newest", err)
	}
	out, err := scanTasks(rows)
	if err != nil {
		return nil, s.dbErr("list newest", err)
	}
	if out == nil {
		out = []tasks.Task{}
	}
	return out, nil
}
