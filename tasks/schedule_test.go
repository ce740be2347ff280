package tasks_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

func TestScheduleDueAndNext(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	created := at("2030-01-02T03:04:05Z")
	every := tasks.Schedule{Name: "e", Every: 10 * time.Minute, Created: created}
	_, ok := every.Due(created.Add(time.Minute))
	require.False(t, ok, "no period began since creation")
	require.Equal(t, at("2030-01-02T03:10:00Z"), every.Next(created))
	p, ok := every.Due(at("2030-01-02T03:10:00Z"))
	require.True(t, ok)
	require.Equal(t, at("2030-01-02T03:10:00Z"), p)
	// Missed periods: only the latest is due.
	every.LastRun = p
	p, ok = every.Due(at("2030-01-02T05:59:59Z"))
	require.True(t, ok)
	require.Equal(t, at("2030-01-02T05:50:00Z"), p)
	every.LastRun = p
	_, ok = every.Due(at("2030-01-02T05:59:59Z"))
	require.False(t, ok, "its task was submitted")
	every.Paused = true
	_, ok = every.Due(at("2030-01-02T07:00:00Z"))
	require.False(t, ok, "paused")
	require.True(t, every.Next(created).IsZero())

	hourly := tasks.Schedule{Name: "h", Cron: "0 * * * *", Created: created}
	require.Equal(t, at("2030-01-02T04:00:00Z"), hourly.Next(created))
	_, ok = hourly.Due(at("2030-01-02T03:59:59Z"))
	require.False(t, ok)
	p, ok = hourly.Due(at("2030-01-03T10:30:00Z"))
	require.True(t, ok)
	require.Equal(t, at("2030-01-03T10:00:00Z"), p, "a day missed: the latest hour only")
	hourly.LastRun = p
	_, ok = hourly.Due(at("2030-01-03T10:59:00Z"))
	require.False(t, ok)

	weekday := tasks.Schedule{Name: "w", Cron: "30 9 * * 1-5", Created: created} // 2030-01-02 is a Wednesday
	require.Equal(t, at("2030-01-02T09:30:00Z"), weekday.Next(created))
	require.Equal(t, at("2030-01-07T09:30:00Z"), weekday.Next(at("2030-01-04T10:00:00Z")), "Friday after: Monday")
	daily := tasks.Schedule{Name: "d", Cron: "@daily", Created: created}
	require.Equal(t, at("2030-01-03T00:00:00Z"), daily.Next(created))

	require.Equal(t, "stint-schedule:h:1893553200", tasks.ScheduleKey("h", at("2030-01-02T03:00:00Z")))
	spec := hourly.TaskSpec(p)
	require.Equal(t, "h", spec.Labels[tasks.ScheduleLabel])
	require.Equal(t, tasks.ScheduleKey("h", p), spec.IdempotencyKey)
}

func TestParseCron(t *testing.T) {
	for _, ok := range []string{"0 * * * *", "*/5 * * * *", "0 0 1 1 *", "@hourly", "@every 1h", "15 3 * * MON-FRI"} {
		require.NoError(t, tasks.ParseCron(ok), ok)
	}
	for _, bad := range []string{"", "* * * *", "0 0 * * * *", "60 * * * *", "* 24 * * *", "nonsense",
		"TZ=Europe/Paris 0 * * * *", "CRON_TZ=UTC 0 * * * *"} {
		err := tasks.ParseCron(bad)
		require.ErrorIs(t, err, tasks.ErrInvalidSchedule, "%q", bad)
	}
}
