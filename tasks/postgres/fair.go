package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/limitrow"
)

// Fair claims (tasks/fair.go): while some queued task names a tenant, or
// a tenant or a queue has a limit, the ordered claim's guard (noTenants)
// makes it take nothing, and claimRun runs claimFair, one transaction: the
// (queue, tenant) flows with tasks queued (a loose index scan of
// tasks_ready_queue, one seek a flow), the clocks of their queues locked
// (fair claims of one queue take turns; ordered claims never wait for
// them), the passes, the limits of their queues and then of the limited
// tenants read with their rows locked (always in that order: no
// deadlock), the weights, each flow's first ready tasks locked FOR UPDATE
// SKIP LOCKED, and then tasks.PlanFairClaimFetching's choice claimed and
// the passes, clocks and buckets written back. Its cost grows with the
// number of flows, not with the backlog. While claims are fair the Store
// skips the probe and the ordered claim (Store.fairLast, set by the fair
// claim itself while it finds a tenant or a limit): over the empty tenant
// alone the fair claim chooses what the ordered one would, so the one
// claim made after the last tenant's task is gone takes the same tasks.
const (
	sqlQueuedFlows = `WITH RECURSIVE f AS (
	(SELECT queue, tenant FROM tasks WHERE state = 'queued' ORDER BY queue, tenant LIMIT 1)
	UNION ALL
	SELECT n.queue, n.tenant FROM f CROSS JOIN LATERAL (SELECT queue, tenant FROM tasks
		WHERE state = 'queued' AND (queue, tenant) > (f.queue, f.tenant) ORDER BY queue, tenant LIMIT 1) n
)
SELECT queue, tenant FROM f`
	sqlInsertClocks = `INSERT INTO fair_clocks (queue, clock) SELECT unnest($1::text[]), 0 ON CONFLICT (queue) DO NOTHING`
	sqlLockClocks   = `SELECT queue, clock FROM fair_clocks WHERE queue = ANY($1::text[]) ORDER BY queue FOR UPDATE`
	sqlFairPasses   = `SELECT queue, tenant, pass FROM fair_passes WHERE queue = ANY($1::text[])`
	sqlFairTenants  = `SELECT q.tenant, q.weight, q.max_running, q.work_quota, q.work_period, coalesce(w.period, -1), coalesce(w.work, 0),
		q.rate, coalesce(b.tokens, 0), b.at
	FROM tenants q LEFT JOIN tenant_work w ON w.tenant = q.tenant LEFT JOIN tenant_tokens b ON b.tenant = q.tenant`
	sqlSetTokens = `INSERT INTO tenant_tokens (tenant, tokens, at) SELECT * FROM unnest($1::text[], $2::double precision[], $3::timestamptz[])
	ON CONFLICT (tenant) DO UPDATE SET tokens = excluded.tokens, at = excluded.at`
	// The limited tenants' rows locked (fair claims that may start their
	// tasks take turns, across runners), then their running tasks counted:
	// the count sees every claim that held the lock before.
	sqlLockLimited     = `SELECT tenant FROM tenants WHERE max_running > 0 OR rate > 0 ORDER BY tenant FOR UPDATE`
	sqlRunningByTenant = `SELECT tenant, count(*) FROM tasks WHERE state = 'running'
	AND tenant IN (SELECT tenant FROM tenants WHERE max_running > 0) GROUP BY tenant`
	// The limits of the queues $1 read with their rows locked (fair claims
	// that may take their tasks take turns, across runners; before the
	// tenants' rows, in every claim), as sqlFairTenants reads a tenant's,
	// then their running tasks counted: what every claim that held the
	// locks before wrote.
	sqlLockQueueLimits = `SELECT q.queue, 1, q.max_running, q.work_quota, q.work_period, coalesce(w.period, -1), coalesce(w.work, 0),
		q.rate, q.tokens, q.tokens_at
	FROM queue_limits q LEFT JOIN queue_work w ON w.queue = q.queue WHERE q.queue = ANY($1::text[]) ORDER BY q.queue FOR UPDATE OF q`
	sqlRunningByQueue = `SELECT queue, count(*) FROM tasks WHERE state = 'running'
	AND queue IN (SELECT queue FROM queue_limits WHERE max_running > 0 AND queue = ANY($1::text[])) GROUP BY queue`
	sqlSetQueueTokens = `UPDATE queue_limits q SET tokens = x.tokens, tokens_at = x.at
	FROM unnest($1::text[], $2::double precision[], $3::timestamptz[]) AS x(queue, tokens, at) WHERE q.queue = x.queue`
	// Each flow's ($1 queues, $2 tenants, $3 maxima) first ready tasks at
	// $4 now.
	sqlFairCandidates = `SELECT c.id, f.q, f.t, c.priority, c.run_at, c.ctid
	FROM unnest($1::text[], $2::text[], $3::integer[]) AS f(q, t, n)
	CROSS JOIN LATERAL (SELECT id, priority, run_at, ctid FROM tasks
		WHERE state = 'queued' AND queue = f.q AND tenant = f.t AND run_at <= $4 ` + readyOrder + `
		LIMIT f.n FOR UPDATE SKIP LOCKED) c`
	// sqlClaimIDs claims the tasks at the addresses $4, locked by
	// sqlFairCandidates in the same transaction (so they have not moved):
	// a TID scan, as the ordered claim's, not a walk down tasks_pkey a task.
	sqlClaimIDs  = claimSet + `SELECT unnest($4::tid[])` + claimReturning
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
		s.fairLast.Store(fairStill(flows, nil, nil))
		return nil, nil, nil
	}
	// One round trip for the state and the first candidates, one for the
	// writes (and one more for candidates when the first were too few).
	st := tasks.FairState{Passes: map[tasks.FairKey]int64{}, Weights: map[string]int{}, Clocks: map[string]int64{}}
	addr := map[int64]pgtype.TID{} // the candidates' ctid, by id
	candidates := func(b *pgx.Batch, limit int, into *[]tasks.FairCandidate) {
		n := make([]int, len(fn))
		for i := range fn {
			n[i] = min(fn[i], limit)
		}
		b.Queue(sqlFairCandidates, fq, ft, n, k.now).Query(func(r pgx.Rows) error {
			var c tasks.FairCandidate
			var tid pgtype.TID
			_, err := pgx.ForEachRow(r, []any{&c.ID, &c.Queue, &c.Tenant, &c.Priority, &c.RunAt, &tid}, func() error {
				*into = append(*into, c)
				addr[c.ID] = tid
				return nil
			})
			// Each flow's candidates in its claim order.
			slices.SortStableFunc(*into, func(a, b tasks.FairCandidate) int {
				return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(b.Priority, a.Priority),
					a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
			})
			return err
		})
	}
	first := tasks.FairFirstLimit(len(fq), k.req.Max)
	var firstCands []tasks.FairCandidate
	b := &pgx.Batch{}
	b.Queue(sqlInsertClocks, queues)
	b.Queue(sqlLockClocks, queues).Query(func(r pgx.Rows) error {
		var q string
		var c int64
		_, err := pgx.ForEachRow(r, []any{&q, &c}, func() error { st.Clocks[q] = c; return nil })
		return err
	})
	b.Queue(sqlFairPasses, queues).Query(func(r pgx.Rows) error {
		var key tasks.FairKey
		var p int64
		_, err := pgx.ForEachRow(r, []any{&key.Queue, &key.Tenant, &p}, func() error { st.Passes[key] = p; return nil })
		return err
	})
	queueLimits := map[string]tasks.Tenant{}
	b.Queue(sqlLockQueueLimits, queues).Query(scanTenants(queueLimits, k.now))
	queueRunning := map[string]int{}
	b.Queue(sqlRunningByQueue, queues).Query(func(r pgx.Rows) error {
		var name string
		var n int
		_, err := pgx.ForEachRow(r, []any{&name, &n}, func() error { queueRunning[name] = n; return nil })
		return err
	})
	// The tenants' settings read once their rows are locked: a claim that
	// held the locks before (of another queue) may have taken tokens.
	settings := map[string]tasks.Tenant{}
	b.Queue(sqlLockLimited)
	b.Queue(sqlFairTenants).Query(scanTenants(settings, k.now))
	running := map[string]int{}
	b.Queue(sqlRunningByTenant).Query(func(r pgx.Rows) error {
		var name string
		var n int
		_, err := pgx.ForEachRow(r, []any{&name, &n}, func() error { running[name] = n; return nil })
		return err
	})
	candidates(b, first, &firstCands)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, err
	}
	s.fairLast.Store(fairStill(flows, settings, queueLimits))
	for name, t := range settings {
		st.Weights[name] = t.Weight
		t.Running = running[name]
		if n, limited := t.Slots(); limited {
			if st.Slots == nil {
				st.Slots = map[string]int{}
			}
			st.Slots[name] = n
		}
	}
	for name, t := range queueLimits {
		t.Running = queueRunning[name]
		if n, limited := t.Slots(); limited {
			if st.QueueSlots == nil {
				st.QueueSlots = map[string]int{}
			}
			st.QueueSlots[name] = n
		}
	}
	fetch := func(limit int) ([]tasks.FairCandidate, error) {
		if limit == first {
			return firstCands, nil
		}
		var cands []tasks.FairCandidate
		b := &pgx.Batch{}
		candidates(b, limit, &cands)
		return cands, tx.SendBatch(ctx, b).Close()
	}
	plan, err := tasks.PlanFairClaimFetching(fetch, len(fq), st, k.req.Queues, k.req.Max)
	if err != nil {
		return nil, nil, err
	}
	if len(plan.IDs) == 0 {
		return nil, nil, nil
	}
	var pq, pt []string
	var pp []int64
	for key, p := range plan.Passes {
		pq, pt, pp = append(pq, key.Queue), append(pt, key.Tenant), append(pp, p)
	}
	var cq []string
	var cc []int64
	for q, c := range plan.Clocks {
		cq, cc = append(cq, q), append(cc, c)
	}
	var out []tasks.Claimed
	b = &pgx.Batch{}
	tids := make([]pgtype.TID, len(plan.IDs))
	for i, id := range plan.IDs {
		tids[i] = addr[id]
	}
	k.expect = len(tids)
	b.Queue(sqlClaimIDs, k.args[0], k.args[1], k.args[2], tids).Query(func(r pgx.Rows) error {
		var err error
		out, err = k.scanClaimed(r)
		return err
	})
	b.Queue(sqlSetPasses, pq, pt, pp)
	b.Queue(sqlSetClocks, cq, cc)
	var bt []string
	var bn []float64
	var ba []time.Time
	for name, t := range settings {
		if n := plan.Taken[name]; n > 0 && t.Rate > 0 {
			bt, bn, ba = append(bt, name), append(bn, t.Tokens-float64(n)), append(ba, k.now)
		}
	}
	if len(bt) > 0 {
		b.Queue(sqlSetTokens, bt, bn, ba)
	}
	bt, bn, ba = nil, nil, nil
	for name, t := range queueLimits {
		if n := plan.QueueTaken[name]; n > 0 && t.Rate > 0 {
			bt, bn, ba = append(bt, name), append(bn, t.Tokens-float64(n)), append(ba, k.now)
		}
	}
	if len(bt) > 0 {
		b.Queue(sqlSetQueueTokens, bt, bn, ba)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, err
	}
	return out, plan.IDs, nil
}

// fairStill tells whether claims must stay fair: a queued task names a
// tenant, or a tenant or one of the claim's queues has a limit (else the
// next claim is the ordered one, whose guard has the last word).
func fairStill(flows []tasks.FairKey, settings, queueLimits map[string]tasks.Tenant) bool {
	for _, f := range flows {
		if f.Tenant != "" {
			return true
		}
	}
	for _, t := range settings {
		if t.MaxRunning > 0 || t.WorkQuota > 0 || t.Rate > 0 {
			return true
		}
	}
	return len(queueLimits) > 0
}

// limitSetters, embedded in Store, are its setters of tenants' and
// queues' limits (tasks.Store's SetTenantWeight, SetTenantMaxRunning,
// SetQueueMaxRunning, SetTenantWorkQuota, SetQueueWorkQuota, SetTenantRate
// and SetQueueRate), which write with writeLimits.
type limitSetters = limitrow.Setters

// writeLimits sets columns cols of name's row in t to vals, and drops a
// row left with the defaults (limitrow.Write), in one batch.
func (s *Store) writeLimits(ctx context.Context, t limitrow.Table, op, name string, cols []string, vals []any) error {
	b := &pgx.Batch{}
	b.Queue(t.Upsert(cols, pgPlaceholder), append([]any{name}, vals...)...)
	b.Queue(t.Prune(pgPlaceholder), name)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return s.dbErr(op, err)
	}
	return nil
}

// pgPlaceholder spells argument i of a statement: $i.
func pgPlaceholder(i int) string { return fmt.Sprintf("$%d", i) }

// Tenants returns the tenants with a setting that is not the default,
// each with its tasks running now (tasks.Store's tenants).
func (s *Store) Tenants(ctx context.Context) (map[string]tasks.Tenant, error) {
	out := map[string]tasks.Tenant{}
	b := &pgx.Batch{}
	b.Queue(sqlFairTenants).Query(scanTenants(out, s.clock()))
	counts := queueCounts(b, "tenant", "", "tenant <> ''", s.clock(), func(name string) bool {
		_, ok := out[name]
		return ok || name != ""
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.dbErr("tenants", err)
	}
	tasks.AddTenantCounts(out, counts)
	return out, nil
}

// QueueLimits returns the queues with a limit, each with its tasks
// running, claimed, ready and scheduled now (tasks.Store's QueueLimits).
func (s *Store) QueueLimits(ctx context.Context) (map[string]tasks.SharedLimits, error) {
	all := map[string]tasks.Tenant{}
	now := s.clock()
	b := &pgx.Batch{}
	b.Queue(`SELECT q.queue, 1, q.max_running, q.work_quota, q.work_period, coalesce(w.period, -1), coalesce(w.work, 0),
		q.rate, q.tokens, q.tokens_at
	FROM queue_limits q LEFT JOIN queue_work w ON w.queue = q.queue`).Query(scanTenants(all, now))
	limited := "queue IN (SELECT queue FROM queue_limits)"
	counts := queueCounts(b, "queue", limited, limited, now, func(string) bool { return true })
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, s.dbErr("queue limits", err)
	}
	out := make(map[string]tasks.SharedLimits, len(all))
	for name, t := range all {
		c := counts[name]
		t.Running, t.Claimed, t.Queued, t.Scheduled = c.Running, c.Claimed, c.Queued, c.Scheduled
		out[name] = t.SharedLimits
	}
	return out, nil
}

// queueCounts queues on b the reads of each tenant's or queue's (by:
// the column) tasks running and claimed (of those where leased holds,
// SQL; "": all) and ready and scheduled as of now (where queued holds),
// into the map it returns once b has run; a name's leased tasks are kept
// only when keep(name).
func queueCounts(b *pgx.Batch, by, leased, queued string, now time.Time, keep func(name string) bool) map[string]tasks.TenantCounts {
	and := func(cond string) string {
		if cond == "" {
			return ""
		}
		return " AND " + cond
	}
	var name string
	var n, later int
	counts := map[string]tasks.TenantCounts{}
	b.Queue(`SELECT ` + by + `, count(*) FILTER (WHERE began_at IS NOT NULL), count(*) FILTER (WHERE began_at IS NULL)
		FROM tasks WHERE state = 'running'` + and(leased) + ` GROUP BY ` + by).Query(func(r pgx.Rows) error {
		_, err := pgx.ForEachRow(r, []any{&name, &n, &later}, func() error {
			if keep(name) {
				counts[name] = tasks.TenantCounts{Running: n, Claimed: later}
			}
			return nil
		})
		return err
	})
	b.Queue(`SELECT `+by+`, count(*) FILTER (WHERE run_at <= $1), count(*) FILTER (WHERE run_at > $1)
		FROM tasks WHERE state = 'queued'`+and(queued)+` GROUP BY `+by, now).Query(func(r pgx.Rows) error {
		_, err := pgx.ForEachRow(r, []any{&name, &n, &later}, func() error {
			c := counts[name]
			c.Queued, c.Scheduled = n, later
			counts[name] = c
			return nil
		})
		return err
	})
	return counts
}

// scanTenants reads sqlFairTenants' rows into out, as of now.
func scanTenants(out map[string]tasks.Tenant, now time.Time) func(pgx.Rows) error {
	return func(r pgx.Rows) error {
		var name string
		var row tasks.TenantRow
		var period int64
		var at *time.Time
		_, err := pgx.ForEachRow(r, []any{&name, &row.Weight, &row.MaxRunning, &row.WorkQuota, &period, &row.UsedPeriod, &row.Used,
			&row.Rate, &row.Tokens, &at}, func() error {
			row.WorkPeriod, row.TokensAt = time.Duration(period)*time.Microsecond, time.Time{}
			if at != nil {
				row.TokensAt = *at
			}
			out[name] = row.Tenant(now)
			return nil
		})
		return err
	}
}
