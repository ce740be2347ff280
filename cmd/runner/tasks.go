package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

func (a *app) tasksCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List, inspect, cancel, retry, delete and prune tasks; pause and resume queues",
	}
	var state, queue string
	var limit int
	var after int64
	var all, listJSON, showJSON, statsJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List tasks by id (id, state, attempts, queue, module, last error), a page at a time",
		Long: `List tasks by ascending id, without their input and result bytes.

It prints one page of --limit tasks (default 100), starting after --after ID;
when more tasks follow it says on stderr how to get the next page. --all prints
every matching task, page after page. With --json the output is a JSON array
of tasks; to page in a script, pass the id of the last one as --after until
the array is empty (or use --all).

runner tasks stats counts the tasks per queue and state.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := tasks.State(state)
			if state != "" && !st.Valid() && st != tasks.StateClaimed {
				return usageErrorf("--state %q: want queued, claimed, running, succeeded, dead or cancelled", state)
			}
			if limit <= 0 {
				return usageErrorf("--limit %d: want a positive number of tasks", limit)
			}
			if after < 0 {
				return usageErrorf("--after %d: want a task id (0: from the first)", after)
			}
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				return a.listTasks(ctx, s, tasks.ListFilter{State: st, Queue: queue, AfterID: after, Limit: limit}, all, listJSON)
			})
		},
	}
	list.Flags().StringVar(&state, "state", "", "only tasks in this state: queued, claimed (no worker began them), running (claimed or begun), succeeded, dead, cancelled")
	list.Flags().StringVar(&queue, "queue", "", "only tasks of this queue")
	list.Flags().IntVar(&limit, "limit", tasksPage, "at most this many tasks (with --all: per page read from the store)")
	list.Flags().Int64Var(&after, "after", 0, "only tasks with an id greater than this (the next page: the last id shown)")
	list.Flags().BoolVar(&all, "all", false, "every matching task, page after page")
	list.Flags().BoolVar(&listJSON, "json", false, "print a JSON array of tasks (without input and result bytes: input_size, result_size)")

	stats := &cobra.Command{
		Use:   "stats",
		Short: "Count the tasks per queue and state",
		Long: `Count the tasks of each queue in each state (queued, claimed, running,
succeeded, dead, cancelled), with the totals, in one read of the store. LATER
counts the queued tasks that are not ready yet (a later --run-at, a retry's
backoff); WAITED is how long the queue's oldest ready task has waited ("-":
none is ready), the queue's latency. CLAIMED counts the tasks a runner claimed
and none of its workers has begun yet; RUNNING those a worker began.

The paused queues (runner tasks pause) follow the table, with the time each
was paused; a paused queue is listed even when it holds no task.

With --json: {"total": {"queued": N, "scheduled": N, "oldest_ready_seconds": S,
"claimed": N, "running": N, ..., "all": N}, "queues": {"NAME": {...}},
"paused": ["NAME", ...]}, every state present (0 when none). A store that does
not count succeeded tasks by queue shows a queue's SUCCEEDED and ALL as "-" (in
JSON: absent, and "succeeded_by_queue": false); both SQLite and PostgreSQL do.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				counts, err := s.CountTasks(ctx)
				if err != nil {
					return err
				}
				paused, err := s.PausedQueues(ctx)
				if err != nil {
					return err
				}
				return a.printStats(counts, paused, statsJSON)
			})
		},
	}
	stats.Flags().BoolVar(&statsJSON, "json", false, "print the counts as a JSON object")

	show := a.idCommand("show", "Show a task: state, attempts and their outcomes, checkpoint, progress, result size",
		func(ctx context.Context, s tasks.Store, t tasks.Task) error {
			atts, err := s.Attempts(ctx, t.ID)
			if err != nil {
				return err
			}
			view := server.ViewOf(t)
			if t.State == tasks.StateQueued {
				tenants, err := s.Tenants(ctx)
				if err == nil {
					queues, err := s.QueueLimits(ctx)
					if err == nil {
						view.Throttled = tasks.TaskThrottle(t, tenants, queues, time.Now())
					}
				}
			}
			if showJSON {
				return a.printJSON(struct {
					Task     server.TaskView `json:"task"`
					Attempts []tasks.Attempt `json:"attempts"`
				}{view, atts})
			}
			printTask(a, t, atts, moduleNames(ctx, s, t)[t.Module], view.Throttled)
			return nil
		})
	show.Flags().BoolVar(&showJSON, "json", false, "print the task and its attempts as JSON (without the input and result bytes, their sizes instead: runner tasks result writes the result)")
	printState := func(t tasks.Task) {
		fmt.Fprintf(a.stdout, "task %d: %s", t.ID, t.Shown())
		if t.CancelRequested && t.State == tasks.StateRunning { // claimed or begun
			fmt.Fprint(a.stdout, " (cancel requested: the guest is asked to stop, then forced)")
		}
		fmt.Fprintln(a.stdout)
	}
	cancel := a.actCommand(tasks.ActionCancel, "Cancel tasks: a queued one at once, a running one is asked to stop then forced",
		`Cancel the tasks of the ids given, or those a filter selects: a queued task at
once, a running one is asked to stop, then forced.

With a filter (--state, --queue, --label KEY=VALUE, --older-than 1h, or --all)
it prints how many queued and running tasks match and changes nothing; --yes
cancels them.`,
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
	retry := a.actCommand(tasks.ActionRetry, "Put dead or cancelled tasks back in the queue",
		`Put the dead or cancelled tasks of the ids given, or those a filter selects,
back in the queue, ready now, their failure counts reset.

With a filter (--state, --queue, --label KEY=VALUE, --older-than 1h, or --all)
it prints how many dead and cancelled tasks match and changes nothing; --yes
retries them: runner tasks retry --state dead --queue q --older-than 1h --yes.`,
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
	del := a.actCommand(tasks.ActionDelete, "Delete tasks that are not running, with their attempts, input, result and checkpoint",
		`Delete the tasks of the ids given, or those a filter selects, with everything
stored for them but their module: queued, succeeded, dead and cancelled tasks
(a running task is cancelled first: runner tasks cancel).

With a filter (--state, --queue, --label KEY=VALUE, --older-than 1h, or --all)
it prints how many tasks match and changes nothing; --yes deletes them.`,
		a.deleteOne)
	cancel.ValidArgsFunction = a.completeManyTaskIDs(tasks.StateQueued, tasks.StateRunning)
	retry.ValidArgsFunction = a.completeManyTaskIDs(tasks.StateDead, tasks.StateCancelled)
	del.ValidArgsFunction = a.completeManyTaskIDs(tasks.StateQueued, tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled)
	result.ValidArgsFunction = a.completeTaskIDs(tasks.StateSucceeded)
	_ = list.RegisterFlagCompletionFunc("state", completeListStates)
	_ = list.RegisterFlagCompletionFunc("queue", a.completeQueues)
	cmd.AddCommand(list, stats, show, cancel, retry, del, result, a.pruneCommand())
	cmd.AddCommand(a.queueCommands()...)
	return cmd
}

// tasksPage is the default page of runner tasks list.
const tasksPage = 100

// listTasks prints the tasks of f, one page of f.Limit or (all) every
// page; when there are more (all unset) it tells on stderr how to get the
// next page.
func (a *app) listTasks(ctx context.Context, s tasks.Store, f tasks.ListFilter, all, asJSON bool) error {
	var w *tabwriter.Writer
	if asJSON {
		fmt.Fprint(a.stdout, "[")
	} else {
		w = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATE\tATTEMPTS\tQUEUE\tMODULE\tLAST ERROR")
	}
	n := 0
	for {
		// One more than the page: whether there is a next page.
		page := f
		page.Limit++
		ts, err := s.List(ctx, page)
		if err != nil {
			return err
		}
		more := len(ts) > f.Limit
		if more {
			ts = ts[:f.Limit]
			f.AfterID = ts[len(ts)-1].ID
		}
		var names map[string]string
		if !asJSON {
			names = moduleNames(ctx, s, ts...)
		}
		now := time.Now()
		for _, t := range ts {
			if asJSON {
				b, err := json.MarshalIndent(server.ViewOf(t), "  ", "  ")
				if err != nil {
					return err
				}
				sep := ",\n  "
				if n == 0 {
					sep = "\n  "
				}
				fmt.Fprint(a.stdout, sep, string(b))
			} else {
				fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\t%s\n", t.ID, stateWord(t, now), t.Attempt, termSafe(t.Queue), moduleWord(t.Module, names), oneLine(shownError(t, nil), 60))
			}
			n++
		}
		if w != nil {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if more && all {
			continue
		}
		if asJSON {
			if n > 0 {
				fmt.Fprint(a.stdout, "\n")
			}
			fmt.Fprintln(a.stdout, "]")
		}
		if more {
			fmt.Fprintf(a.stderr, "(more tasks after id %d; the next page: runner tasks list --after %d%s, or --all)\n",
				f.AfterID, f.AfterID, listFlags(f))
		}
		return nil
	}
}

// listFlags are the flags of runner tasks list that select f's tasks
// (not the page), for the next-page hint.
func listFlags(f tasks.ListFilter) string {
	var b strings.Builder
	if f.Limit != tasksPage {
		fmt.Fprintf(&b, " --limit %d", f.Limit)
	}
	if f.State != "" {
		fmt.Fprintf(&b, " --state %s", f.State)
	}
	if f.Queue != "" {
		fmt.Fprintf(&b, " --queue %q", f.Queue)
	}
	return b.String()
}

// stateCounts are the tasks of one queue (or all) per state, as runner
// tasks stats --json prints them.
type stateCounts struct {
	Queued int64 `json:"queued"`
	// Scheduled: of the queued, those not ready yet (a later run-at, a
	// retry's backoff); OldestReady: how long the oldest ready one has
	// waited, in seconds (absent: none is ready).
	Scheduled   int64    `json:"scheduled"`
	OldestReady *float64 `json:"oldest_ready_seconds,omitempty"`
	// Claimed: claimed by a runner, none of whose workers has begun them
	// (tasks.StateClaimed); Running: begun.
	Claimed   int64  `json:"claimed"`
	Running   int64  `json:"running"`
	Succeeded *int64 `json:"succeeded,omitempty"` // nil: not known by queue
	Dead      int64  `json:"dead"`
	Cancelled int64  `json:"cancelled"`
	All       *int64 `json:"all,omitempty"` // nil: not known (succeeded not known)
}

func newStateCounts(byState map[tasks.State]int64, succeededKnown bool) stateCounts {
	c := stateCounts{Queued: byState[tasks.StateQueued], Claimed: byState[tasks.StateClaimed], Running: byState[tasks.StateRunning],
		Dead: byState[tasks.StateDead], Cancelled: byState[tasks.StateCancelled]}
	if succeededKnown {
		ok := byState[tasks.StateSucceeded]
		all := c.Queued + c.Claimed + c.Running + ok + c.Dead + c.Cancelled
		c.Succeeded, c.All = &ok, &all
	}
	return c
}

// printStats prints the counts per queue and state, and their totals
// (tasks.Store.CountTasks). A store that does not count succeeded tasks by
// queue (tasks/sqlite) gives them only in the totals: a queue's succeeded
// and all counts are unknown ("-") unless no task succeeded, and a queue
// that holds only succeeded tasks is not listed.
func (a *app) printStats(counts tasks.TaskCounts, paused []tasks.PausedQueue, asJSON bool) error {
	byQueue := map[string]map[tasks.State]int64{}
	var names []string
	for _, c := range counts.ByQueue {
		if byQueue[c.Queue] == nil {
			byQueue[c.Queue] = map[tasks.State]int64{}
			names = append(names, c.Queue)
		}
		byQueue[c.Queue][c.State] += c.Count
	}
	var pausedNames []string
	for _, p := range paused {
		pausedNames = append(pausedNames, p.Queue)
		if byQueue[p.Queue] == nil {
			byQueue[p.Queue] = map[tasks.State]int64{}
			names = append(names, p.Queue)
		}
	}
	slices.Sort(names)
	succeeded := counts.Total[tasks.StateSucceeded]
	known := counts.SucceededByQueue || succeeded == 0
	out := struct {
		Total            stateCounts            `json:"total"`
		Queues           map[string]stateCounts `json:"queues"`
		Paused           []string               `json:"paused,omitempty"`
		SucceededByQueue bool                   `json:"succeeded_by_queue"`
	}{Total: newStateCounts(counts.Total, true), Queues: map[string]stateCounts{}, Paused: pausedNames, SucceededByQueue: known}
	for _, q := range names {
		out.Queues[q] = newStateCounts(byQueue[q], known)
	}
	for _, w := range counts.Waiting {
		c := out.Queues[w.Queue]
		c.Scheduled = w.Scheduled
		out.Total.Scheduled += w.Scheduled
		if d, ok := w.Waited(counts.Now); ok {
			age := d.Round(time.Second).Seconds()
			c.OldestReady = &age
			if out.Total.OldestReady == nil || *out.Total.OldestReady < age {
				out.Total.OldestReady = &age
			}
		}
		out.Queues[w.Queue] = c
	}
	if asJSON {
		return a.printJSON(out)
	}
	num := func(n *int64) string {
		if n == nil {
			return "-"
		}
		return fmt.Sprint(*n)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "QUEUE\tQUEUED\tLATER\tWAITED\tCLAIMED\tRUNNING\tSUCCEEDED\tDEAD\tCANCELLED\tALL\t")
	waited := func(s *float64) string {
		if s == nil {
			return "-"
		}
		return (time.Duration(*s) * time.Second).String()
	}
	row := func(name string, c stateCounts) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%d\t%d\t%s\t%d\t%d\t%s\t\n", termSafe(name), c.Queued, c.Scheduled, waited(c.OldestReady),
			c.Claimed, c.Running, num(c.Succeeded), c.Dead, c.Cancelled, num(c.All))
	}
	for _, q := range names {
		row(q, out.Queues[q])
	}
	if len(names) != 1 || !known {
		row("(all)", out.Total)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	a.printPaused(paused)
	return nil
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

func printTask(a *app, t tasks.Task, atts []tasks.Attempt, moduleName string, throttled *tasks.Throttle) {
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(w, "%s:\t%v\n", k, v) }
	row("id", t.ID)
	row("state", stateWord(t, time.Now()))
	switch t.Shown() {
	case tasks.StateClaimed:
		row("runner", termSafe(t.LeaseOwner)+" (claimed "+t.StartedAt.Format(time.RFC3339)+"; none of its workers has begun it yet)")
	case tasks.StateRunning:
		row("runner", termSafe(t.LeaseOwner)+" (began "+t.BeganAt.Format(time.RFC3339)+")")
	}
	if throttled != nil {
		why := "throttled: " + throttled.Reason
		if !throttled.Until.IsZero() {
			why += ", until " + throttled.Until.Local().Format(time.DateTime)
		}
		row("waits", why)
	}
	row("queue", termSafe(t.Queue))
	if t.Tenant != "" {
		row("tenant", termSafe(t.Tenant))
	}
	if len(t.Labels) > 0 {
		keys := slices.Sorted(maps.Keys(t.Labels))
		kvs := make([]string, len(keys))
		for i, k := range keys {
			kvs[i] = k + "=" + t.Labels[k]
		}
		row("labels", termSafe(strings.Join(kvs, " ")))
	}
	if moduleName != "" {
		row("module", termSafe(moduleName)+" ("+t.Module+")")
	} else {
		row("module", t.Module)
	}
	row("attempts", fmt.Sprintf("%d (failures %d of max %d)", t.Attempt, t.Failures, t.MaxAttempts))
	row("limits", limitsString(t.Limits))
	row("input", fmt.Sprintf("%d bytes", t.InputSize))
	if t.CheckpointSize >= 0 {
		row("checkpoint", fmt.Sprintf("%d bytes", t.CheckpointSize))
	} else {
		row("checkpoint", "none")
	}
	if sn := t.Snapshot; sn != nil {
		how := "taken while it ran"
		if sn.Suspended {
			how = "suspended"
		}
		row("snapshot", fmt.Sprintf("%s, %s by %s in attempt %d at %s of run time, %d work units (%d stored in all); the next attempt resumes from it",
			bytesize.Format(int64(sn.Size)), how, termSafe(sn.Owner), sn.Attempt, sn.RunTime.Round(time.Millisecond), sn.Work, t.Snapshots))
	} else if t.Snapshots > 0 {
		row("snapshot", fmt.Sprintf("none now (%d stored in all)", t.Snapshots))
	}
	if t.LostStreak > 0 {
		row("lost", fmt.Sprintf("%d attempts in a row, without progress (at snapshots.lost_limit the task is dead)", t.LostStreak))
	}
	if t.ProgressTotal > 0 || t.ProgressDone > 0 {
		row("progress", fmt.Sprintf("%d / %d", t.ProgressDone, t.ProgressTotal))
	}
	if t.State == tasks.StateSucceeded {
		row("result", fmt.Sprintf("%d bytes (runner tasks result %d)", t.ResultSize, t.ID))
	}
	if e := shownError(t, atts); e != "" {
		row("last error", termSafe(e))
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
	fmt.Fprintln(w, "#\tSTARTED\tDURATION\tOUTCOME\tWORK\tCOUNTED\tRESUMED\tREASON")
	for _, at := range atts {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%v\t%v\t%s\n", at.Number, at.StartedAt.Format(time.RFC3339), at.Duration().Round(time.Millisecond),
			at.Outcome, at.Work, at.Counted, at.Resumed, oneLine(at.Reason, 70))
	}
	_ = w.Flush()
	for _, at := range atts {
		if f := at.ResumedFrom; f != nil {
			fmt.Fprintf(a.stdout, "attempt %d resumed from the snapshot of attempt %d by %s (run time %s, %d work units, %s)\n",
				at.Number, f.Attempt, termSafe(f.Owner), f.RunTime.Round(time.Millisecond), f.Work, humanize.IBytes(uint64(f.Size)))
		}
	}
	// The stderr of each attempt that wrote any (its last 4 KiB), oldest
	// first: the latest is at the end, next to the prompt.
	for _, at := range atts {
		if at.Stderr == "" {
			continue
		}
		fmt.Fprintf(a.stdout, "\nstderr of attempt %d (%s; its last %d bytes at most):\n", at.Number, at.Outcome, tasks.MaxStderrTail)
		for _, line := range strings.Split(strings.TrimRight(at.Stderr, "\n"), "\n") {
			fmt.Fprintln(a.stdout, "  "+termSafe(line))
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
			parts = append(parts, name+" "+bytesize.Format(n))
		}
	}
	size("memory", l.MemoryBytes)
	if l.Timeout > 0 {
		parts = append(parts, "timeout "+l.Timeout.String())
	}
	size("stdout", l.Stdout)
	size("stderr", l.Stderr)
	size("checkpoint", l.Checkpoint)
	if l.Work > 0 {
		parts = append(parts, fmt.Sprintf("work %d units", l.Work))
	}
	if len(parts) == 0 {
		return "the runner's defaults"
	}
	return strings.Join(parts, ", ") + " (the rest: the runner's defaults)"
}

// oneLine is s on one line of at most about n bytes (cut on a rune
// boundary, "…" at the cut), escaped for the terminal (termSafe).
func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		cut := n - 1
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return termSafe(s[:cut]) + "…"
	}
	return termSafe(s)
}
