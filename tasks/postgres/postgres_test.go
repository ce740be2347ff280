package postgres_test

import (
	"testing"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
	"github.com/stint-run/stint/tasks/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	dsn(t)
	storetest.Run(t, func(t *testing.T, now func() time.Time) tasks.Store {
		return open(t, newSchema(t), postgres.Options{Now: now})
	})
}

// TestScheduleCap: a store opened with MaxSchedules holds no more
// (storetest.ScheduleCap).
func TestScheduleCap(t *testing.T) {
	t.Parallel()
	dsn(t)
	storetest.ScheduleCap(t, open(t, newSchema(t), postgres.Options{MaxSchedules: 3}), 3)
}
