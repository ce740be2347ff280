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

// TestClaimReadsSeekTheirIndexes pins the plans of what a claim reads
// on the table that misled PostgreSQL: statistics taken while most tasks
// were queued and named a tenant, then a history of finished tasks at the
// head of the table, which a sequential scan that stops at the first
// match walks through at every claim. The probe that chooses a fair claim,
// alone and as the ordered claim's guard, seeks tasks_tenanted (it
// scanned the table as an EXISTS); the fair claim's reads (flows,
// candidates, running counts) scan no table either.
func TestClaimReadsSeekTheirIndexes(t *testing.T) {
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
	_, err = raw.Exec(ctx, `UPDATE tasks SET state = 'running', lease_owner = 'r0', lease_expiry = now() + interval '1 hour'
		WHERE id BETWEEN 10001 AND 10100`)
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

	for name, q := range map[string]string{"flows": postgres.SQLQueuedFlows, "running by tenant": postgres.SQLRunningByTenant} {
		p := plan(q)
		require.NotContains(t, p, "Seq Scan on tasks", "%s:\n%s", name, p)
	}
	for name, p := range map[string]string{
		"candidates":       plan(postgres.SQLFairCandidates, []string{"default", "default"}, []string{"t0", "t1"}, []int32{64, 64}, time.Now()),
		"running by queue": plan(postgres.SQLRunningByQueue, []string{"default"}),
	} {
		require.NotContains(t, p, "Seq Scan on tasks", "%s:\n%s", name, p)
	}

	// The ordered claim's guard, in the plan of the claim a runner sends.
	plans, err := s.Explain(ctx, nil, tasks.ClaimRequest{Owner: "r1", Max: 2, Lease: time.Minute})
	require.NoError(t, err)
	claim := plans[len(plans)-1]
	require.Contains(t, claim, "tasks_tenanted", claim)
	require.NotContains(t, claim, "Seq Scan on tasks", claim)
}
