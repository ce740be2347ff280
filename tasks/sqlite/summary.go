package sqlite

import (
	"context"
	"fmt"
	"math"

	"github.com/stint-run/stint/tasks"
)

// CountTasks returns how many tasks each queue holds in each state, in one
// GROUP BY query. There is no index on the state of every task (see the
// schema), so it reads the whole tasks table: a few hundred milliseconds
// for a million tasks. Callers that ask often (a dashboard) cache it.
func (s *Store) CountTasks(ctx context.Context) ([]tasks.QueueCount, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT queue, state, count(*) FROM tasks GROUP BY queue, state ORDER BY queue, state`)
	if err != nil {
		return nil, s.dbErr("count tasks", err)
	}
	defer rows.Close()
	out := []tasks.QueueCount{}
	for rows.Next() {
		var c tasks.QueueCount
		if err := rows.Scan(&c.Queue, &c.State, &c.Count); err != nil {
			return nil, s.dbErr("count tasks", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("count tasks", err)
	}
	return out, nil
}

// ListNewest returns the tasks matching f by descending id, without their
// input and result. Dead and cancelled tasks are read from their index in
// id order; other states are left to the planner.
func (s *Store) ListNewest(ctx context.Context, f tasks.NewestFilter) ([]tasks.Task, error) {
	if f.State != "" && !f.State.Valid() {
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
		q += ` AND state = '` + string(f.State) + `'`
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

var _ tasks.Summarizer = (*Store)(nil)
