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
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

func (a *app) tasksCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List, inspect, cancel, retry and prune tasks",
	}
	var state, queue string
	var limit int
	var listJSON, showJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List tasks (id, state, attempts, queue, module, last error)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := tasks.State(state)
			if state != "" && !st.Valid() {
				return usageErrorf("--state %q: want queued, running, succeeded, dead or cancelled", state)
			}
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				ts, err := s.List(ctx, tasks.ListFilter{State: st, Queue: queue, Limit: limit})
				if err != nil {
					return err
				}
				if listJSON {
					out := make([]server.TaskView, len(ts))
					for i, t := range ts {
						out[i] = server.ViewOf(t)
					}
					return a.printJSON(out)
				}
				w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tSTATE\tATTEMPTS\tQUEUE\tMODULE\tLAST ERROR")
				for _, t := range ts {
					fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%.12s\t%s\n", t.ID, t.State, t.Attempt, t.Queue, t.Module, oneLine(shownError(t, nil), 60))
				}
				return w.Flush()
			})
		},
	}
	list.Flags().StringVar(&state, "state", "", "only tasks in this state: queued, running, succeeded, dead, cancelled")
	list.Flags().StringVar(&queue, "queue", "", "only tasks of this queue")
	list.Flags().IntVar(&limit, "limit", 100, "at most this many tasks")
	list.Flags().BoolVar(&listJSON, "json", false, "print a JSON array of tasks (without input and result bytes: input_size, result_size)")

	show := a.idCommand("show", "Show a task: state, attempts and their outcomes, checkpoint, progress, result size",
		func(ctx context.Context, s tasks.Store, t tasks.Task) error {
			atts, err := s.Attempts(ctx, t.ID)
			if err != nil {
				return err
			}
			if showJSON {
				return a.printJSON(struct {
					Task     server.TaskView `json:"task"`
					Attempts []tasks.Attempt `json:"attempts"`
				}{server.ViewOf(t), atts})
			}
			printTask(a, t, atts)
			return nil
		})
	show.Flags().BoolVar(&showJSON, "json", false, "print the task and its attempts as JSON (without the input and result bytes, their sizes instead: runner tasks result writes the result)")
	printState := func(t tasks.Task) {
		fmt.Fprintf(a.stdout, "task %d: %s", t.ID, t.State)
		if t.CancelRequested && t.State == tasks.StateRunning {
			fmt.Fprint(a.stdout, " (cancel requested: the guest is asked to stop, then forced)")
		}
		fmt.Fprintln(a.stdout)
	}
	cancel := a.idCommand("cancel", "Cancel a task: a queued one at once, a running one is asked to stop then forced",
		func(ctx context.Context, s tasks.Store, t tasks.Task) error {
			id := t.ID
			t, err := s.Cancel(ctx, id)
			if err == nil {
				printState(t)
			}
			return notApplicable(ctx, s, id, err, func(st tasks.State) string {
				switch st {
				case tasks.StateSucceeded:
					return "has already succeeded"
				case tasks.StateDead:
					return "is already dead (it ended; runner tasks retry puts it back in the queue)"
				case tasks.StateCancelled:
					return "is already cancelled"
				}
				return "is " + string(st) + ": it cannot be cancelled now"
			})
		})
	retry := a.idCommand("retry", "Put a dead or cancelled task back in the queue",
		func(ctx context.Context, s tasks.Store, t tasks.Task) error {
			id := t.ID
			t, err := s.Retry(ctx, id)
			if err == nil {
				printState(t)
			}
			return notApplicable(ctx, s, id, err, func(st tasks.State) string {
				return "is " + string(st) + ": only a dead or cancelled task can be retried"
			})
		})
	result := a.idCommand("result", "Write a succeeded task's stored stdout",
		func(ctx context.Context, s tasks.Store, t tasks.Task) error {
			if t.State != tasks.StateSucceeded {
				return &exitError{code: exitInternal, err: fmt.Errorf("task %d has no result: it is %s", t.ID, t.State)}
			}
			_, err := a.stdout.Write(t.Result)
			return err
		})
	// Shell completion (completion.go): ids of the tasks each command
	// applies to, states, queues.
	show.ValidArgsFunction = a.completeTaskIDs()
	cancel.ValidArgsFunction = a.completeTaskIDs(tasks.StateQueued, tasks.StateRunning)
	retry.ValidArgsFunction = a.completeTaskIDs(tasks.StateDead, tasks.StateCancelled)
	result.ValidArgsFunction = a.completeTaskIDs(tasks.StateSucceeded)
	_ = list.RegisterFlagCompletionFunc("state", completeStates)
	_ = list.RegisterFlagCompletionFunc("queue", a.completeQueues)
	cmd.AddCommand(list, show, cancel, retry, result, a.pruneCommand())
	return cmd
}

// idCommand is a `tasks X ID` command: it parses the id, opens the store,
// loads the task (a clear error if there is none) and calls fn.
func (a *app) idCommand(use, short string, fn func(ctx context.Context, s tasks.Store, t tasks.Task) error) *cobra.Command {
	return &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				t, err := s.Get(ctx, id)
				if err == nil {
					err = fn(ctx, s, t)
				}
				if errors.Is(err, tasks.ErrNotFound) {
					return &exitError{code: exitNotFound, err: fmt.Errorf("no task with id %d (runner tasks list shows the tasks)", id)}
				}
				return err
			})
		},
	}
}

// notApplicable turns the store's ErrInvalidState (an operation the
// task's state does not allow) into a sentence about the task, without the
// store's internal prefixes: "task 1 has already succeeded".
func notApplicable(ctx context.Context, s tasks.Store, id int64, err error, says func(tasks.State) string) error {
	if !errors.Is(err, tasks.ErrInvalidState) {
		return err
	}
	t, gerr := s.Get(ctx, id)
	if gerr != nil {
		return err
	}
	return &exitError{code: exitInternal, err: fmt.Errorf("task %d %s", id, says(t.State))}
}

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErrorf("task id %q: want a positive number", s)
	}
	return id, nil
}

func printTask(a *app, t tasks.Task, atts []tasks.Attempt) {
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(w, "%s:\t%v\n", k, v) }
	row("id", t.ID)
	row("state", t.State)
	row("queue", t.Queue)
	if len(t.Labels) > 0 {
		keys := slices.Sorted(maps.Keys(t.Labels))
		kvs := make([]string, len(keys))
		for i, k := range keys {
			kvs[i] = k + "=" + t.Labels[k]
		}
		row("labels", strings.Join(kvs, " "))
	}
	row("module", t.Module)
	row("attempts", fmt.Sprintf("%d (failures %d of max %d)", t.Attempt, t.Failures, t.MaxAttempts))
	row("limits", limitsString(t.Limits))
	row("input", fmt.Sprintf("%d bytes", t.InputSize))
	if t.CheckpointSize >= 0 {
		row("checkpoint", fmt.Sprintf("%d bytes", t.CheckpointSize))
	} else {
		row("checkpoint", "none")
	}
	if t.ProgressTotal > 0 || t.ProgressDone > 0 {
		row("progress", fmt.Sprintf("%d / %d", t.ProgressDone, t.ProgressTotal))
	}
	if t.State == tasks.StateSucceeded {
		row("result", fmt.Sprintf("%d bytes (runner tasks result %d)", t.ResultSize, t.ID))
	}
	if e := shownError(t, atts); e != "" {
		row("last error", e)
	}
	if t.CancelRequested {
		row("cancel", "requested")
	}
	row("created", t.CreatedAt.Format(time.RFC3339))
	if !t.FinishedAt.IsZero() {
		row("finished", t.FinishedAt.Format(time.RFC3339))
	}
	_ = w.Flush()
	if len(atts) == 0 {
		return
	}
	fmt.Fprintln(a.stdout, "\nattempts:")
	w = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "#\tSTARTED\tDURATION\tOUTCOME\tCOUNTED\tRESUMED\tREASON")
	for _, at := range atts {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%v\t%v\t%s\n", at.Number, at.StartedAt.Format(time.RFC3339), at.Duration().Round(time.Millisecond),
			at.Outcome, at.Counted, at.Resumed, oneLine(at.Reason, 70))
	}
	_ = w.Flush()
	// The stderr of the latest attempt that wrote any (its last 4 KiB).
	for i := len(atts) - 1; i >= 0; i-- {
		if at := atts[i]; at.Stderr != "" {
			fmt.Fprintf(a.stdout, "\nstderr of attempt %d (its last %d bytes at most):\n", at.Number, tasks.MaxStderrTail)
			for _, line := range strings.Split(strings.TrimRight(at.Stderr, "\n"), "\n") {
				fmt.Fprintln(a.stdout, "  "+line)
			}
			break
		}
	}
}

// limitsString shows the limits a task asked for; the rest are the
// runner's defaults when it runs.
// shownError is the task's last error as the CLI shows it: none for a
// succeeded task (its history is in the attempts), and never an
// interruption (a cooperative stop on a shutdown is not an error: the
// task resumes from its checkpoint). After an interruption it is the
// reason of the latest attempt that did fail, when atts are known.
func shownError(t tasks.Task, atts []tasks.Attempt) string {
	if t.State == tasks.StateSucceeded || t.LastError == "" {
		return ""
	}
	interrupted := isInterruption(t.LastError)
	for i := len(atts) - 1; i >= 0 && !interrupted; i-- {
		if atts[i].Reason == t.LastError {
			interrupted = atts[i].Outcome == string(sandbox.KindInterrupted)
			break
		}
	}
	if !interrupted {
		return t.LastError
	}
	for i := len(atts) - 1; i >= 0; i-- {
		switch at := atts[i]; at.Outcome {
		case string(sandbox.KindSucceeded), string(sandbox.KindInterrupted):
		default:
			if at.Reason != "" {
				return at.Reason
			}
		}
	}
	return ""
}

// isInterruption reports a reason the runner records for a cooperative
// stop on its shutdown (package pool).
func isInterruption(reason string) bool { return strings.HasPrefix(reason, "stopped cooperatively") }

func limitsString(l tasks.Limits) string {
	var parts []string
	size := func(name string, n int64) {
		if n > 0 {
			parts = append(parts, name+" "+formatSize(n))
		}
	}
	size("memory", l.MemoryBytes)
	if l.Timeout > 0 {
		parts = append(parts, "timeout "+l.Timeout.String())
	}
	size("stdout", l.Stdout)
	size("stderr", l.Stderr)
	size("checkpoint", l.Checkpoint)
	if len(parts) == 0 {
		return "the runner's defaults"
	}
	return strings.Join(parts, ", ") + " (the rest: the runner's defaults)"
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
