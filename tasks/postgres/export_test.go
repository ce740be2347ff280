package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stint-run/stint/tasks"
)

// LockKey exposes the advisory lock keys to the tests.
var LockKey = lockKey

// Migrations exposes the schema migrations to the tests.
var Migrations = migrations

// Explain runs what CompleteAndClaim(cs, req) sends (the completion, the
// reap, the claim) under EXPLAIN (ANALYZE, BUFFERS, WAL), in one
// transaction that commits: the statements take effect. It returns their
// plans. EXPLAIN plans a statement with its parameters' values (a custom
// plan), whatever plan_cache_mode says: the runner's generic plans are seen
// with auto_explain instead (docs/design/postgres.md, "Rows per task, and the
// claim's plans").
func (s *Store) Explain(ctx context.Context, cs []tasks.Completion, req tasks.ClaimRequest) ([]string, error) {
	type stmt struct {
		q    string
		args []any
	}
	var stmts []stmt
	if len(cs) > 0 {
		stmts = append(stmts, stmt{sqlComplete, s.planComplete(cs).args})
	}
	k, err := s.planClaim(ctx, req)
	if err != nil {
		return nil, err
	}
	if k != nil {
		stmts = append(stmts, stmt{sqlReap, k.reapArgs()}, stmt{k.q, k.args})
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	var out []string
	for _, st := range stmts {
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF) "+st.q, st.args...)
		if err != nil {
			return nil, err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return out, tx.Commit(ctx)
}

// SQLTenanted exposes the probe that chooses fair claims to the tests.
const SQLTenanted = sqlTenanted

// SQLQueuedFlows, SQLFairCandidates, SQLRunningByTenant and
// SQLRunningByQueue expose the fair claim's reads to the plan tests.
const (
	SQLQueuedFlows     = sqlQueuedFlows
	SQLFairCandidates  = sqlFairCandidates
	SQLRunningByTenant = sqlRunningByTenant
	SQLRunningByQueue  = sqlRunningByQueue
)

// FairLast tells whether the store's next claim goes to the fair claim
// without the probe and the ordered claim.
func (s *Store) FairLast() bool { return s.fairLast.Load() }
