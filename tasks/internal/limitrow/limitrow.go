package limitrow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stint-run/stint/tasks"
)

// A Table is where a store keeps the settings of tenants or of queues:
// its table, its key column, what a row holds when every setting is the
// default (it is then dropped), and the check of a key.
type Table struct {
	Name, Key, Defaults string
	Check               func(string) error
}

// Tenants and Queues are the tables of tenants' and of queues' limits.
var (
	Tenants = Table{"tenants", "tenant", "weight = 1 AND max_running = 0 AND work_quota = 0 AND rate = 0",
		tasks.CheckTenantName}
	Queues = Table{"queue_limits", "queue", "max_running = 0 AND work_quota = 0 AND rate = 0", tasks.CheckQueueName}
)

// Upsert is the statement that sets columns cols of a row of t, creating
// it: the row's key is its first argument, cols' values the next ones;
// p(i) spells the placeholder of argument i.
func (t Table) Upsert(cols []string, p func(int) string) string {
	vals, sets := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		vals[i], sets[i] = p(i+2), c+" = excluded."+c
	}
	return `INSERT INTO ` + t.Name + ` (` + t.Key + `, ` + strings.Join(cols, ", ") + `) VALUES (` + p(1) + `, ` +
		strings.Join(vals, ", ") + `) ON CONFLICT (` + t.Key + `) DO UPDATE SET ` + strings.Join(sets, ", ")
}

// Prune is the statement that drops the row of t whose key is argument
// p(1) when it holds only the defaults.
func (t Table) Prune(p func(int) string) string {
	return `DELETE FROM ` + t.Name + ` WHERE ` + t.Key + ` = ` + p(1) + ` AND ` + t.Defaults
}

// A Write sets columns cols of name's row in t to vals and drops the row
// if it is left with the defaults; op names the call in errors.
type Write func(ctx context.Context, t Table, op, name string, cols []string, vals []any) error

// Setters are the setters of tenants' and queues' limits of tasks.Store
// (SetTenantWeight and the others), which a store embeds: each checks a
// setting and the name it is for, then stores it with Write; Backend
// ("sqlite", "postgres") begins their errors.
type Setters struct {
	Backend string
	Write   Write
}

// SetTenantWeight sets tenant's weight in fair claims (tasks.Store's tenants):
// 1 to tasks.MaxTenantWeight, 1 being the default.
func (s Setters) SetTenantWeight(ctx context.Context, tenant string, weight int) error {
	if err := tasks.CheckTenantWeight(weight); err != nil {
		return fmt.Errorf("%s: set tenant weight: %w", s.Backend, err)
	}
	return s.set(ctx, Tenants, "set tenant weight", tenant, []string{`weight`}, weight)
}

// SetTenantMaxRunning sets the most of tenant's tasks running at once
// across every runner of the store (tasks.Store's tenants; 0: no limit).
func (s Setters) SetTenantMaxRunning(ctx context.Context, tenant string, n int) error {
	return s.maxRunning(ctx, Tenants, tenant, n)
}

// SetQueueMaxRunning sets the most of queue's tasks running at once
// across every runner of the store (tasks.Store's tenants; 0: no limit).
func (s Setters) SetQueueMaxRunning(ctx context.Context, queue string, n int) error {
	return s.maxRunning(ctx, Queues, queue, n)
}

// SetTenantWorkQuota sets the most work units tenant's attempts may do
// per period (tasks.Store's tenants; quota 0: none).
func (s Setters) SetTenantWorkQuota(ctx context.Context, tenant string, quota int64, period time.Duration) error {
	return s.workQuota(ctx, Tenants, tenant, quota, period)
}

// SetQueueWorkQuota sets the most work units queue's attempts may do
// per period (tasks.Store's tenants; quota 0: none).
func (s Setters) SetQueueWorkQuota(ctx context.Context, queue string, quota int64, period time.Duration) error {
	return s.workQuota(ctx, Queues, queue, quota, period)
}

// SetTenantRate sets the most of tenant's tasks started per second
// across every runner of the store (tasks.Store's tenants; 0: no limit).
func (s Setters) SetTenantRate(ctx context.Context, tenant string, rate float64) error {
	return s.rate(ctx, Tenants, tenant, rate)
}

// SetQueueRate sets the most of queue's tasks started per second across
// every runner of the store (tasks.Store's tenants; 0: no limit).
func (s Setters) SetQueueRate(ctx context.Context, queue string, rate float64) error {
	return s.rate(ctx, Queues, queue, rate)
}

// maxRunning sets the most of name's tasks running at once (0: no limit).
func (s Setters) maxRunning(ctx context.Context, t Table, name string, n int) error {
	if err := tasks.CheckTenantMaxRunning(n); err != nil {
		return fmt.Errorf("%s: set %s max running: %w", s.Backend, t.Key, err)
	}
	return s.set(ctx, t, "set "+t.Key+" max running", name, []string{`max_running`}, n)
}

// workQuota sets the most work units name's attempts may do per period
// (quota 0: none, and no period).
func (s Setters) workQuota(ctx context.Context, t Table, name string, quota int64, period time.Duration) error {
	if err := tasks.CheckTenantWorkQuota(quota, period); err != nil {
		return fmt.Errorf("%s: set %s work quota: %w", s.Backend, t.Key, err)
	}
	if quota == 0 {
		period = 0
	}
	return s.set(ctx, t, "set "+t.Key+" work quota", name, []string{`work_quota`, `work_period`}, quota, period.Microseconds())
}

// rate sets the most of name's tasks started per second (0: no limit).
func (s Setters) rate(ctx context.Context, t Table, name string, rate float64) error {
	if err := tasks.CheckTenantRate(rate); err != nil {
		return fmt.Errorf("%s: set %s rate: %w", s.Backend, t.Key, err)
	}
	return s.set(ctx, t, "set "+t.Key+" rate", name, []string{`rate`}, rate)
}

// set checks name and writes cols of its row in t.
func (s Setters) set(ctx context.Context, t Table, op, name string, cols []string, vals ...any) error {
	if err := t.Check(name); err != nil {
		return fmt.Errorf("%s: %s: %w", s.Backend, op, err)
	}
	return s.Write(ctx, t, op, name, cols, vals)
}
