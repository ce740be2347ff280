package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/rowscan"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// The runners' records (tasks.RunnerInfo) and the schedules
// (tasks.Schedule).

// RecordRunner inserts or replaces the record of r.Owner, last seen now;
// a drain asked of this runner (same started) stays asked.
func (s *Store) RecordRunner(ctx context.Context, r tasks.RunnerInfo) (draining bool, err error) {
	if r.Owner == "" {
		return false, errors.New("sqlite: record runner: empty owner")
	}
	now := s.clock()
	err = s.write(ctx, "record runner", func(ctx context.Context) error {
		var d int
		err := s.wc.QueryRowContext(ctx, `INSERT INTO runners
			(owner, host, pid, version, started, last_seen, lease, workers, in_flight, draining, held)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (owner) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
				last_seen = excluded.last_seen, lease = excluded.lease, workers = excluded.workers,
				in_flight = excluded.in_flight, held = excluded.held,
				draining = CASE WHEN runners.started = excluded.started THEN max(runners.draining, excluded.draining)
					ELSE excluded.draining END,
				started = excluded.started
			RETURNING draining`,
			r.Owner, r.Host, r.PID, r.Version, micros(r.Started), micros(now), r.Lease.Microseconds(),
			r.Workers, r.InFlight, boolInt(r.Draining), r.Held).Scan(&d)
		if err != nil {
			return s.dbErr("record runner", err)
		}
		draining = d != 0
		return nil
	})
	return draining, err
}

// RequestDrain marks owner's record draining: the runner stops claiming
// at its next heartbeat.
func (s *Store) RequestDrain(ctx context.Context, owner string) error {
	return s.write(ctx, "request drain", func(ctx context.Context) error {
		res, err := s.wc.ExecContext(ctx, `UPDATE runners SET draining = 1 WHERE owner = ?`, owner)
		if err != nil {
			return s.dbErr("request drain", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: %s", tasks.ErrRunnerNotFound, owner)
		}
		return nil
	})
}

// Runners returns every recorded runner by owner.
func (s *Store) Runners(ctx context.Context) ([]tasks.RunnerInfo, error) {
	now := s.clock()
	rows, err := s.r.QueryContext(ctx, `SELECT owner, host, pid, version, started, last_seen, lease, workers, in_flight, draining, held
		FROM runners ORDER BY owner`)
	if err != nil {
		return nil, s.dbErr("runners", err)
	}
	defer func() { _ = rows.Close() }()
	out, err := rowscan.All([]tasks.RunnerInfo{}, rows, func() (tasks.RunnerInfo, error) {
		var (
			r                       tasks.RunnerInfo
			started, seen, lease, d int64
		)
		if err := rows.Scan(&r.Owner, &r.Host, &r.PID, &r.Version, &started, &seen, &lease, &r.Workers, &r.InFlight, &d, &r.Held); err != nil {
			return r, err
		}
		r.Started, r.LastSeen = time.UnixMicro(started).UTC(), time.UnixMicro(seen).UTC()
		r.Lease, r.Draining = time.Duration(lease)*time.Microsecond, d != 0
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
	return s.write(ctx, "remove runner", func(ctx context.Context) error {
		if _, err := s.wc.ExecContext(ctx, `DELETE FROM runners WHERE owner = ?`, owner); err != nil {
			return s.dbErr("remove runner", err)
		}
		return nil
	})
}

// PruneRunners deletes the records last seen before before.
func (s *Store) PruneRunners(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, "prune runners", func(ctx context.Context) error {
		res, err := s.wc.ExecContext(ctx, `DELETE FROM runners WHERE last_seen < ?`, micros(before))
		if err != nil {
			return s.dbErr("prune runners", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

const scheduleCols = `name, every, cron, spec, paused, created, last_run, last_task, overlap`

// dueCols are scheduleCols without the spec (DueSchedules, ScheduleStates).
const dueCols = `name, every, cron, '{}', paused, created, last_run, last_task, overlap`

// scanSchedule reads the scheduleCols of one row.
func scanSchedule(sc interface{ Scan(...any) error }) (tasks.Schedule, error) {
	var (
		s        tasks.Schedule
		every    int64
		spec     string
		paused   int64
		created  int64
		lastRun  sql.NullInt64
		lastTask sql.NullInt64
	)
	if err := sc.Scan(&s.Name, &every, &s.Cron, &spec, &paused, &created, &lastRun, &lastTask, &s.Overlap); err != nil {
		return s, err
	}
	if err := specrow.ReadScheduleSpec(&s, spec); err != nil {
		return s, err
	}
	s.Every, s.Paused = time.Duration(every), paused != 0
	s.Created, s.LastRun, s.LastTask = time.UnixMicro(created).UTC(), fromMicros(lastRun), lastTask.Int64
	return s, nil
}

// AddSchedule stores a new schedule.
func (s *Store) AddSchedule(ctx context.Context, sc tasks.Schedule) (tasks.Schedule, error) {
	sc, spec, err := specrow.Schedule(sc, s.clock())
	if err != nil {
		return tasks.Schedule{}, fmt.Errorf("sqlite: add schedule: %w", err)
	}
	err = s.write(ctx, "add schedule", func(ctx context.Context) error {
		if err := s.moduleStored(ctx, sc.Spec.Module); err != nil {
			return fmt.Errorf("sqlite: add schedule: %w", err)
		}
		var one int
		err := s.wc.QueryRowContext(ctx, `SELECT 1 FROM schedules WHERE name = ?`, sc.Name).Scan(&one)
		if err == nil {
			return fmt.Errorf("sqlite: add schedule: %w: %s", tasks.ErrScheduleExists, sc.Name)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return s.dbErr("add schedule", err)
		}
		if s.maxSchedules >= 0 {
			var n int
			if err := s.wc.QueryRowContext(ctx, `SELECT count(*) FROM schedules`).Scan(&n); err != nil {
				return s.dbErr("add schedule", err)
			}
			if n >= s.maxSchedules {
				return specrow.TooManySchedules("sqlite", sc.Name, n)
			}
		}
		_, err = s.wc.ExecContext(ctx, `INSERT INTO schedules (name, every, cron, spec, paused, created, overlap)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, sc.Name, int64(sc.Every), sc.Cron, string(spec), boolInt(sc.Paused), micros(sc.Created), sc.Overlap)
		if err != nil {
			return s.dbErr("add schedule", err)
		}
		return nil
	})
	if err != nil {
		return tasks.Schedule{}, err
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
	// On schedules_due, sorted below: with ORDER BY name SQLite walks the
	// table by name instead, reading each row's columns after its spec
	// through the spec's overflow pages.
	out, err := s.querySchedules(ctx, "due schedules", `SELECT `+dueCols+` FROM schedules
		WHERE paused = 0 AND next_due <= ?`, micros(now))
	slices.SortFunc(out, func(a, b tasks.Schedule) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// querySchedules returns the schedules of query q (op names it in errors).
func (s *Store) querySchedules(ctx context.Context, op, q string, args ...any) ([]tasks.Schedule, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr(op, err)
	}
	defer func() { _ = rows.Close() }()
	out, err := rowscan.All([]tasks.Schedule{}, rows, func() (tasks.Schedule, error) { return scanSchedule(rows) })
	if err != nil {
		return nil, s.dbErr(op, err)
	}
	return out, nil
}

// DeferSchedule records when schedule sc's next period starts.
func (s *Store) DeferSchedule(ctx context.Context, sc tasks.Schedule, next time.Time) error {
	return s.write(ctx, "defer schedule", func(ctx context.Context) error {
		if _, err := s.wc.ExecContext(ctx, `UPDATE schedules SET next_due = ? WHERE name = ? AND created = ?`,
			micros(next), sc.Name, micros(sc.Created)); err != nil {
			return s.dbErr("defer schedule", err)
		}
		return nil
	})
}

// GetSchedule returns one schedule.
func (s *Store) GetSchedule(ctx context.Context, name string) (tasks.Schedule, error) {
	sc, err := scanSchedule(s.r.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return tasks.Schedule{}, fmt.Errorf("sqlite: %w: %s", tasks.ErrScheduleNotFound, name)
	}
	if err != nil {
		return tasks.Schedule{}, s.dbErr("get schedule", err)
	}
	return sc, nil
}

// RemoveSchedule deletes a schedule.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	return s.write(ctx, "remove schedule", func(ctx context.Context) error {
		res, err := s.wc.ExecContext(ctx, `DELETE FROM schedules WHERE name = ?`, name)
		if err != nil {
			return s.dbErr("remove schedule", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.dbErr("remove schedule", err)
		} else if n == 0 {
			return fmt.Errorf("sqlite: %w: %s", tasks.ErrScheduleNotFound, name)
		}
		return nil
	})
}

// PauseSchedule pauses or resumes a schedule.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool) (tasks.Schedule, error) {
	now := s.clock()
	var sc tasks.Schedule
	err := s.write(ctx, "pause schedule", func(ctx context.Context) error {
		q := `UPDATE schedules SET paused = 1 WHERE name = ?`
		args := []any{name}
		if !paused {
			q = `UPDATE schedules SET paused = 0, next_due = 0, last_run = max(coalesce(last_run, 0), ?) WHERE name = ? AND paused = 1`
			args = []any{micros(now), name}
		}
		if _, err := s.wc.ExecContext(ctx, q, args...); err != nil {
			return s.dbErr("pause schedule", err)
		}
		var err error
		sc, err = scanSchedule(s.wc.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE name = ?`, name))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: %w: %s", tasks.ErrScheduleNotFound, name)
		}
		if err != nil {
			return s.dbErr("pause schedule", err)
		}
		return nil
	})
	return sc, err
}

// MarkScheduleRun records the task submitted for a period.
func (s *Store) MarkScheduleRun(ctx context.Context, name string, period time.Time, taskID int64) error {
	return s.write(ctx, "mark schedule run", func(ctx context.Context) error {
		_, err := s.wc.ExecContext(ctx, `UPDATE schedules SET last_run = ?, last_task = ?
			WHERE name = ? AND (last_run IS NULL OR last_run < ?)`, micros(period), taskID, name, micros(period))
		if err != nil {
			return s.dbErr("mark schedule run", err)
		}
		return nil
	})
}
