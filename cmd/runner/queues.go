package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-run/stint/tasks"
)

// runner queues: the limits of queues across every runner (tasks.Store's
// SetQueue*), beside the tenants' (tenants.go, whose setters it shares).

func (a *app) queuesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List the queues' limits across every runner (set them with runner queues max-running, rate and quota)",
		Long: `A queue may be limited, across every runner of the store, whatever the tenant of
its tasks: to N tasks running at once (runner queues max-running), to R starts a
second (runner queues rate) and to a quota of work units per period (runner
queues quota). Over any, its other tasks wait, queued, shown as throttled with
the reason (runner tasks show), while other queues' tasks go. A task starts only
within its queue's limits and its tenant's (runner tenants), and a runner takes
no more of a queue than its own --queues NAME=N allows.

The limits are kept in the store, the same for every runner working it. This
command lists the queues with a limit, and how many of their tasks run now
(begun by a worker), are claimed by a runner and wait for one of its workers
(both count against max-running), are ready and are scheduled for later
(runner tasks stats counts every queue's tasks). With --json:
{"queues": {"NAME": {"max_running": N, "running": R, "claimed": C, "queued": Q,
"scheduled": S, "work_quota": Q, "work_period": NANOSECONDS, "work_used": U,
"throttled_until": TIME, "rate": R, "tokens": T}, ...}}.`,
		Example: `  runner queues
  runner queues max-running slow 4
  runner queues rate emails 10
  runner queues quota batch 3600000000000 --per 1h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				all, err := s.QueueLimits(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(struct {
						Queues map[string]tasks.SharedLimits `json:"queues"`
					}{all})
				}
				if len(all) == 0 {
					fmt.Fprintln(a.stderr, "no queue has a limit (runner queues max-running, rate and quota set them)")
					return nil
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "QUEUE\tMAX RUNNING\tRUNNING\tCLAIMED\tREADY\tSCHEDULED\tRATE\tWORK USED\tTHROTTLED")
				now := time.Now()
				for _, n := range slices.Sorted(maps.Keys(all)) {
					q := all[n]
					limit, rate, work, throttled := limitCells(q, now)
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", termSafe(n), limit, q.Running, q.Claimed, q.Queued,
						q.Scheduled, rate, work, throttled)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"queues": {...}} as JSON`)
	cmd.AddCommand(&cobra.Command{
		Use:   "max-running QUEUE N",
		Short: "Set the most of a queue's tasks running at once across every runner (0: no limit)",
		Long: `Set the most of QUEUE's tasks that run at once, whatever their tenant, across
every runner of the store (kept in the store; on PostgreSQL the claims that may
start its tasks take turns on the queue's row, so that runners claiming at once
cannot pass it). Claimed tasks no worker began yet count. While that many run,
its other tasks wait, queued, and other queues' tasks go. 0 removes the limit.
A runner's own --queues QUEUE=N still caps what that runner takes.`,
		Example: `  runner queues max-running slow 4
  runner queues max-running slow 0`,
		Args: cobra.ExactArgs(2),
		RunE: a.setLimitInt("queue", "max_running", func(s tasks.Store) func(context.Context, string, int) error {
			return s.SetQueueMaxRunning
		}),
		ValidArgsFunction: a.completeFirstQueue,
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "rate QUEUE R",
		Short: "Set the most of a queue's tasks started per second across every runner (0: no limit)",
		Long: `Set the most of QUEUE's tasks started per second, whatever their tenant, across
every runner of the store: a token bucket kept in the store, filled at R a second
up to max(1, R), from which each start takes one (on PostgreSQL the claims that
may start its tasks take turns on the queue's row, so that runners claiming at
once share it). While it is empty its tasks wait, queued, and other queues' go.
R may be a fraction (0.1: one start every 10 s); 0 removes the limit.`,
		Example: `  runner queues rate emails 10
  runner queues rate emails 0.5
  runner queues rate emails 0`,
		Args:              cobra.ExactArgs(2),
		RunE:              a.setLimitRate("queue", func(s tasks.Store) func(context.Context, string, float64) error { return s.SetQueueRate }),
		ValidArgsFunction: a.completeFirstQueue,
	})
	quota := &cobra.Command{
		Use:   "quota QUEUE UNITS",
		Short: "Set the most work units a queue's attempts may do per period (0: no quota)",
		Long: `Set the most work units (the work_units every attempt reports: a deterministic
count of the guest's work, about a nanosecond of the tightest code each) that
QUEUE's attempts may do per --per, whatever their tenant (periods counted from
the Unix epoch: an hour's start at each whole hour). Once its attempts recorded
in a period did UNITS, no runner claims its tasks until the next period: they
wait, queued, shown as throttled by runner queues and runner tasks show, and
never fail for it; other queues' tasks go. Attempts running when the quota is
reached run to their end and count in the period they end in. 0 removes the
quota.`,
		Example: `  runner queues quota batch 3600000000000 --per 1h   # about an hour of CPU an hour
  runner queues quota batch 0`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeFirstQueue,
	}
	a.setLimitQuota(quota, "queue", func(s tasks.Store) func(context.Context, string, int64, time.Duration) error {
		return s.SetQueueWorkQuota
	})
	cmd.AddCommand(quota)
	return cmd
}
