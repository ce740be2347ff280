package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/limitrow"
)

// Fair claims (tasks/fair.go): while some queued task names a tenant, or
// a tenant or a queue has a limit (queue_limits, beside tenants; the
// limits' code serves both, limitrow.Table), a claim reads each (queue,
// tenant)'s first ready tasks on the per-queue
// ready index, which leads with the tenant, and tasks.PlanFairClaim
// chooses among them; its cost grows with the number of tenants that
// have tasks queued, not with the backlog. The statements run in the
// claim's write transaction, on the writer connection.
const (
	// Whether a claim must be fair: some queued task names a tenant, or
	// some tenant or queue has a limit (a queue_limits row has one).
	sqlTenanted = `SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_tenanted WHERE state = 'queued' AND tenant <> '')
	OR EXISTS (SELECT 1 FROM tenants WHERE max_running > 0 OR work_quota > 0 OR rate > 0)
	OR EXISTS (SELECT 1 FROM queue_limits)`
	// The queues with tasks queued, and the tenants of queue ?1 with tasks
	// queued: skip scans of the ready index, one seek each.
	sqlQueuedQueues = `WITH RECURSIVE f(queue) AS (
	SELECT (SELECT queue FROM tasks INDEXED BY tasks_ready_queue WHERE state = 'queued' ORDER BY queue LIMIT 1)
	UNION ALL
	SELECT (SELECT queue FROM tasks INDEXED BY tasks_ready_queue WHERE state = 'queued' AND queue > f.queue ORDER BY queue LIMIT 1)
	FROM f WHERE f.queue IS NOT NULL
)
SELECT queue FROM f WHERE queue IS NOT NULL AND queue NOT IN (SELECT queue FROM paused_queues)`
	sqlQueuedTenants = `WITH RECURSIVE f(tenant) AS (
	SELECT (SELECT tenant FROM tasks INDEXED BY tasks_ready_queue WHERE state = 'queued' AND queue = ?1 ORDER BY tenant LIMIT 1)
	UNION ALL
	SELECT (SELECT tenant FROM tasks INDEXED BY tasks_ready_queue WHERE state = 'queued' AND queue = ?1 AND tenant > f.tenant
		ORDER BY tenant LIMIT 1)
	FROM f WHERE f.tenant IS NOT NULL
)
SELECT tenant FROM f WHERE tenant IS NOT NULL`
	// The first ready tasks (?3 at most) of each tenant of queue ?1 that
	// the JSON array ?4 names, at ?2 now.
	sqlFairCandidates = `SELECT f.value, t.id, t.priority, t.run_at FROM json_each(?4) f JOIN tasks t ON t.id IN (
	SELECT id FROM tasks INDEXED BY tasks_ready_queue
	WHERE state = 'queued' AND queue = ?1 AND tenant = f.value AND run_at <= ?2 ` + readyOrder + ` LIMIT +?3)`
	sqlFairPasses  = `SELECT tenant, pass FROM fair_passes WHERE queue = ?1`
	sqlFairClock   = `SELECT clock FROM fair_clocks WHERE queue = ?1`
	sqlFairTenants = `SELECT q.tenant, q.weight, q.max_running, q.work_quota, q.work_period, coalesce(w.period, -1), coalesce(w.work, 0),
		q.rate, coalesce(b.tokens, 0), coalesce(b.at, 0)
	FROM tenants q LEFT JOIN tenant_work w ON w.tenant = q.tenant LEFT JOIN tenant_tokens b ON b.tenant = q.tenant`
	sqlSetTokens = `INSERT INTO tenant_tokens (tenant, tokens, at) VALUES (?1, ?2, ?3)
		ON CONFLICT (tenant) DO UPDATE SET tokens = excluded.tokens, at = excluded.at`
	// The queues' limits, as sqlFairTenants reads the tenants' (weight 1).
	sqlQueueLimits = `SELECT q.queue, 1, q.max_running, q.work_quota, q.work_period, coalesce(w.period, -1), coalesce(w.work, 0),
		q.rate, q.tokens, q.tokens_at
	FROM queue_limits q LEFT JOIN queue_work w ON w.queue = q.queue`
	sqlSetQueueTokens = `UPDATE queue_limits SET tokens = ?2, tokens_at = ?3 WHERE queue = ?1`
	// The running tasks of each tenant, and of each queue (at most the
	// workers of every runner of the store).
	sqlRunningByTenant = `SELECT tenant, count(*) FROM tasks INDEXED BY tasks_leases WHERE state = 'running' GROUP BY tenant`
	sqlRunningByQueue  = `SELECT queue, count(*) FROM tasks INDEXED BY tasks_leases WHERE state = 'running' GROUP BY queue`
	// The same, and of them those no worker began yet (Tenants,
	// QueueLimits).
	sqlLeasedByTenant = `SELECT tenant, count(*), coalesce(sum(began_at IS NULL), 0) FROM tasks INDEXED BY tasks_leases
		WHERE state = 'running' GROUP BY tenant`
	sqlLeasedByQueue = `SELECT queue, count(*), coalesce(sum(began_at IS NULL), 0) FROM tasks INDEXED BY tasks_leases
		WHERE state = 'running' GROUP BY queue`
	// The queued tasks of each named tenant, ready at ?1 and later.
	sqlQueuedByTenant = `SELECT tenant, sum(run_at <= ?1), sum(run_at > ?1) FROM tasks INDEXED BY tasks_tenanted
		WHERE state = 'queued' AND tenant <> '' GROUP BY tenant`
	// The queued tasks of each queue with a limit, ready at ?1 and later.
	sqlQueuedByQueue = `SELECT queue, sum(run_at <= ?1), sum(run_at > ?1) FROM tasks INDEXED BY tasks_ready_queue
		WHERE state = 'queued' AND queue IN (SELECT queue FROM queue_limits) GROUP BY queue`
	sqlSetPass = `INSERT INTO fair_passes (queue, tenant, pass) VALUES (?1, ?2, ?3)
		ON CONFLICT (queue, tenant) DO UPDATE SET pass = excluded.pass`
	sqlSetClock = `INSERT INTO fair_clocks (queue, clock) VALUES (?1, ?2)
		ON CONFLICT (queue) DO UPDATE SET clock = excluded.clock`
	// claimIDsSQL claims the tasks whose ids ?4 lists (a JSON array).
	claimIDsSQL = claimSet + `SELECT value FROM json_each(?4)` + claimReturning
)

// fairStmt runs one of the fair claim's statements, prepared once.
func (s *Store) fairStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	return s.prepared(ctx, "claim", stmtKey{kind: q}, func() string { return q })
}

// tenanted reports whether some queued task names a tenant.
func (s *Store) tenanted(ctx context.Context) (bool, error) {
	st, err := s.fairStmt(ctx, sqlTenanted)
	if err != nil {
		return false, err
	}
	var one int
	switch err := st.QueryRowContext(ctx).Scan(&one); err {
	case nil:
		return true, nil
	case sql.ErrNoRows:
		return false, nil
	default:
		return false, s.dbErr("claim", err)
	}
}

// claimFair is the claim of req while tenants are used: queues are the
// queues it names (nil: every unpaused queue with tasks queued); it claims
// tasks.PlanFairClaimFetching's choice, returned in claim order, and
// writes back the passes and clocks.
func (s *Store) claimFair(ctx context.Context, req tasks.ClaimRequest, queues []string, now, expiry time.Time) (*sql.Rows, []int64, error) {
	maxima := req.Queues
	if queues == nil {
		if err := s.fairRows(ctx, sqlQueuedQueues, func(r *sql.Rows) error {
			var q string
			err := r.Scan(&q)
			queues = append(queues, q)
			return err
		}); err != nil {
			return nil, nil, err
		}
	}
	st := tasks.FairState{Passes: map[tasks.FairKey]int64{}, Weights: map[string]int{}, Clocks: map[string]int64{}}
	settings, err := s.limits(ctx, s.fairRows, sqlFairTenants, sqlRunningByTenant, now)
	if err != nil {
		return nil, nil, err
	}
	for t, set := range settings {
		st.Weights[t] = set.Weight
		if n, limited := set.Slots(); limited {
			if st.Slots == nil {
				st.Slots = map[string]int{}
			}
			st.Slots[t] = n
		}
	}
	queueLimits, err := s.limits(ctx, s.fairRows, sqlQueueLimits, sqlRunningByQueue, now)
	if err != nil {
		return nil, nil, err
	}
	for q, set := range queueLimits {
		if n, limited := set.Slots(); limited {
			if st.QueueSlots == nil {
				st.QueueSlots = map[string]int{}
			}
			st.QueueSlots[q] = n
		}
	}
	tenants := make([][]byte, len(queues)) // each queue's, as a JSON array
	flows := 0
	for i, q := range queues {
		var ts []string
		if err := s.fairRows(ctx, sqlQueuedTenants, func(r *sql.Rows) error {
			var t string
			err := r.Scan(&t)
			ts = append(ts, t)
			return err
		}, q); err != nil {
			return nil, nil, err
		}
		flows += len(ts)
		var err error
		if tenants[i], err = json.Marshal(ts); err != nil {
			return nil, nil, err
		}
		if err := s.fairRows(ctx, sqlFairPasses, func(r *sql.Rows) error {
			var t string
			var p int64
			err := r.Scan(&t, &p)
			st.Passes[tasks.FairKey{Queue: q, Tenant: t}] = p
			return err
		}, q); err != nil {
			return nil, nil, err
		}
		if err := s.fairRows(ctx, sqlFairClock, func(r *sql.Rows) error {
			var c int64
			err := r.Scan(&c)
			st.Clocks[q] = c
			return err
		}, q); err != nil {
			return nil, nil, err
		}
	}
	fetch := func(limit int) ([]tasks.FairCandidate, error) {
		var cands []tasks.FairCandidate
		for i, q := range queues {
			n := limit
			if maxima != nil {
				n = min(n, maxima[q])
			}
			if err := s.fairRows(ctx, sqlFairCandidates, func(r *sql.Rows) error {
				c := tasks.FairCandidate{Queue: q}
				var runAt int64
				err := r.Scan(&c.Tenant, &c.ID, &c.Priority, &runAt)
				c.RunAt = time.UnixMicro(runAt)
				cands = append(cands, c)
				return err
			}, q, micros(now), n, string(tenants[i])); err != nil {
				return nil, err
			}
		}
		// Each flow's candidates in its claim order (the statement returns
		// them flow by flow, but need not).
		slices.SortStableFunc(cands, func(a, b tasks.FairCandidate) int {
			return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(b.Priority, a.Priority),
				a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
		})
		return cands, nil
	}
	plan, err := tasks.PlanFairClaimFetching(fetch, flows, st, maxima, req.Max)
	if err != nil {
		return nil, nil, err
	}
	for k, p := range plan.Passes {
		if err := s.fairExec(ctx, sqlSetPass, k.Queue, k.Tenant, p); err != nil {
			return nil, nil, err
		}
	}
	for q, c := range plan.Clocks {
		if err := s.fairExec(ctx, sqlSetClock, q, c); err != nil {
			return nil, nil, err
		}
	}
	for t, set := range settings {
		if n := plan.Taken[t]; n > 0 && set.Rate > 0 {
			if err := s.fairExec(ctx, sqlSetTokens, t, set.Tokens-float64(n), micros(now)); err != nil {
				return nil, nil, err
			}
		}
	}
	for q, set := range queueLimits {
		if n := plan.QueueTaken[q]; n > 0 && set.Rate > 0 {
			if err := s.fairExec(ctx, sqlSetQueueTokens, q, set.Tokens-float64(n), micros(now)); err != nil {
				return nil, nil, err
			}
		}
	}
	ids, err := json.Marshal(plan.IDs)
	if err != nil {
		return nil, nil, err
	}
	claim, err := s.fairStmt(ctx, claimIDsSQL)
	if err != nil {
		return nil, nil, err
	}
	rows, err := claim.QueryContext(ctx, req.Owner, micros(expiry), micros(now), string(ids))
	if err != nil {
		return nil, nil, s.dbErr("claim", err)
	}
	return rows, plan.IDs, nil
}

// fairRows runs query q and calls scan for each row.
func (s *Store) fairRows(ctx context.Context, q string, scan func(*sql.Rows) error, args ...any) error {
	st, err := s.fairStmt(ctx, q)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, args...)
	return s.eachRow("claim", rows, err, scan)
}

// readRows is fairRows for readers outside a claim: queries on the read
// connections, errors named op.
func (s *Store) readRows(op string) func(context.Context, string, func(*sql.Rows) error, ...any) error {
	return func(ctx context.Context, q string, scan func(*sql.Rows) error, args ...any) error {
		rows, err := s.r.QueryContext(ctx, q, args...)
		return s.eachRow(op, rows, err, scan)
	}
}

// eachRow calls scan for each of rows, the result of a query that failed
// with err or not; op names the caller in errors.
func (s *Store) eachRow(op string, rows *sql.Rows, err error, scan func(*sql.Rows) error) error {
	if err != nil {
		return s.dbErr(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return s.dbErr(op, err)
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbErr(op, err)
	}
	return nil
}

// fairExec runs statement q.
func (s *Store) fairExec(ctx context.Context, q string, args ...any) error {
	st, err := s.fairStmt(ctx, q)
	if err != nil {
		return err
	}
	if _, err := st.ExecContext(ctx, args...); err != nil {
		return s.dbErr("claim", err)
	}
	return nil
}

// limitSetters, embedded in Store, are its setters of tenants' and
// queues' limits (tasks.Store's SetTenantWeight, SetTenantMaxRunning,
// SetQueueMaxRunning, SetTenantWorkQuota, SetQueueWorkQuota, SetTenantRate
// and SetQueueRate), which write with writeLimits.
type limitSetters = limitrow.Setters

// writeLimits sets columns cols of name's row in t to vals, and drops a
// row left with the defaults (limitrow.Write).
func (s *Store) writeLimits(ctx context.Context, t limitrow.Table, op, name string, cols []string, vals []any) error {
	args := append([]any{name}, vals...)
	return s.write(ctx, op, func(ctx context.Context) error {
		_, err := s.wc.ExecContext(ctx, t.Upsert(cols, sqlitePlaceholder), args...)
		if err == nil {
			_, err = s.wc.ExecContext(ctx, t.Prune(sqlitePlaceholder), name)
		}
		if err != nil {
			return s.dbErr(op, err)
		}
		return nil
	})
}

// sqlitePlaceholder spells argument i of a statement: ?i.
func sqlitePlaceholder(i int) string { return fmt.Sprintf("?%d", i) }

// Tenants returns the tenants with a setting that is not the default or
// with tasks queued or running, each with its tasks running, ready and
// scheduled now (tasks.Store's Tenants).
func (s *Store) Tenants(ctx context.Context) (map[string]tasks.Tenant, error) {
	query := s.readRows("tenants")
	now := s.clock()
	out, err := s.limits(ctx, query, sqlFairTenants, sqlRunningByTenant, now)
	if err != nil {
		return nil, err
	}
	counts, err := s.counts(ctx, query, sqlLeasedByTenant, sqlQueuedByTenant, now, func(name string) bool {
		_, ok := out[name]
		return ok || name != ""
	})
	if err != nil {
		return nil, err
	}
	tasks.AddTenantCounts(out, counts)
	return out, nil
}

// QueueLimits returns the queues with a limit, each with its tasks
// running, claimed, ready and scheduled now (tasks.Store's QueueLimits).
func (s *Store) QueueLimits(ctx context.Context) (map[string]tasks.SharedLimits, error) {
	query := s.readRows("queue limits")
	now := s.clock()
	all, err := s.limits(ctx, query, sqlQueueLimits, sqlRunningByQueue, now)
	if err != nil {
		return nil, err
	}
	out := make(map[string]tasks.SharedLimits, len(all))
	if len(all) == 0 {
		return out, nil
	}
	counts, err := s.counts(ctx, query, sqlLeasedByQueue, sqlQueuedByQueue, now, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	for name, t := range all {
		c := counts[name]
		t.Running, t.Claimed, t.Queued, t.Scheduled = c.Running, c.Claimed, c.Queued, c.Scheduled
		out[name] = t.SharedLimits
	}
	return out, nil
}

// counts reads, with query, the tasks of each tenant or queue running
// and claimed (leasedSQL) and ready and scheduled as of now (queuedSQL);
// a name's leased tasks are kept only when keep(name).
func (s *Store) counts(ctx context.Context, query func(context.Context, string, func(*sql.Rows) error, ...any) error,
	leasedSQL, queuedSQL string, now time.Time, keep func(name string) bool) (map[string]tasks.TenantCounts, error) {
	counts := map[string]tasks.TenantCounts{}
	if err := query(ctx, leasedSQL, func(r *sql.Rows) error {
		var name string
		var c tasks.TenantCounts
		err := r.Scan(&name, &c.Running, &c.Claimed)
		c.Running -= c.Claimed
		if keep(name) {
			counts[name] = c
		}
		return err
	}); err != nil {
		return nil, err
	}
	err := query(ctx, queuedSQL, func(r *sql.Rows) error {
		var name string
		var ready, later int
		err := r.Scan(&name, &ready, &later)
		c := counts[name]
		c.Queued, c.Scheduled = ready, later
		counts[name] = c
		return err
	}, micros(now))
	return counts, err
}

// limits reads the settings of tenants or queues (rowsSQL: sqlFairTenants
// or sqlQueueLimits), their running tasks (runningSQL) and the work they
// used as of now, with query (in the claim's transaction, or not).
func (s *Store) limits(ctx context.Context, query func(context.Context, string, func(*sql.Rows) error, ...any) error,
	rowsSQL, runningSQL string, now time.Time) (map[string]tasks.Tenant, error) {
	out := map[string]tasks.Tenant{}
	if err := query(ctx, rowsSQL, func(r *sql.Rows) error {
		var name string
		var row tasks.TenantRow
		var period, at int64
		err := r.Scan(&name, &row.Weight, &row.MaxRunning, &row.WorkQuota, &period, &row.UsedPeriod, &row.Used,
			&row.Rate, &row.Tokens, &at)
		row.WorkPeriod = time.Duration(period) * time.Microsecond
		if at != 0 {
			row.TokensAt = time.UnixMicro(at)
		}
		out[name] = row.Tenant(now)
		return err
	}); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	err := query(ctx, runningSQL, func(r *sql.Rows) error {
		var name string
		var n int
		err := r.Scan(&name, &n)
		if t, ok := out[name]; ok {
			t.Running = n
			out[name] = t
		}
		return err
	})
	return out, err
}
