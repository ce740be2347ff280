package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/rowscan"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// The columns scanned into a tasks.Task, in taskRow.dest order, are
// taskColsA, the input, taskColsB, the result, taskColsC; every name is
// qualified with the alias t.
const (
	taskColsA = `t.id, t.module, `
	taskColsB = `, t.args, t.env, t.mounts, t.limits, t.max_attempts, t.priority, t.queue,
	t.idempotency_key, t.run_at, t.state, t.attempt, t.failures, t.lease_owner, t.lease_expiry, t.started_at, t.began_at, t.cancel_requested,
	t.checkpoint_size, t.progress_done, t.progress_total, `
	taskColsC = `, t.last_error, t.created_at, t.updated_at, t.finished_at, t.input_size, t.result_size, t.labels, t.export, t.on_retry,
	t.snapshots, t.lost_streak, t.tenant, ` + snapshotCol
)

// snapshotCol reads what describes a task's snapshot, without its blob,
// as the JSON array tasks.DecodeSnapshotInfo decodes (NULL: none). Only a task that
// stored one and has not ended looks it up (a task's snapshot is dropped
// when it ends).
const snapshotCol = `CASE WHEN t.snapshots > 0 AND t.state IN ('queued', 'running') THEN
	(SELECT json_build_array(s.size, round(extract(epoch FROM s.taken_at) * 1000000)::bigint, s.owner, s.attempt,
		s.work, s.run_time, s.suspended::integer) FROM snapshots s WHERE s.task_id = t.id) END`

// taskCols read a task whole, its input and result from their tables
// (looked up only when not empty).
const taskCols = taskColsA +
	`CASE WHEN t.input_size > 0 THEN (SELECT i.blob FROM inputs i WHERE i.task_id = t.id) END` + taskColsB +
	`CASE WHEN t.result_size > 0 THEN (SELECT r.blob FROM results r WHERE r.task_id = t.id) END` + taskColsC

// listCols read a task without its input and result (List, and the
// RETURNING of an insert, which cannot see the input it writes next to
// the task).
const listCols = taskColsA + `NULL::bytea` + taskColsB + `NULL::bytea` + taskColsC

// nullString stores "" as NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// utc is t in UTC; the zero time for nil.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// taskRow receives the taskCols (or listCols) of one row.
type taskRow struct {
	t tasks.Task
	specrow.Columns
	idem, owner, lastErr    *string
	export, onRetry         *string
	state                   string
	runAt, created, updated time.Time
	leaseExpiry, finished   *time.Time
	startedAt, beganAt      *time.Time
}

// dest lists the scan destinations in taskCols order.
func (r *taskRow) dest() []any {
	t := &r.t
	return []any{&t.ID, &t.Module, &t.Input, &r.Args, &r.Env, &r.Mounts, &r.Limits, &t.MaxAttempts,
		&t.Priority, &t.Queue, &r.idem, &r.runAt, &r.state, &t.Attempt, &t.Failures, &r.owner,
		&r.leaseExpiry, &r.startedAt, &r.beganAt, &t.CancelRequested, &t.CheckpointSize, &t.ProgressDone, &t.ProgressTotal, &t.Result,
		&r.lastErr, &r.created, &r.updated, &r.finished, &t.InputSize, &t.ResultSize, &r.Labels, &r.export, &r.onRetry,
		&t.Snapshots, &t.LostStreak, &t.Tenant, &r.Snapshot}
}

// task finishes decoding the scanned row.
func (r *taskRow) task() (tasks.Task, error) {
	t := r.t
	t.State = tasks.State(r.state)
	if r.idem != nil {
		t.IdempotencyKey = *r.idem
	}
	if r.export != nil {
		t.Export = *r.export
	}
	if r.onRetry != nil {
		t.OnRetry = *r.onRetry
	}
	if r.owner != nil {
		t.LeaseOwner = *r.owner
	}
	if r.lastErr != nil {
		t.LastError = *r.lastErr
	}
	t.RunAt = r.runAt.UTC()
	t.CreatedAt = r.created.UTC()
	t.UpdatedAt = r.updated.UTC()
	t.LeaseExpiry = utc(r.leaseExpiry)
	t.StartedAt = utc(r.startedAt)
	t.BeganAt = utc(r.beganAt)
	t.FinishedAt = utc(r.finished)
	if err := r.Decode("postgres", &t); err != nil {
		return tasks.Task{}, err
	}
	return t, nil
}

// scanTask scans the taskCols of one row, then extra destinations.
func scanTask(row pgx.Row, extra ...any) (tasks.Task, error) {
	var r taskRow
	if err := row.Scan(append(r.dest(), extra...)...); err != nil {
		return tasks.Task{}, err
	}
	return r.task()
}

// scanTasks scans every row of rows and closes it.
func scanTasks(rows pgx.Rows) ([]tasks.Task, error) {
	defer rows.Close()
	return rowscan.All(nil, rows, func() (tasks.Task, error) { return scanTask(rows) })
}
