package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-run/stint/tasks"
)

// CountTasks counts the tasks by queue and state in one GROUP BY query (a
// scan of the tasks table, which PostgreSQL aggregates by hashing: no
// sort), succeeded tasks included (TaskCounts.SucceededByQueue), and what
// the queued ones wait for (on the ready index), in one snapshot.
func (s *Store) CountTasks(ctx context.Context) (tasks.TaskCounts, error) {
	c := tasks.TaskCounts{Total: map[tasks.State]int64{}, ByQueue: []tasks.QueueCount{}, Waiting: []tasks.QueueWaiting{},
		SucceededByQueue: true, Now: s.clock()}
	// One snapshot for both queries.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return c, s.dbErr("count tasks", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT queue, CASE WHEN state = 'running' AND began_at IS NULL THEN 'claimed' ELSE state END AS shown,
		count(*) FROM tasks GROUP BY queue, shown ORDER BY queue, shown`)
	if err != nil {
		return c, s.dbErr("count tasks", err)
	}
	for rows.Next() {
		var qc tasks.QueueCount
		var state string
		if err := rows.Scan(&qc.Queue, &state, &qc.Count); err != nil {
			rows.Close()
			return c, s.dbErr("count tasks", err)
		}
		qc.State = tasks.State(state)
		c.ByQueue = append(c.ByQueue, qc)
		c.Total[qc.State] += qc.Count
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, s.dbErr("count tasks", err)
	}
	rows, err = tx.Query(ctx, `SELECT queue, count(*) FILTER (WHERE run_at > $1), min(run_at) FILTER (WHERE run_at <= $1)
		FROM tasks WHERE state = 'queued' GROUP BY queue ORDER BY queue`, c.Now)
	if err != nil {
		return c, s.dbErr("count tasks", err)
	}
	defer rows.Close()
	for rows.Next() {
		var w tasks.QueueWaiting
		var oldest *time.Time
		if err := rows.Scan(&w.Queue, &w.Scheduled, &oldest); err != nil {
			return c, s.dbErr("count tasks", err)
		}
		if oldest != nil {
			w.OldestReady = oldest.UTC()
		}
		c.Waiting = append(c.Waiting, w)
	}
	if err := rows.Err(); err != nil {
		return c, s.dbErr("count tasks", err)
	}
	return c, nil
}

// ListNewest returns the tasks matching f by descending id, without their
// input and result.
func (s *Store) ListNewest(ctx context.Context, f tasks.NewestFilter) ([]tasks.Task, error) {
	return s.listPage(ctx, "list newest", f.State, f.Queue, f.Limit, descending, f.BeforeID)
}
