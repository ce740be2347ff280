package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/rowscan"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// The runners' records (tasks.RunnerInfo) and the schedules
// (tasks.Schedule).

// RecordRunner inserts or replaces the record of r.Owner, last seen now.
func (s *Store) RecordRunner(ctx context.Context, r tasks.RunnerInfo) (draining bool, err error) {
	if r.Owner == "" {
		return false, errors.New("postgres: record runner: empty owner")
	}
	// A drain asked of this runner (same started) stays asked.
	err = s.pool.QueryRow(ctx, `INSERT INTO runners
		(owner, host, pid, version, started, last_seen, lease, workers, in_flight, draining, held)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (owner) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,
			last_seen = EXCLUDED.last_seen, lease = EXCLUDED.lease,
			workers = EXCLUDED.workers, in_flight = EXCLUDED.in_flight, held = EXCLUDED.held,
			draining = CASE WHEN runners.started = EXCLUDED.started THEN runners.draining OR EXCLUDED.draining
				ELSE EXCLUDED.draining END,
			started = EXCLUDED.started
		RETURNING draining`,
		r.Owner, r.Host, r.PID, r.Version, r.Started.UTC(), s.clock(), r.Lease.Microseconds(), r.Workers, r.InFlight, r.Draining, r.Held).Scan(&draining)
	if err != nil {
		return false, s.dbErr("record runner", err)
	}
	return draining, nil
}

// RequestDrain marks owner's record draining: the runner stops claiming
// at its next heartbeat.
func (s *Store) RequestDrain(ctx context.Context, owner string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE runners SET draining = true WHERE owner = $1`, owner)
	if err != nil {
		return s.dbErr("request drain", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", tasks.ErrRunnerNotFound, owner)
	}
	return nil
}

// Runners returns every recorded runner by owner.
func (s *Store) Runners(ctx context.Context) ([]tasks.RunnerInfo, error) {
	now := s.clock()
	rows, err := s.pool.Query(ctx, `SELECT owner, host, pid, version, started, last_seen, lease, workers, in_flight, draining, held
		FROM runners ORDER BY owner`)
	if err != nil {
		return nil, s.dbErr("runners", err)
	}
	defer rows.Close()
	out, err := rowscan.All([]tasks.RunnerInfo{}, rows, func() (tasks.RunnerInfo, error) {
		var (
			r     tasks.RunnerInfo
			lease int64
		)
		if err := rows.Scan(&r.Owner, &r.Host, &r.PID, &r.Version, &r.Started, &r.LastSeen, &lease,
			&r.Workers, &r.InFlight, &r.Draining, &r.Held); err != nil {
			return r, err
		}
		r.Started, r.LastSeen, r.Lease = r.Started.UTC(), r.LastSeen.UTC(), time.Duration(lease)*time.Microsecond
		r.Silent = now.After(r.LastSeen.Add(r.Lease))
		return r, nil
	})
	if err != nil {
		return nil, s.dbErr("runners", err)
	}
	return out, nil
}

// RemoveRunner deletes the record of owner.
func (s *Store) RemoveRunner(ctx context.Context, owner string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM runners WHERE owner = $1`, owner); err != nil {
		return s.dbErr("remove runner", err)
	}
	return nil
}

// PruneRunners deletes the records last seen before before.
func (s *Store) PruneRunners(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM runners WHERE last_seen < $1`, before.UTC())
	if err != nil {
		return 0, s.dbErr("prune runners", err)
	}
	return int(tag.RowsAffected()), nil
}

const scheduleCols = `name, every, cron, spec, paused, created, last_run, last_task, overlap`

// dueCols are scheduleCols without the spec (DueSchedules, ScheduleStates).
const dueCols = `name, every, cron, '{}'::text, paused, created, last_run, last_task, overlap`

// scanSchedule reads the scheduleCols of one row.
func scanSchedule(row pgx.Row) (tasks.Schedule, error) {
	var (
		s        tasks.Schedule
		every    int64
		spec     string
		lastRun  *time.Time
		lastTask *int64
	)
	if err := row.Scan(&s.Name, &every, &s.Cron, &spec, &s.Paused, &s.Created, &lastRun, &lastTask, &s.Overlap); err != nil {
		return s, err
	}
	if err := specrow.ReadScheduleSpec(&s, spec); err != nil {
		return s, err
	}
	s.Every, s.Created = time.Duration(every), s.Created.UTC()
	if lastRun != nil {
		s.LastRun = lastRun.UTC()
	}
	if lastTask != nil {
		s.LastTask = *lastTask
	}
	return s, nil
}

// AddSchedule stores a new schedule.
func (s *Store) AddSchedule(ctx context.Context, sc tasks.Schedule) (tasks.Schedule, error) {
	sc, spec, err := specrow.Schedule(sc, s.clock())
	if err != nil {
		return tasks.Schedule{}, fmt.Errorf("postgres: add schedule: %w", err)
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM modules WHERE sha256 = $1`, sc.Spec.Module).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return tasks.Schedule{}, fmt.Errorf("postgres: add schedule: %w: %s (store it first)", tasks.ErrModuleNotFound, sc.Spec.Module)
	}
	if err != nil {
		return tasks.Schedule{}, s.dbErr("add schedule", err)
	}
	// One statement: the count and the insert see the same snapshot.
	tag, err := s.pool.Exec(ctx, `INSERT INTO schedules (name, every, cron, spec, paused, created, overlap)
		SELECT $1, $2, $3, $4, $5, $6, $7 WHERE $8 < 0 OR (SELECT count(*) FROM schedules) < $8`,
		sc.Name, int64(sc.Every), sc.Cron, string(spec), sc.Paused, sc.Created, sc.Overlap, s.opts.MaxSchedules)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return tasks.Schedule{}, fmt.Errorf("postgres: add schedule: %w: %s", tasks.ErrScheduleExists, sc.Name)
	}
	if err != nil {
		return tasks.Schedule{}, s.dbErr("add schedule", err)
	}
	if tag.RowsAffected() == 0 {
		// Refused by the cap, or a schedule of that name is there (its
		// spec not read: it may hold megabytes of input).
		var one int
		if err := s.pool.QueryRow(ctx, `SELECT 1 FROM schedules WHERE name = $1`, sc.Name).Scan(&one); err == nil {
			return tasks.Schedule{}, fmt.Errorf("postgres: add schedule: %w: %s", tasks.ErrScheduleExists, sc.Name)
		}
		return tasks.Schedule{}, specrow.TooManySchedules("postgres", sc.Name, s.opts.MaxSchedules)
	}
	return sc, nil
}

// Schedules returns every schedule by name.
func (s *Store) Schedules(ctx context.Context) ([]tasks.Schedule, error) {
	return s.querySchedules(ctx, "schedules", `SELECT `+scheduleCols+` FROM schedules ORDER BY name`)
}

// ScheduleStates returns every schedule by name, without its spec.
func (s *Store) ScheduleStates(ctx context.Context) ([]tasks.Schedule, error) {
	return s.querySchedules(ctx, "schedule states", `SELECT `+dueCols+` FROM schedules ORDER BY name`)
}

// DueSchedules returns the unpaused schedules that may be due at now,
// without their specs.
func (s *Store) DueSchedules(ctx context.Context, now time.Time) ([]tasks.Schedule, error) {
	return s.querySchedules(ctx, "due schedules", `SELECT `+dueCols+` FROM schedules
		WHERE NOT paused AND (next_due IS NULL OR next_due <= $1) ORDER BY name`, now.UTC())
}

// querySchedules returns the schedules of query q (op names it in errors).
func (s *Store) querySchedules(ctx context.Context, op, q string, args ...any) ([]tasks.Schedule, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr(op, err)
	}
	defer rows.Close()
	out, err := rowscan.All([]tasks.Schedule{}, rows, func() (tasks.Schedule, error) { return scanSchedule(rows) })
	if err != nil {
		return nil, s.dbErr(op, err)
	}
	return out, nil
}

// DeferSchedule records when schedule sc's next period starts.
func (s *Store) DeferSchedule(ctx context.Context, sc tasks.Schedule, next time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE schedules SET next_due = $3 WHERE name = $1 AND created = $2`,
		sc.Name, sc.Created, next.UTC()); err != nil {
		return s.dbErr("defer schedule", err)
	}
	return nil
}

// GetSchedule returns one schedule.
func (s *Store) GetSchedule(ctx context.Context, name string) (tasks.Schedule, error) {
	sc, err := scanSchedule(s.pool.QueryRow(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return tasks.Schedule{}, fmt.Errorf("postgres: %w: %s", tasks.ErrScheduleNotFound, name)
	}
	if err != nil {
		return tasks.Schedule{}, s.dbErr("get schedule", err)
	}
	return sc, nil
}

// RemoveSchedule deletes a schedule.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM schedules WHERE name = $1`, name)
	if err != nil {
		return s.dbErr("remove schedule", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %w: %s", tasks.ErrScheduleNotFound, name)
	}
	return nil
}

// PauseSchedule pauses or resumes a schedule.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool) (tasks.Schedule, error) {
	var err error
	if paused {
		_, err = s.pool.Exec(ctx, `UPDATE schedules SET paused = true WHERE name = $1`, name)
	} else {
		_, err = s.pool.Exec(ctx, `UPDATE schedules SET paused = false, next_due = NULL, last_run = greatest(last_run, $2)
			WHERE name = $1 AND paused`, name, s.clock())
	}
	if err != nil {
		return tasks.Schedule{}, s.dbErr("pause schedule", err)
	}
	return s.GetSchedule(ctx, name)
}

// MarkScheduleRun records the task submitted for a period.
func (s *Store) MarkScheduleRun(ctx context.Context, name string, period time.Time, taskID int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE schedules SET last_run = $2, last_task = $3
		WHERE name = $1 AND (last_run IS NULL OR last_run < $2)`, name, period.UTC(), taskID)
	if err != nil {
		return s.dbErr("mark schedule run", err)
	}
	return nil
}
