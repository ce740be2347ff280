package sqlite

import (
	"database/sql"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/rowscan"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// micros is t in stored form: microseconds since the Unix epoch.
func micros(t time.Time) int64 { return t.UnixMicro() }

// nullMicros is t in stored form, NULL for the zero time.
func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// fromMicros reads a stored time back (in UTC); NULL is the zero time.
func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

// nullString stores "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// taskRow receives the taskCols (or listCols) of one row.
type taskRow struct {
	t tasks.Task
	specrow.Columns
	export, onRetry         sql.NullString
	idem, owner, lastErr    sql.NullString
	state                   string
	runAt, created, updated int64
	leaseExpiry, finished   sql.NullInt64
	startedAt, beganAt      sql.NullInt64
	cancel                  int64
}

// dest lists the scan destinations in taskCols order.
func (r *taskRow) dest() []any {
	t := &r.t
	return []any{&t.ID, &t.Module, &t.Input, &r.Args, &r.Env, &r.Mounts, &r.Limits, &t.MaxAttempts,
		&t.Priority, &t.Queue, &r.idem, &r.runAt, &r.state, &t.Attempt, &t.Failures, &r.owner,
		&r.leaseExpiry, &r.startedAt, &r.beganAt, &r.cancel, &t.CheckpointSize, &t.ProgressDone, &t.ProgressTotal, &t.Result,
		&r.lastErr, &r.created, &r.updated, &r.finished, &t.InputSize, &t.ResultSize, &r.Labels, &r.export, &r.onRetry,
		&t.Snapshots, &t.LostStreak, &t.Tenant, &r.Snapshot}
}

// task finishes decoding the scanned row.
func (r *taskRow) task() (tasks.Task, error) {
	t := r.t
	t.State = tasks.State(r.state)
	t.IdempotencyKey = r.idem.String
	t.Export = r.export.String
	t.OnRetry = r.onRetry.String
	t.LeaseOwner = r.owner.String
	t.LastError = r.lastErr.String
	t.CancelRequested = r.cancel != 0
	t.RunAt = time.UnixMicro(r.runAt).UTC()
	t.CreatedAt = time.UnixMicro(r.created).UTC()
	t.UpdatedAt = time.UnixMicro(r.updated).UTC()
	t.LeaseExpiry = fromMicros(r.leaseExpiry)
	t.StartedAt = fromMicros(r.startedAt)
	t.BeganAt = fromMicros(r.beganAt)
	t.FinishedAt = fromMicros(r.finished)
	if err := r.Decode("sqlite", &t); err != nil {
		return tasks.Task{}, err
	}
	return t, nil
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanTask scans the taskCols of one row.
func scanTask(sc scanner) (tasks.Task, error) {
	var r taskRow
	if err := sc.Scan(r.dest()...); err != nil {
		return tasks.Task{}, err
	}
	return r.task()
}

// scanTasks scans every row of rows and closes it.
func scanTasks(rows *sql.Rows) ([]tasks.Task, error) {
	defer rows.Close()
	return rowscan.All(nil, rows, func() (tasks.Task, error) { return scanTask(rows) })
}
