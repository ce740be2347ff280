package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/stint-run/stint/tasks"
)

func (a *app) pruneCommand() *cobra.Command {
	var olderThan string
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete the tasks that ended (succeeded, dead, cancelled) longer ago than DURATION",
		Long: `Delete the tasks that ended (succeeded, dead or cancelled) longer ago than
--older-than (Go syntax like 36h, or days like 7d), with their input, result,
checkpoint and attempt history. Queued and running tasks are never deleted, nor
are modules. The idempotency keys of deleted tasks can be used again.

It works in small batches, so it may run next to runner serve. To do it
continuously, set retention for runner serve instead.`,
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
				p, ok := s.(tasks.Pruner)
				if !ok {
					return fmt.Errorf("this store cannot delete tasks")
				}
				before := time.Now().Add(-age)
				n, err := p.Prune(ctx, before)
				fmt.Fprintf(a.stdout, "deleted %d tasks that ended before %s\n", n, before.UTC().Format(time.RFC3339))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete the tasks that ended longer ago than this (36h, 7d)")
	return cmd
}
