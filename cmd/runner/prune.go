package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/stint-run/stint/tasks"
)

func (a *app) pruneCommand() *cobra.Command {
	var olderThan string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete the tasks that ended (succeeded, dead, cancelled) longer ago than DURATION",
		Long: `Delete the tasks that ended (succeeded, dead or cancelled) longer ago than
--older-than (Go syntax like 36h, or days like 7d), with their input, result,
checkpoint, snapshot and attempt history. Queued and running tasks are never
deleted, nor are modules: a task suspended or interrupted with a snapshot
(snapshots.enabled) waits in the queue and keeps it, to resume from it; a task
drops its snapshot when it ends, and nothing of one is left once the task is
pruned. The idempotency keys of deleted tasks can be used again.

It works in small batches, so it may run next to runner serve. To do it
continuously, set retention for runner serve instead.

--dry-run lists the tasks it would delete and deletes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usageErrorf("--older-than is required (for example 7d)")
			}
			age, err := parseDuration(olderThan)
			if err != nil || age < 0 {
				return usageErrorf("--older-than %q: want a duration like 36h or 7d", olderThan)
			}
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				before := time.Now().Add(-age)
				if dryRun {
					return a.prunePreview(ctx, s, before)
				}
				n, err := s.Prune(ctx, before)
				fmt.Fprintf(a.stdout, "deleted %s that ended before %s\n", count(int64(n), "task"), before.UTC().Format(time.RFC3339))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete the tasks that ended longer ago than this (36h, 7d)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the tasks that would be deleted, and delete nothing")
	return cmd
}

// prunePreview lists the tasks Prune(before) would delete: those that
// ended (succeeded, dead, cancelled) before then.
func (a *app) prunePreview(ctx context.Context, s tasks.Store, before time.Time) error {
	var would []tasks.Task
	for _, st := range []tasks.State{tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled} {
		f := tasks.ListFilter{State: st, Limit: 1000}
		for {
			page, err := s.List(ctx, f)
			if err != nil {
				return err
			}
			for _, t := range page {
				if !t.FinishedAt.IsZero() && t.FinishedAt.Before(before) {
					would = append(would, t)
				}
			}
			if len(page) < f.Limit {
				break
			}
			f.AfterID = page[len(page)-1].ID
		}
	}
	slices.SortFunc(would, func(x, y tasks.Task) int { return cmp.Compare(x.ID, y.ID) })
	if len(would) > 0 {
		w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATE\tQUEUE\tFINISHED")
		for _, t := range would {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", t.ID, t.State, termSafe(t.Queue), t.FinishedAt.UTC().Format(time.RFC3339))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stdout, "would delete %d tasks that ended before %s (dry run: nothing deleted)\n", len(would), before.UTC().Format(time.RFC3339))
	return nil
}
