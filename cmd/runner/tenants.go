package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// runner tenants: the weights of fair claims (tasks/fair.go).

func (a *app) tenantsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tenants",
		Short: "List the tenants' weights in fair claims (set them with runner tenants weight)",
		Long: `A task names its tenant (runner submit --tenant, "tenant" in the API's task, a
schedule's or a batch's --tenant; default the empty tenant). Within a queue and
a priority, runners take tenants in turn: one tenant's backlog does not hold back
another's next task by more than one task per claim. A tenant of weight 3 gets
three turns for one of a tenant of weight 1 (the default).

Weights are kept in the store, the same for every queue and every runner
working it; runner serve also applies the config key tenant_weights
(NAME=WEIGHT, ...) when it starts. This command lists the tenants whose weight
is not 1. With --json: {"weights": {"NAME": WEIGHT, ...}}.`,
		Example: `  runner tenants
  runner tenants weight acme 3
  runner submit job.wasm --tenant acme`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				ts, err := tenantStore(s)
				if err != nil {
					return err
				}
				w, err := ts.TenantWeights(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(struct {
						Weights map[string]int `json:"weights"`
					}{w})
				}
				if len(w) == 0 {
					fmt.Fprintln(a.stderr, "every tenant has weight 1 (runner tenants weight NAME N sets one)")
					return nil
				}
				names := make([]string, 0, len(w))
				for n := range w {
					names = append(names, n)
				}
				slices.Sort(names)
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TENANT\tWEIGHT")
				for _, n := range names {
					fmt.Fprintf(tw, "%s\t%d\n", termSafe(n), w[n])
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"weights": {...}} as JSON`)
	cmd.AddCommand(&cobra.Command{
		Use:   "weight TENANT N",
		Short: "Set a tenant's weight in fair claims: 1 (the default) to 1000",
		Long: `Set TENANT's weight, kept in the store: within a queue and a priority it gets N
turns for one of a tenant of weight 1. Runners working the store use it at their
next claim. The empty tenant is written "".`,
		Example: `  runner tenants weight acme 3
  runner tenants weight "" 2`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil {
				return usageErrorf("weight %q: want a whole number from 1 to %d", args[1], tasks.MaxTenantWeight)
			}
			return a.withStore(cmd, func(ctx context.Context, s tasks.Store) error {
				ts, err := tenantStore(s)
				if err != nil {
					return err
				}
				if err := ts.SetTenantWeight(ctx, args[0], n); err != nil {
					if errors.Is(err, tasks.ErrInvalidSpec) {
						return usageErrorf("%v", err)
					}
					return err
				}
				fmt.Fprintf(a.stdout, "tenant %q: weight %d\n", termSafe(args[0]), n)
				return nil
			})
		},
	})
	return cmd
}

// tenantStore is s's fairness settings, or an error saying it has none.
func tenantStore(s tasks.Store) (tasks.TenantStore, error) {
	ts, ok := s.(tasks.TenantStore)
	if !ok {
		return nil, errors.New("this store keeps no tenant weights")
	}
	return ts, nil
}

// applyTenantWeights writes the config's tenant_weights to the store.
func (a *app) applyTenantWeights(ctx context.Context, s tasks.Store) error {
	if len(a.cfg.TenantWeights) == 0 {
		return nil
	}
	ts, err := tenantStore(s)
	if err != nil {
		return fmt.Errorf("tenant_weights: %w", err)
	}
	for name, w := range a.cfg.TenantWeights {
		if err := ts.SetTenantWeight(ctx, name, w); err != nil {
			return fmt.Errorf("tenant_weights: %w", err)
		}
	}
	a.log.Info("tenant weights set", zap.Any("weights", a.cfg.TenantWeights))
	return nil
}

// parseTenantWeights reads the config key tenant_weights: NAME=WEIGHT
// items.
func parseTenantWeights(items []string) (map[string]int, error) {
	out := map[string]int{}
	for _, it := range items {
		name, w, ok := strings.Cut(it, "=")
		n, err := strconv.Atoi(w)
		if !ok || err != nil {
			return nil, fmt.Errorf("tenant_weights: %q: want NAME=WEIGHT, e.g. acme=3", it)
		}
		if err := tasks.CheckTenantWeight(n); err != nil {
			return nil, fmt.Errorf("tenant_weights: %q: %w", it, err)
		}
		if err := tasks.CheckTenantName(name); err != nil {
			return nil, fmt.Errorf("tenant_weights: %q: %w", it, err)
		}
		out[name] = n
	}
	return out, nil
}
