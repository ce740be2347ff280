package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/pgtest"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// pgSchema returns a fresh schema on the test database (STINT_TEST_POSTGRES;
// the test is skipped without it), dropped when t ends, and the store URL
// that selects it.
func pgSchema(t testing.TB) (schema, url string) {
	t.Helper()
	dsn := os.Getenv("STINT_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set STINT_TEST_POSTGRES to a postgres:// URL to run it")
	}
	schema = pgtest.Schema(t, dsn, "stint_cli_")
	return schema, pgtest.SearchPathURL(dsn, schema)
}

// TestServePostgresRecoversItsOwnAttempts: `runner serve --store
// postgres://...` works a shared store; at start it recovers the attempt
// its previous process (same --owner) left running, at once and not
// counted, and leaves alone the attempt another live runner holds.
func TestServePostgresRecoversItsOwnAttempts(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	ctx := context.Background()
	sha := putFixture(t, s, "noop")
	submit := func() int64 {
		task, _, err := s.Submit(ctx, tasks.Spec{Module: sha, MaxAttempts: 1})
		require.NoError(t, err)
		return task.ID
	}
	claim := func(owner string) int64 {
		id := submit()
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: owner, Max: 1, Lease: time.Hour})
		require.NoError(t, err)
		require.Len(t, cl, 1)
		require.Equal(t, id, cl[0].Task.ID)
		return id
	}
	mine := claim("runner-a")   // its process "crashed": its lease runs for an hour
	theirs := claim("runner-b") // another runner, alive
	plain := submit()

	p := startServe(t, dataDir(t), "--store", url, "--owner", "runner-a")
	testutil.WaitFor(t, "both tasks to succeed", func() bool {
		a, err := s.Get(ctx, mine)
		require.NoError(t, err)
		b, err := s.Get(ctx, plain)
		require.NoError(t, err)
		return a.State == tasks.StateSucceeded && b.State == tasks.StateSucceeded
	})
	p.stopCleanly(t)

	atts, err := s.Attempts(ctx, mine)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.Equal(t, "lost", atts[0].Outcome)
	require.False(t, atts[0].Counted, "recovered at start: not counted (max_attempts 1, yet it ran)")
	other, err := s.Get(ctx, theirs)
	require.NoError(t, err)
	require.Equal(t, tasks.StateRunning, other.State, "another runner's attempt is left alone")
}
