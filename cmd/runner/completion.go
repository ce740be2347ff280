package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storeurl"
)

// Shell completion (`runner completion bash|zsh|fish|powershell`, cobra's)
// offers task ids, states and queues. It reads the configured store (the
// command line's --data-dir, --store and --config count) only when the
// store exists, and never creates anything: no data directory, no
// database, no cache. Without a store it offers nothing.

// completionTasks caps the tasks read to complete one word.
const completionTasks = 1000

// completionTimeout bounds the store read of one completion (a
// PostgreSQL store out of reach must not hang the shell).
const completionTimeout = 2 * time.Second

// allStates are the task states, for --state; listStates adds claimed,
// which tasks list takes (a bulk action's filter does not: running
// selects the claimed too).
var (
	allStates  = []tasks.State{tasks.StateQueued, tasks.StateRunning, tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled}
	listStates = []tasks.State{tasks.StateQueued, tasks.StateClaimed, tasks.StateRunning, tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled}
)

// completeStates completes a bulk action's --state flag.
func completeStates(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return stateWords(allStates), cobra.ShellCompDirectiveNoFileComp
}

// completeListStates completes tasks list's --state flag.
func completeListStates(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return stateWords(listStates), cobra.ShellCompDirectiveNoFileComp
}

func stateWords(states []tasks.State) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// completeTaskIDs completes the ID argument of a `tasks X ID` command with
// the ids of the stored tasks in one of states (any state if none), each
// described by its state and queue.
func (a *app) completeTaskIDs(states ...tasks.State) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		a.readForCompletion(cmd, func(ctx context.Context, s tasks.Store) error {
			ts, err := s.List(ctx, tasks.ListFilter{Limit: completionTasks})
			for _, t := range ts {
				id := fmt.Sprint(t.ID)
				if (len(states) == 0 || slices.Contains(states, t.State)) && strings.HasPrefix(id, prefix) {
					out = append(out, id+"\t"+string(t.Shown())+", queue "+t.Queue)
				}
			}
			return err
		})
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeManyTaskIDs is completeTaskIDs for a command that takes many
// ids: the ids not given yet.
func (a *app) completeManyTaskIDs(states ...tasks.State) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	one := a.completeTaskIDs(states...)
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		out, dir := one(cmd, nil, prefix)
		out = slices.DeleteFunc(out, func(c string) bool {
			id, _, _ := strings.Cut(c, "\t")
			return slices.Contains(args, id)
		})
		return out, dir
	}
}

// completeQueues completes a queue name with the queues of the stored
// tasks, and the default queue.
func (a *app) completeQueues(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	queues := []string{tasks.DefaultQueue}
	a.readForCompletion(cmd, func(ctx context.Context, s tasks.Store) error {
		ts, err := s.List(ctx, tasks.ListFilter{Limit: completionTasks})
		for _, t := range ts {
			if !slices.Contains(queues, t.Queue) {
				queues = append(queues, t.Queue)
			}
		}
		return err
	})
	return queues, cobra.ShellCompDirectiveNoFileComp
}

// completeFirstQueue completes the first argument as completeQueues does,
// and nothing after it (runner queues max-running QUEUE N).
func (a *app) completeFirstQueue(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeQueues(cmd, args, toComplete)
}

// readForCompletion loads the configuration from cmd's flags, quietly,
// and calls fn on the configured store if it exists; any error means no
// completions.
func (a *app) readForCompletion(cmd *cobra.Command, fn func(ctx context.Context, s tasks.Store) error) {
	if err := a.setup(cmd); err != nil {
		return
	}
	a.log = zap.NewNop()
	if a.storeExists() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	// Not openStore: it makes the data directory and the cache.
	s, err := storeurl.Open(ctx, a.cfg.storeURL(), storeurl.Options{Logger: zap.NewNop()})
	if err != nil {
		return
	}
	defer func() { _ = s.Close() }()
	_ = fn(ctx, s)
}
