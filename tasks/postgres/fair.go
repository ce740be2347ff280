package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/stint-run/stint/tasks"
)

// Fair claims (tasks/fair.go): while some queued task names a tenant, the
// ordered claim's guard (noTenants) makes it take nothing, and claimRun
// runs claimFair, one transaction: the (queue, tenant) flows with tasks
// queued (a loose index scan of tasks_ready_queue, one seek a flow), the
// clocks of their queues locked (fair claims of one queue take turns;
// ordered claims never wait for them), the passes and weights, each
// flow's first ready tasks locked FOR UPDATE SKIP LOCKED, and then
// tasks.PlanFairClaim's choice claimed and the passes and clocks written
// back. Its cost grows with the number of flows, not with the backlog.
const (
	sqlQueuedFlows = `WITH RECURSIVE f AS (
	(SELECT queue, tenant FROM tasks WHERE state = 'queued' ORDER BY queue, tenant LIMIT 1)
	UNION ALL
	SELECT n.queue, n.tenant FROM f CROSS JOIN LATERAL (SELECT queue, tenant FROM tasks
		WHERE state = 'queued' AND (queue, tenant) > (f.queue, f.tenant) ORDER BY queue, tenant LIMIT 1) n
)
SELECT queue, tenant FROM f`
	sqlLockClocks = `WITH n AS (
	INSERT INTO fair_clocks (queue, clock) SELECT unnest($1::text[]), 0 ON CONFLICT (queue) DO NOTHING
)
SELECT queue, clock FROM fair_clocks WHERE queue = ANY($1::text[]) ORDER BY queue FOR UPDATE`
	sqlFairPasses  = `SELECT queue, tenant, pass FROM fair_passes WHERE queue = ANY($1::text[])`
	sqlFairWeights = `SELECT tenant, weight FROM tenant_weights`
	// Each flow's ($1 queues, $2 tenants, $3 maxima) first ready tasks at
	// $4 now.
	sqlFairCandidates = `SELECT c.id, f.q, f.t, c.priority, c.run_at
	FROM unnest($1::text[], $2::text[], $3::integer[]) AS f(q, t, n)
	CROSS JOIN LATERAL (SELECT id, priority, run_at FROM tasks
		WHERE state = 'queued' AND queue = f.q AND tenant = f.t AND run_at <= $4 ` + readyOrder + `
		LIMIT f.n FOR UPDATE SKIP LOCKED) c`
	// sqlClaimIDs claims the tasks $4 (locked by sqlFairCandidates).
	sqlClaimIDs  = claimSet + `SELECT ctid FROM tasks WHERE id = ANY($4::bigint[])` + claimReturning
	sqlSetPasses = `INSERT INTO fair_passes (queue, tenant, pass) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
	ON CONFLICT (queue, tenant) DO UPDATE SET pass = excluded.pass`
	sqlSetClocks = `UPDATE fair_clocks c SET clock = x.clock FROM unnest($1::text[], $2::bigint[]) AS x(queue, clock)
	WHERE c.queue = x.queue`
)

// claimFair claims fairly what k asks, unless the ordered claim already
// took tasks (a tenant's tasks claimed between the probe and its guard).
func (s *Store) claimFair(ctx context.Context, k *claimPlan, out []tasks.Claimed) ([]tasks.Claimed, error) {
	if len(out) > 0 {
		return out, nil
	}
	err := retry(func() error {
		out = nil
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			out, k.order, err = s.claimFairIn(ctx, tx, k)
			return err
		})
	})
	return out, err
}

// claimFairIn is claimFair's transaction.
func (s *Store) claimFairIn(ctx context.Context, tx pgx.Tx, k *claimPlan) ([]tasks.Claimed, []int64, error) {
	rows, err := tx.Query(ctx, sqlQueuedFlows)
	if err != nil {
		return nil, nil, err
	}
	flows, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tasks.FairKey])
	if err != nil {
		return nil, nil, err
	}
	var queues, fq, ft []string
	var fn []int
	for _, f := range flows {
		n := k.req.Max
		if k.req.Queues != nil {
			n = min(n, k.req.Queues[f.Queue])
		}
		if n <= 0 || slices.Contains(k.paused, f.Queue) {
			continue
		}
		if len(queues) == 0 || queues[len(queues)-1] != f.Queue {
			queues = append(queues, f.Queue)
		}
		fq, ft, fn = append(fq, f.Queue), append(ft, f.Tenant), append(fn, n)
	}
	if len(fq) == 0 {
		return nil, nil, nil
	}
	st := tasks.FairState{Passes: map[tasks.FairKey]int64{}, Weights: map[string]int{}, Clocks: map[string]int64{}}
	if err := scanEach(ctx, tx, sqlLockClocks, func(r pgx.Rows) error {
		var q string
		var c int64
		err := r.Scan(&q, &c)
		st.Clocks[q] = c
		return err
	}, queues); err != nil {
		return nil, nil, err
	}
	if err := scanEach(ctx, tx, sqlFairPasses, func(r pgx.Rows) error {
		var key tasks.FairKey
		var p int64
		err := r.Scan(&key.Queue, &key.Tenant, &p)
		st.Passes[key] = p
		return err
	}, queues); err != nil {
		return nil, nil, err
	}
	if err := scanEach(ctx, tx, sqlFairWeights, func(r pgx.Rows) error {
		var t string
		var w int
		err := r.Scan(&t, &w)
		st.Weights[t] = w
		return err
	}); err != nil {
		return nil, nil, err
	}
	var cands []tasks.FairCandidate
	if err := scanEach(ctx, tx, sqlFairCandidates, func(r pgx.Rows) error {
		var c tasks.FairCandidate
		err := r.Scan(&c.ID, &c.Queue, &c.Tenant, &c.Priority, &c.RunAt)
		cands = append(cands, c)
		return err
	}, fq, ft, fn, k.now); err != nil {
		return nil, nil, err
	}
	// Candidates in each flow's claim order, flows in turn.
	slices.SortStableFunc(cands, func(a, b tasks.FairCandidate) int {
		return flowIndex(fq, ft, a) - flowIndex(fq, ft, b)
	})
	plan := tasks.PlanFairClaim(cands, st, k.req.Queues, k.req.Max)
	if len(plan.IDs) == 0 {
		return nil, nil, nil
	}
	rows, err = tx.Query(ctx, sqlClaimIDs, k.args[0], k.args[1], k.args[2], plan.IDs)
	if err != nil {
		return nil, nil, err
	}
	out, err := k.scanClaimed(rows)
	if err != nil {
		return nil, nil, err
	}
	var pq, pt []string
	var pp []int64
	for key, p := range plan.Passes {
		pq, pt, pp = append(pq, key.Queue), append(pt, key.Tenant), append(pp, p)
	}
	if _, err := tx.Exec(ctx, sqlSetPasses, pq, pt, pp); err != nil {
		return nil, nil, err
	}
	var cq []string
	var cc []int64
	for q, c := range plan.Clocks {
		cq, cc = append(cq, q), append(cc, c)
	}
	if _, err := tx.Exec(ctx, sqlSetClocks, cq, cc); err != nil {
		return nil, nil, err
	}
	return out, plan.IDs, nil
}

// flowIndex is the position of c's flow in the parallel lists q, t.
func flowIndex(q, t []string, c tasks.FairCandidate) int {
	for i := range q {
		if q[i] == c.Queue && t[i] == c.Tenant {
			return i
		}
	}
	return len(q)
}

// scanEach runs query q in tx and calls scan for each row.
func scanEach(ctx context.Context, tx pgx.Tx, q string, scan func(pgx.Rows) error, args ...any) error {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// SetTenantWeight sets tenant's weight in fair claims (tasks.TenantStore):
// 1 to tasks.MaxTenantWeight, 1 being the default.
func (s *Store) SetTenantWeight(ctx context.Context, tenant string, weight int) error {
	if err := tasks.CheckTenantName(tenant); err != nil {
		return fmt.Errorf("postgres: set tenant weight: %w", err)
	}
	if err := tasks.CheckTenantWeight(weight); err != nil {
		return fmt.Errorf("postgres: set tenant weight: %w", err)
	}
	var err error
	if weight == 1 {
		_, err = s.pool.Exec(ctx, `DELETE FROM tenant_weights WHERE tenant = $1`, tenant)
	} else {
		_, err = s.pool.Exec(ctx, `INSERT INTO tenant_weights (tenant, weight) VALUES ($1, $2)
			ON CONFLICT (tenant) DO UPDATE SET weight = excluded.weight`, tenant, weight)
	}
	if err != nil {
		return s.dbErr("set tenant weight", err)
	}
	return nil
}

// TenantWeights returns the tenants whose weight is not 1.
func (s *Store) TenantWeights(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, sqlFairWeights)
	if err != nil {
		return nil, s.dbErr("tenant weights", err)
	}
	out := map[string]int{}
	var t string
	var w int
	_, err = pgx.ForEachRow(rows, []any{&t, &w}, func() error {
		out[t] = w
		return nil
	})
	if err != nil {
		return nil, s.dbErr("tenant weights", err)
	}
	return out, nil
}
