package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-run/stint/tasks"
)

// Fair claims (tasks/fair.go): while some queued task names a tenant, a
// claim reads each (queue, tenant)'s first ready tasks on the per-queue
// ready index, which leads with the tenant, and tasks.PlanFairClaim
// chooses among them; its cost grows with the number of tenants that
// have tasks queued, not with the backlog. The statements run in the
// claim's write transaction, on the writer connection.
const (
	sqlTenanted = `SELECT 1 FROM tasks INDEXED BY tasks_tenanted WHERE state = 'queued' AND tenant <> '' LIMIT 1`
	// The queued tasks' next queue from ?1 and next tenant of queue ?1
	// from ?2 (tenant names hold no NUL: the one after t is >= t+"\x00").
	sqlNextQueue  = `SELECT queue FROM tasks INDEXED BY tasks_ready_queue WHERE state = 'queued' AND queue >= ?1 ORDER BY queue LIMIT 1`
	sqlNextTenant = `SELECT tenant FROM tasks INDEXED BY tasks_ready_queue WHERE state = 'queued' AND queue = ?1 AND tenant >= ?2
		ORDER BY tenant LIMIT 1`
	// A flow's first ready tasks: ?1 queue, ?2 tenant, ?3 now, ?4 the most.
	sqlFairCandidates = `SELECT id, priority, run_at FROM tasks INDEXED BY tasks_ready_queue
		WHERE state = 'queued' AND queue = ?1 AND tenant = ?2 AND run_at <= ?3 ` + readyOrder + ` LIMIT +?4`
	sqlFairPasses  = `SELECT tenant, pass FROM fair_passes WHERE queue = ?1`
	sqlFairClock   = `SELECT clock FROM fair_clocks WHERE queue = ?1`
	sqlFairWeights = `SELECT tenant, weight FROM tenant_weights`
	sqlSetPass     = `INSERT INTO fair_passes (queue, tenant, pass) VALUES (?1, ?2, ?3)
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
// tasks.PlanFairClaim's choice, returned in claim order, and writes back
// the passes and clocks.
func (s *Store) claimFair(ctx context.Context, req tasks.ClaimRequest, queues []string, now, expiry time.Time) (*sql.Rows, []int64, error) {
	maxima := req.Queues
	if queues == nil {
		var err error
		if queues, err = s.queuedQueues(ctx); err != nil {
			return nil, nil, err
		}
	}
	st := tasks.FairState{Passes: map[tasks.FairKey]int64{}, Weights: map[string]int{}, Clocks: map[string]int64{}}
	if err := s.fairRows(ctx, sqlFairWeights, func(r *sql.Rows) error {
		var t string
		var w int
		err := r.Scan(&t, &w)
		st.Weights[t] = w
		return err
	}); err != nil {
		return nil, nil, err
	}
	var cands []tasks.FairCandidate
	for _, q := range queues {
		n := req.Max
		if maxima != nil {
			n = min(n, maxima[q])
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
		for t, ok, err := s.nextKey(ctx, sqlNextTenant, q, ""); ok || err != nil; t, ok, err = s.nextKey(ctx, sqlNextTenant, q, t+"\x00") {
			if err != nil {
				return nil, nil, err
			}
			if err := s.fairRows(ctx, sqlFairCandidates, func(r *sql.Rows) error {
				c := tasks.FairCandidate{Queue: q, Tenant: t}
				var runAt int64
				err := r.Scan(&c.ID, &c.Priority, &runAt)
				c.RunAt = time.UnixMicro(runAt)
				cands = append(cands, c)
				return err
			}, q, t, micros(now), n); err != nil {
				return nil, nil, err
			}
		}
	}
	plan := tasks.PlanFairClaim(cands, st, maxima, req.Max)
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

// queuedQueues lists the unpaused queues that have tasks queued, one
// index seek each.
func (s *Store) queuedQueues(ctx context.Context) ([]string, error) {
	paused := map[string]bool{}
	if err := s.fairRows(ctx, `SELECT queue FROM paused_queues`, func(r *sql.Rows) error {
		var q string
		err := r.Scan(&q)
		paused[q] = true
		return err
	}); err != nil {
		return nil, err
	}
	var out []string
	for q, ok, err := s.nextKey(ctx, sqlNextQueue, ""); ok || err != nil; q, ok, err = s.nextKey(ctx, sqlNextQueue, q+"\x00") {
		if err != nil {
			return nil, err
		}
		if !paused[q] {
			out = append(out, q)
		}
	}
	return out, nil
}

// nextKey runs one of the skip-scan statements: the next key, or ok
// false when there is none.
func (s *Store) nextKey(ctx context.Context, q string, args ...any) (key string, ok bool, err error) {
	st, err := s.fairStmt(ctx, q)
	if err != nil {
		return "", false, err
	}
	switch err := st.QueryRowContext(ctx, args...).Scan(&key); err {
	case nil:
		return key, true, nil
	case sql.ErrNoRows:
		return "", false, nil
	default:
		return "", false, s.dbErr("claim", err)
	}
}

// fairRows runs query q and calls scan for each row.
func (s *Store) fairRows(ctx context.Context, q string, scan func(*sql.Rows) error, args ...any) error {
	st, err := s.fairStmt(ctx, q)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return s.dbErr("claim", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return s.dbErr("claim", err)
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("claim", err)
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

// SetTenantWeight sets tenant's weight in fair claims (tasks.TenantStore):
// 1 to tasks.MaxTenantWeight, 1 being the default.
func (s *Store) SetTenantWeight(ctx context.Context, tenant string, weight int) error {
	if err := tasks.CheckTenantName(tenant); err != nil {
		return fmt.Errorf("sqlite: set tenant weight: %w", err)
	}
	if err := tasks.CheckTenantWeight(weight); err != nil {
		return fmt.Errorf("sqlite: set tenant weight: %w", err)
	}
	return s.write(ctx, "set tenant weight", func(ctx context.Context) error {
		var err error
		if weight == 1 {
			_, err = s.wc.ExecContext(ctx, `DELETE FROM tenant_weights WHERE tenant = ?`, tenant)
		} else {
			_, err = s.wc.ExecContext(ctx, `INSERT INTO tenant_weights (tenant, weight) VALUES (?1, ?2)
				ON CONFLICT (tenant) DO UPDATE SET weight = excluded.weight`, tenant, weight)
		}
		if err != nil {
			return s.dbErr("set tenant weight", err)
		}
		return nil
	})
}

// TenantWeights returns the tenants whose weight is not 1.
func (s *Store) TenantWeights(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, sqlFairWeights)
	if err != nil {
		return nil, s.dbErr("tenant weights", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var t string
		var w int
		if err := rows.Scan(&t, &w); err != nil {
			return nil, s.dbErr("tenant weights", err)
		}
		out[t] = w
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("tenant weights", err)
	}
	return out, nil
}
