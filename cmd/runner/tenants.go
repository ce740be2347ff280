package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/shortdur"
	"github.com/stint-run/stint/tasks"
)

// runner tenants: the weights of fair claims (tasks/fair.go).

func (a *app) tenantsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tenants",
		Short: "List the tenants' weights and limits (set them with runner tenants weight and max-running)",
		Long: `A task names its tenant (runner submit --tenant, "tenant" in the API's task, a
schedule's or a batch's --tenant; default the empty tenant). Within a queue and
a priority, runners take tenants in turn: one tenant's backlog does not hold back
another's next task by more than one task per claim. A tenant of weight 3 gets
three turns for one of a tenant of weight 1 (the default).

A tenant may also be limited to N tasks running at once, whatever their queue,
across every runner of the store (runner tenants max-running), to R starts a
second (runner tenants rate), and to a quota of work units per period (runner
tenants quota): over any, its other tasks wait, queued, while other tenants' go.
A queue may be limited the same way, whatever the tenant (runner queues).

Weights and limits are kept in the store, the same for every queue and every
runner working it; runner serve also applies the config keys tenant_weights
and tenant_max_running (NAME=N, ...) when it starts. This command lists the
tenants with a setting or with tasks queued or running, and how many of their
tasks run now (begun by a worker), are claimed by a runner and wait for one of
its workers (both count against max-running), are ready and are scheduled for
later. With --json:
{"tenants": {"NAME": {"weight": W, "max_running": N, "running": R, "claimed": C, "queued": Q,
"scheduled": S, "work_quota": Q,
"work_period": NANOSECONDS, "work_used": U, "throttled_until": TIME, "rate": R,
"tokens": T}, ...}}.`,
		Example: `  runner tenants
  runner tenants weight acme 3
  runner tenants max-running acme 10
  runner tenants quota acme 3600000000000 --per 1h
  runner submit job.wasm --tenant acme`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				all, err := s.Tenants(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(struct {
						Tenants map[string]tasks.Tenant `json:"tenants"`
					}{all})
				}
				if len(all) == 0 {
					fmt.Fprintln(a.stderr, "no tenant has a task queued or running, and every tenant has weight 1 and no limit (runner tenants weight and max-running set them)")
					return nil
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TENANT\tWEIGHT\tMAX RUNNING\tRUNNING\tCLAIMED\tREADY\tSCHEDULED\tRATE\tWORK USED\tTHROTTLED")
				now := time.Now()
				for _, n := range slices.Sorted(maps.Keys(all)) {
					t := all[n]
					limit, rate, work, throttled := limitCells(t.SharedLimits, now)
					fmt.Fprintf(tw, "%q\t%d\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", termSafe(n), t.Weight, limit, t.Running, t.Claimed, t.Queued, t.Scheduled, rate, work, throttled)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"tenants": {...}} as JSON`)
	cmd.AddCommand(&cobra.Command{
		Use:   "weight TENANT N",
		Short: "Set a tenant's weight in fair claims: 1 (the default) to 1000",
		Long: `Set TENANT's weight, kept in the store: within a queue and a priority it gets N
turns for one of a tenant of weight 1. Runners working the store use it at their
next claim. The empty tenant is written "".`,
		Example: `  runner tenants weight acme 3
  runner tenants weight "" 2`,
		Args: cobra.ExactArgs(2),
		RunE: a.setLimitInt("tenant", "weight", func(ts tasks.Store) func(context.Context, string, int) error { return ts.SetTenantWeight }),
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "max-running TENANT N",
		Short: "Set the most of a tenant's tasks running at once across every runner (0: no limit)",
		Long: `Set the most of TENANT's tasks that run at once, whatever their queue, across
every runner of the store (kept in the store; on PostgreSQL the claims that may
start its tasks take turns, so that runners claiming at once cannot pass it).
While that many run, its other tasks wait, queued, and other tenants' tasks go
first. 0 removes the limit. The empty tenant is written "".`,
		Example: `  runner tenants max-running acme 10
  runner tenants max-running acme 0`,
		Args: cobra.ExactArgs(2),
		RunE: a.setLimitInt("tenant", "max_running", func(ts tasks.Store) func(context.Context, string, int) error {
			return ts.SetTenantMaxRunning
		}),
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "rate TENANT R",
		Short: "Set the most of a tenant's tasks started per second across every runner (0: no limit)",
		Long: `Set the most of TENANT's tasks started per second, whatever their queue, across
every runner of the store: a token bucket kept in the store, filled at R a second
up to max(1, R), from which each start takes one (on PostgreSQL the claims that
may start its tasks take turns, so that runners claiming at once share it).
While it is empty its tasks wait, queued, and other tenants' go. R may be a
fraction (0.1: one start every 10 s); 0 removes the limit.`,
		Example: `  runner tenants rate acme 5
  runner tenants rate acme 0.5
  runner tenants rate acme 0`,
		Args: cobra.ExactArgs(2),
		RunE: a.setLimitRate("tenant", func(ts tasks.Store) func(context.Context, string, float64) error { return ts.SetTenantRate }),
	})
	quota := &cobra.Command{
		Use:   "quota TENANT UNITS",
		Short: "Set the most work units a tenant's attempts may do per period (0: no quota)",
		Long: `Set the most work units (the work_units every attempt reports: a deterministic
count of the guest's work, about a nanosecond of the tightest code each) that
TENANT's attempts may do per --per (periods counted from the Unix epoch: an hour's
start at each whole hour). Once its attempts recorded in a period did UNITS, no
runner claims its tasks until the next period: they wait, queued, shown as
throttled by runner tenants, and never fail for it; other tenants' tasks go.
Attempts running when the quota is reached run to their end and count in the
period they end in. 0 removes the quota. The empty tenant is written "".`,
		Example: `  runner tenants quota acme 3600000000000 --per 1h   # about an hour of CPU an hour
  runner tenants quota acme 0`,
		Args: cobra.ExactArgs(2),
	}
	a.setLimitQuota(quota, "tenant", func(ts tasks.Store) func(context.Context, string, int64, time.Duration) error {
		return ts.SetTenantWorkQuota
	})
	cmd.AddCommand(quota)
	return cmd
}

// setLimitInt is the RunE of runner tenants weight and max-running and
// of runner queues max-running: it sets what (named so in its output) of
// a kind ("tenant", "queue") with the setter set gives.
func (a *app) setLimitInt(kind, what string, set func(tasks.Store) func(context.Context, string, int) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return usageErrorf("%s %q: want a whole number", what, args[1])
		}
		return a.setLimit(cmd, func(ctx context.Context, s tasks.Store) error { return set(s)(ctx, args[0], n) },
			fmt.Sprintf("%s %q: %s %d", kind, termSafe(args[0]), what, n))
	}
}

// setLimitRate is the RunE of runner tenants rate and runner queues rate.
func (a *app) setLimitRate(kind string, set func(tasks.Store) func(context.Context, string, float64) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		r, err := strconv.ParseFloat(args[1], 64)
		if err != nil {
			return usageErrorf("rate %q: want a number of starts a second", args[1])
		}
		return a.setLimit(cmd, func(ctx context.Context, s tasks.Store) error { return set(s)(ctx, args[0], r) },
			fmt.Sprintf("%s %q: rate %s a second", kind, termSafe(args[0]), args[1]))
	}
}

// setLimitQuota makes cmd runner tenants quota or runner queues quota:
// its RunE and its --per.
func (a *app) setLimitQuota(cmd *cobra.Command, kind string, set func(tasks.Store) func(context.Context, string, int64, time.Duration) error) {
	var per time.Duration
	cmd.Flags().DurationVar(&per, "per", time.Hour, "the quota's period (at least 1s)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		units, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return usageErrorf("work units %q: want a whole number", args[1])
		}
		return a.setLimit(cmd, func(ctx context.Context, s tasks.Store) error { return set(s)(ctx, args[0], units, per) },
			fmt.Sprintf("%s %q: work quota %d per %s", kind, termSafe(args[0]), units, shortdur.Format(per)))
	}
}

// setLimit runs set on the store and prints done; a setting the store
// refuses (tasks.ErrInvalidSpec) is a usage error.
func (a *app) setLimit(cmd *cobra.Command, set func(context.Context, tasks.Store) error, done string) error {
	return a.withStore(cmd, func(ctx context.Context, s tasks.Store) error {
		if err := set(ctx, s); err != nil {
			if errors.Is(err, tasks.ErrInvalidSpec) {
				return usageErrorf("%v", err)
			}
			return err
		}
		fmt.Fprintln(a.stdout, done)
		return nil
	})
}

// limitCells are the columns of a tenant's or a queue's limits in runner
// tenants and runner queues: its most running, rate, work used and
// throttling ("-" for none).
func limitCells(l tasks.SharedLimits, now time.Time) (limit, rate, work, throttled string) {
	limit, rate, work, throttled = "-", "-", "-", "-"
	if l.Rate > 0 {
		rate = strconv.FormatFloat(l.Rate, 'g', -1, 64) + "/s"
	}
	if l.MaxRunning > 0 {
		limit = strconv.Itoa(l.MaxRunning)
	}
	if l.WorkQuota > 0 {
		work = fmt.Sprintf("%d of %d per %s", l.WorkUsed, l.WorkQuota, shortdur.Format(l.WorkPeriod))
	}
	if !l.ThrottledUntil.IsZero() {
		throttled = "until " + l.ThrottledUntil.Local().Format(time.DateTime) + " (" + ago(now, l.ThrottledUntil) + ")"
	}
	return limit, rate, work, throttled
}

// applyTenantSettings writes the config's tenant_weights and
// tenant_max_running to the store.
func (a *app) applyTenantSettings(ctx context.Context, s tasks.Store) error {
	if len(a.cfg.TenantWeights) == 0 && len(a.cfg.TenantMaxRunning) == 0 {
		return nil
	}
	for name, w := range a.cfg.TenantWeights {
		if err := s.SetTenantWeight(ctx, name, w); err != nil {
			return fmt.Errorf("tenant_weights: %w", err)
		}
	}
	for name, n := range a.cfg.TenantMaxRunning {
		if err := s.SetTenantMaxRunning(ctx, name, n); err != nil {
			return fmt.Errorf("tenant_max_running: %w", err)
		}
	}
	a.log.Info("tenant settings written to the store", zap.Any("weights", a.cfg.TenantWeights),
		zap.Any("max_running", a.cfg.TenantMaxRunning))
	return nil
}

// parseTenantNumbers reads a config key of NAME=N items (tenant_weights,
// tenant_max_running), each N checked by check.
func parseTenantNumbers(key string, items []string, check func(int) error) (map[string]int, error) {
	out := map[string]int{}
	for _, it := range items {
		name, v, ok := strings.Cut(it, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: %q: want NAME=N, e.g. acme=3", key, it)
		}
		if err := check(n); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", key, it, err)
		}
		if err := tasks.CheckTenantName(name); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", key, it, err)
		}
		out[name] = n
	}
	return out, nil
}
