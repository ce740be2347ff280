package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// bulkFlags are the filter flags of runner tasks retry, cancel and delete.
type bulkFlags struct {
	state, queue, olderThan string
	labels                  []string
	all, yes                bool
}

func (f *bulkFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.state, "state", "", "act on the tasks in this state (of those the action applies to)")
	fl.StringVar(&f.queue, "queue", "", "act on the tasks of this queue")
	fl.StringArrayVar(&f.labels, "label", nil, "act on the tasks with this label, KEY=VALUE (repeat: every one)")
	fl.StringVar(&f.olderThan, "older-than", "", "act on the tasks last changed longer ago than this, e.g. 1h or 30m")
	fl.BoolVar(&f.all, "all", false, "act on every task the action applies to (no other filter needed)")
	fl.BoolVar(&f.yes, "yes", false, "act: without it, a filter only counts the tasks it selects")
	_ = cmd.RegisterFlagCompletionFunc("state", completeStates)
}

// set reports whether any filter flag is given.
func (f *bulkFlags) set() bool {
	return f.state != "" || f.queue != "" || len(f.labels) > 0 || f.olderThan != "" || f.all
}

// filter is the tasks.BulkFilter of the flags.
func (f *bulkFlags) filter(now time.Time) (tasks.BulkFilter, error) {
	bf := tasks.BulkFilter{State: tasks.State(f.state), Queue: f.queue, All: f.all}
	if f.state != "" && !bf.State.Valid() {
		return bf, usageErrorf("--state %q: want queued, running, succeeded, dead or cancelled", f.state)
	}
	for _, l := range f.labels {
		k, v, err := tasks.ParseLabel(l)
		if err != nil {
			return bf, usageErrorf("--label: %v", err)
		}
		if bf.Labels == nil {
			bf.Labels = map[string]string{}
		}
		bf.Labels[k] = v
	}
	if f.olderThan != "" {
		d, err := time.ParseDuration(f.olderThan)
		if err != nil || d <= 0 {
			return bf, usageErrorf("--older-than %q: want a positive duration such as 30m or 1h", f.olderThan)
		}
		bf.Before = now.Add(-d)
	}
	return bf, nil
}

// past is the past tense of an action, for what the CLI prints.
func past(a tasks.Action) string {
	switch a {
	case tasks.ActionRetry:
		return "retried"
	case tasks.ActionCancel:
		return "cancelled"
	}
	return "deleted"
}

// actCommand is runner tasks retry, cancel or delete: on the tasks of the
// ids given, or on those a filter selects (counted first; --yes acts).
func (a *app) actCommand(action tasks.Action, short, long string, one func(ctx context.Context, s tasks.Store, t tasks.Task) error) *cobra.Command {
	var f bulkFlags
	cmd := &cobra.Command{
		Use:   string(action) + " [ID...]",
		Short: short,
		Long:  long,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && f.set() {
				return usageErrorf("give task ids or a filter (--state, --queue, --label, --older-than, --all), not both")
			}
			if len(args) == 0 && !f.set() {
				return usageErrorf("give task ids, or a filter (--state, --queue, --label, --older-than, or --all) to %s many", action)
			}
			ids := make([]int64, 0, len(args))
			for _, s := range args {
				id, err := parseID(s)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			if len(ids) > 0 {
				return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
					return a.actOnIDs(ctx, s, ids, one)
				})
			}
			bf, err := f.filter(time.Now())
			if err != nil {
				return err
			}
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				return a.actOnFilter(ctx, s, action, bf, f.yes)
			})
		},
	}
	f.add(cmd)
	return cmd
}

// actOnIDs acts on each task, in order. With one id an error is the
// command's; with several, each failure is said on stderr and the others
// go on; the exit code is the first failure's.
func (a *app) actOnIDs(ctx context.Context, s tasks.Store, ids []int64, one func(ctx context.Context, s tasks.Store, t tasks.Task) error) error {
	var first error
	for _, id := range ids {
		t, err := s.Get(ctx, id)
		if err == nil {
			err = one(ctx, s, t)
		}
		if errors.Is(err, tasks.ErrNotFound) {
			err = &exitError{code: exitNotFound, err: fmt.Errorf("no task with id %d (runner tasks list shows the tasks)", id)}
		}
		if err == nil {
			continue
		}
		if len(ids) == 1 {
			return err
		}
		fmt.Fprintf(a.stderr, "runner: %v\n", err)
		if first == nil {
			var ee *exitError
			if errors.As(err, &ee) {
				first = &exitError{code: ee.code, err: errors.New("some tasks were not changed (see above)")}
			} else {
				first = err
			}
		}
	}
	return first
}

// actOnFilter counts the tasks f selects and, with yes, acts on them.
func (a *app) actOnFilter(ctx context.Context, s tasks.Store, action tasks.Action, f tasks.BulkFilter, yes bool) error {
	if err := f.Check(); err != nil {
		return usageErrorf("%v", err)
	}
	res, err := tasks.Bulk(ctx, s, action, f, !yes)
	if err != nil {
		return err
	}
	if !yes {
		fmt.Fprintf(a.stdout, "%s to %s\n", count(int64(res.Matched), "task"), action)
		if res.Matched > 0 {
			fmt.Fprintf(a.stderr, "(nothing done: run it again with --yes to %s them)\n", action)
		}
		return nil
	}
	fmt.Fprintf(a.stdout, "%s %s\n", past(action), count(int64(res.Done), "task"))
	if res.Skipped > 0 {
		fmt.Fprintf(a.stderr, "(%d more had moved on meanwhile and were left as they are)\n", res.Skipped)
	}
	return nil
}

// deleteOne deletes one task.
func (a *app) deleteOne(ctx context.Context, s tasks.Store, t tasks.Task) error {
	err := s.Delete(ctx, t.ID)
	if err == nil {
		fmt.Fprintf(a.stdout, "task %d: deleted\n", t.ID)
		return nil
	}
	return notApplicable(ctx, s, t.ID, err, func(st tasks.State) string {
		return "is " + string(st) + ": cancel it first (runner tasks cancel), then delete it"
	})
}

// queueCommands are runner tasks pause, resume and queues.
func (a *app) queueCommands() []*cobra.Command {
	set := func(pause bool) func(cmd *cobra.Command, args []string) error {
		return func(cmd *cobra.Command, args []string) error {
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				for _, q := range args {
					var err error
					if pause {
						err = s.PauseQueue(ctx, q)
					} else {
						err = s.ResumeQueue(ctx, q)
					}
					if errors.Is(err, tasks.ErrInvalidSpec) {
						return usageErrorf("queue %q: %v", q, err)
					}
					if err != nil {
						return err
					}
					word := "resumed"
					if pause {
						word = "paused"
					}
					fmt.Fprintf(a.stdout, "queue %s: %s\n", termSafe(q), word)
				}
				return nil
			})
		}
	}
	pause := &cobra.Command{
		Use:   "pause QUEUE...",
		Short: "Pause queues: no runner claims their queued tasks until they are resumed",
		Long: `Pause queues, in the store: no runner working the store claims their queued
tasks until runner tasks resume (on PostgreSQL, other runners see it within a
second). Running attempts go on; submissions are still taken. A queue need hold
no task to be paused.`,
		Args: cobra.MinimumNArgs(1),
		RunE: set(true),
	}
	resume := &cobra.Command{
		Use:   "resume QUEUE...",
		Short: "Resume paused queues",
		Args:  cobra.MinimumNArgs(1),
		RunE:  set(false),
	}
	pause.ValidArgsFunction = a.completeQueues
	resume.ValidArgsFunction = a.completeQueues
	return []*cobra.Command{pause, resume}
}

// printPaused says which queues are paused, after the stats table.
func (a *app) printPaused(ps []tasks.PausedQueue) {
	if len(ps) == 0 {
		return
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nPAUSED QUEUE\tSINCE\t")
	for _, p := range ps {
		fmt.Fprintf(w, "%s\t%s\t\n", termSafe(p.Queue), p.PausedAt.Format(time.RFC3339))
	}
	_ = w.Flush()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Queue
	}
	if slices.ContainsFunc(names, func(s string) bool { return strings.ContainsAny(s, " \t") }) {
		return
	}
	fmt.Fprintf(a.stdout, "(runner tasks resume %s resumes them)\n", termSafe(strings.Join(names, " ")))
}

// stateWord is a task's state for a person: a queued task whose run_at is
// still to come is "scheduled" with its time.
func stateWord(t tasks.Task, now time.Time) string {
	switch {
	case t.State == tasks.StateQueued && t.RunAt.After(now):
		return "scheduled " + t.RunAt.Local().Format(time.DateTime)
	case t.Shown() == tasks.StateClaimed:
		return "claimed by " + termSafe(t.LeaseOwner)
	}
	return string(t.Shown())
}

// moduleNames returns the names of the modules of ts (none when the store
// fails to read them: a list still shows).
func moduleNames(ctx context.Context, s tasks.Store, ts ...tasks.Task) map[string]string {
	if len(ts) == 0 {
		return nil
	}
	var shas []string
	for _, t := range ts {
		if !slices.Contains(shas, t.Module) {
			shas = append(shas, t.Module)
		}
	}
	names, err := s.ModuleNames(ctx, shas)
	if err != nil {
		return nil
	}
	return names
}

// moduleWord is a module's name, or the start of its hash when it has none.
func moduleWord(sha string, names map[string]string) string {
	if n := names[sha]; n != "" {
		return termSafe(n)
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// nameModule keeps the file name of the module read from path with it in
// the store, for lists to show (a failure only logs: the task is
// submitted all the same). Standard input ("-") gives no name.
func nameModule(ctx context.Context, a *app, s tasks.Store, sha, path string) {
	if path == "-" || path == "" {
		return
	}
	name := filepath.Base(path)
	if tasks.CheckModuleName(name) != nil {
		return
	}
	if err := s.NameModule(ctx, sha, name); err != nil {
		a.log.Warn("the module's name was not stored", zap.String("name", name), zap.Error(err))
	}
}
