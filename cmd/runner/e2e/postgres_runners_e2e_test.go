package e2e

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestPostgresRunnersAndSchedule: two runner serve on one PostgreSQL store
// are both listed by runner runners (the API's and the dashboard's list
// too: the same store call); a schedule every second gets one task per
// period between them; one killed with SIGKILL shows silent once its
// lease (1 s) has passed, while the other stays alive.
func TestPostgresRunnersAndSchedule(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	ctx := context.Background()
	sha := putFixture(t, s, "noop")
	_, err := s.AddSchedule(ctx, tasks.Schedule{Name: "tick", Every: tasks.MinEvery, Spec: tasks.Spec{Module: sha}})
	require.NoError(t, err)

	a := startRunner(t, nil, serveArgs(dataDir(t), "--store", url, "--owner", "pg-a", "--lease", "1s")...)
	b := startRunner(t, nil, serveArgs(dataDir(t), "--store", url, "--owner", "pg-b", "--lease", "1s")...)
	a.waitLine(t, "runner ready")
	b.waitLine(t, "runner ready")

	type listed struct {
		Runners []struct {
			Owner  string `json:"owner"`
			Status string `json:"status"`
		} `json:"runners"`
	}
	runners := func() map[string]string {
		l := runJSON[listed](t, 0, "", "runners", "--json", "--store", url)
		m := map[string]string{}
		for _, r := range l.Runners {
			m[r.Owner] = r.Status
		}
		return m
	}
	require.Equal(t, map[string]string{"pg-a": "alive", "pg-b": "alive"}, runners())

	testutil.WaitFor(t, "three scheduled tasks to succeed", func() bool {
		ts, err := s.List(ctx, tasks.ListFilter{State: tasks.StateSucceeded})
		require.NoError(t, err)
		return len(ts) >= 3
	})

	b.kill(t)
	testutil.WaitFor(t, "the killed runner to show silent", func() bool {
		return runners()["pg-b"] == "silent"
	})
	require.Equal(t, "alive", runners()["pg-a"])

	a.stopCleanly(t)
	require.Equal(t, map[string]string{"pg-b": "silent"}, runners(), "the one stopped cleanly removed its record")

	all, err := s.List(ctx, tasks.ListFilter{Limit: 1000})
	require.NoError(t, err)
	var keys []string
	for _, task := range all {
		keys = append(keys, task.IdempotencyKey)
	}
	slices.Sort(keys)
	require.Equal(t, len(keys), len(slices.Compact(slices.Clone(keys))), "one task per period: %v", keys)
}
