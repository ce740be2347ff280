package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestTenantProbeSeeksItsIndex pins the plan of the probe that chooses a
// fair claim, alone and as the ordered claim's guard: a seek of
// tasks_tenanted, never a sequential scan of tasks. The table is the one
// that misled PostgreSQL: statistics taken while most tasks were queued
// and named a tenant, and a history of finished tasks at the head of the
// table, which a sequential scan that stops at the first match walks
// through at every claim.
func TestTenantProbeSeeksItsIndex(t *testing.T) {
	schema := newSchema(t)
	s := open(t, schema, postgres.Options{})
	h := putModule(t, s)
	raw := rawConn(t, schema)
	ctx := context.Background()
	_, err := raw.Exec(ctx, `INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at, tenant)
		SELECT $1, 3, 'default', now() - interval '1 hour', 'queued', now(), now(), 't' || (i % 2)
		FROM generate_series(1, 20000) i`, h)
	require.NoError(t, err)
	_, err = raw.Exec(ctx, `ANALYZE tasks`)
	require.NoError(t, err)
	_, err = raw.Exec(ctx, `UPDATE tasks SET state = 'succeeded', finished_at = now() WHERE id <= 10000`)
	require.NoError(t, err)

	plan := func(q string, args ...any) string {
		rows, err := raw.Query(ctx, "EXPLAIN (COSTS OFF) "+q, args...)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return strings.Join(lines, "\n")
	}
	probe := plan(postgres.SQLTenanted)
	require.Contains(t, probe, "tasks_tenanted", probe)
	require.NotContains(t, probe, "Seq Scan on tasks", probe)

	// The ordered claim's guard, in the plan of the claim a runner sends.
	plans, err := s.Explain(ctx, nil, tasks.ClaimRequest{Owner: "r1", Max: 2, Lease: time.Minute})
	require.NoError(t, err)
	claim := plans[len(plans)-1]
	require.Contains(t, claim, "tasks_tenanted", claim)
	require.NotContains(t, claim, "Seq Scan on tasks", claim)
}
