package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storeurl"
)

// openStore opens the configured store by its URL (package storeurl).
// exclusive is for `runner serve`: one runner per SQLite data directory.
func (a *app) openStore(ctx context.Context, exclusive bool) (tasks.Store, error) {
	if a.cfg.Store == "" { // the store lives in the data directory
		if err := a.ensureDataDir(); err != nil {
			return nil, err
		}
	}
	if _, _, err := storeurl.Parse(a.cfg.storeURL()); err != nil {
		return nil, usageErrorf("store: %v", err)
	}
	s, err := storeurl.Open(ctx, a.cfg.storeURL(), storeurl.Options{Exclusive: exclusive, Logger: a.log.Named("store")})
	if err != nil {
		if errors.Is(err, tasks.ErrLocked) && exclusive {
			return nil, &exitError{code: exitInternal, err: fmt.Errorf("%w\nis another `runner serve` running on data_dir %s? Stop it, or give this one its own --data-dir", err, a.cfg.DataDir)}
		}
		return nil, err
	}
	return s, nil
}

// withStore runs fn on a non-exclusive store, closing it after.
func (a *app) withStore(cmd *cobra.Command, fn func(ctx context.Context, s tasks.Store) error) error {
	ctx := cmd.Context()
	s, err := a.openStore(ctx, false)
	if err != nil {
		return err
	}
	return errors.Join(fn(ctx, s), s.Close())
}

// maxLimits are the most a task may ask for.
func (c *Config) maxLimits() tasks.Limits {
	return tasks.Limits{MemoryBytes: c.Limits.MaxMemory, Timeout: c.Limits.MaxTimeout,
		Stdout: c.Limits.MaxStdout, Stderr: c.Limits.MaxStderr, Checkpoint: c.Limits.MaxCheckpoint}
}

// policy is what a queued task may ask for.
func (c *Config) policy() tasks.Policy {
	return tasks.Policy{MountsAllow: c.MountsAllow, Max: c.maxLimits(), MaxInput: c.Limits.MaxInput}
}

// readTaskInput reads the input of a task to queue (--input FILE or -), up
// to limits.max_input: the store keeps it, and the runner holds it in
// memory while the task runs.
func (a *app) readTaskInput(in taskInput) ([]byte, error) {
	var r io.Reader
	name := "--input -"
	switch {
	case in.fromStdin:
		r = a.stdin
	case in.inputFile != "":
		f, err := os.Open(in.inputFile)
		if err != nil {
			return nil, usageErrorf("--input: %v", err)
		}
		defer func() { _ = f.Close() }()
		r, name = f, "--input "+in.inputFile
	default:
		return nil, nil
	}
	b, err := readAtMost(r, a.cfg.Limits.MaxInput)
	if err != nil {
		return nil, usageErrorf("%s: %v (limits.max_input %s); for big data, mount a directory (--mount, mounts.allow) "+
			"and pass the guest a path", name, err, formatSize(a.cfg.Limits.MaxInput))
	}
	return b, nil
}

type submitFlags struct {
	taskFlags
	key, queue, runAt     string
	labels                []string
	maxAttempts, priority int
	wait                  bool
	waitTimeout           time.Duration
}

func (a *app) submitCommand() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit MODULE.wasm",
		Short: "Store a module and queue a task that runs it; prints the task id",
		Long: `Store MODULE.wasm (content-addressed: the same bytes are stored once) and
queue a task that runs it. Prints the task id; with --wait, waits for the
task to end and prints its result (the guest's stdout).

A running ` + "`runner serve`" + ` on the same data directory picks the task up.`,
		Example: `  runner submit hello.wasm --input name.txt --wait
  runner submit job.wasm --key nightly-2026-11-29 --max-attempts 5 --timeout 10m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.submit(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	f.register(fl, "host:guest[:rw] directory, which must be under mounts.allow (repeatable)")
	fl.StringVar(&f.key, "key", "", "idempotency key: submitting the same key again returns the first task")
	fl.StringVar(&f.queue, "queue", "", "queue name (default \"default\")")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "failed attempts before the task is dead (default 3; interrupted attempts do not count)")
	fl.IntVar(&f.priority, "priority", 0, "higher runs first")
	fl.StringArrayVar(&f.labels, "label", nil, "KEY=VALUE label kept with the task and shown by tasks show (repeatable)")
	fl.StringVar(&f.runAt, "run-at", "", "earliest start: RFC 3339 time or a delay like 10m")
	fl.BoolVar(&f.wait, "wait", false, "wait for the task to end and print its result")
	fl.DurationVar(&f.waitTimeout, "wait-timeout", 0, "give up waiting after this long (default: wait forever)")
	return cmd
}

func (a *app) submit(cmd *cobra.Command, path string, f submitFlags) error {
	wasm, err := readModule(path)
	if err != nil {
		return err
	}
	if f.maxAttempts < 0 {
		return usageErrorf("--max-attempts must be at least 1")
	}
	in, err := f.parse(a.cfg)
	if err != nil {
		return err
	}
	input, err := a.readTaskInput(in)
	if err != nil {
		return err
	}
	spec := tasks.Spec{Args: in.args, Input: input, Queue: f.queue, IdempotencyKey: f.key,
		MaxAttempts: f.maxAttempts, Priority: f.priority,
		Limits: tasks.Limits{Timeout: in.timeout, MemoryBytes: in.memory,
			Stdout: in.stdoutCap, Stderr: in.stderrCap, Checkpoint: in.checkpointCap}}
	if len(in.env) > 0 {
		spec.Env = in.env
	}
	for _, kv := range f.labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErrorf("--label %q: want KEY=VALUE", kv)
		}
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[k] = v
	}
	for _, m := range in.mounts {
		spec.Mounts = append(spec.Mounts, tasks.Mount{HostPath: m.HostPath, GuestPath: m.GuestPath, Writable: m.Writable})
	}
	if f.runAt != "" {
		if d, err := time.ParseDuration(f.runAt); err == nil {
			spec.RunAt = time.Now().Add(d)
		} else if t, err := time.Parse(time.RFC3339, f.runAt); err == nil {
			spec.RunAt = t
		} else {
			return usageErrorf("--run-at %q: want an RFC 3339 time or a delay like 10m", f.runAt)
		}
	}
	if err := tasks.CheckSpec(spec, a.cfg.policy()); err != nil {
		return usageErrorf("%v", err)
	}
	return a.withStore(cmd, func(ctx context.Context, s tasks.Store) error {
		sha, err := s.PutModule(ctx, wasm)
		if err != nil {
			return err
		}
		spec.Module = sha
		t, existing, err := s.Submit(ctx, spec)
		if err != nil {
			if errors.Is(err, tasks.ErrInvalidSpec) {
				return usageErrorf("%v", err)
			}
			return err
		}
		if existing {
			a.log.Info("idempotency key already used: this is the first task", zap.Int64("task", t.ID), zap.String("key", f.key))
		}
		if !t.State.Terminal() {
			a.warnIfNobodyServes(s)
		}
		if !f.wait {
			fmt.Fprintln(a.stdout, t.ID)
			return nil
		}
		wctx := ctx
		if f.waitTimeout > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, f.waitTimeout)
			defer cancel()
		}
		t, err = tasks.WaitFor(wctx, s, t.ID, 50*time.Millisecond)
		if err != nil {
			return fmt.Errorf("task %d: %w", t.ID, err)
		}
		if t.State != tasks.StateSucceeded {
			return &exitError{code: exitInternal, err: fmt.Errorf("task %d ended %s: %s", t.ID, t.State, t.LastError)}
		}
		_, err = a.stdout.Write(t.Result)
		return err
	})
}

// printJSON writes v to stdout as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// warnIfNobodyServes says so when no `runner serve` works the store (on
// Linux, where that is known without taking its lock): a queued task
// waits until one starts.
func (a *app) warnIfNobodyServes(s tasks.Store) {
	li, ok := s.(tasks.LockInspector)
	if !ok {
		return
	}
	if _, held, err := li.LockHolder(); err == nil && !held {
		a.log.Warn("no runner serve is working this store: the task waits in the queue until one starts "+
			"(runner serve, with the same data_dir or store)", zap.String("store", a.cfg.storeURL()))
	}
}

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
			return a.withStore(cmd, func(ctx context.Context, s tasks.Store) error {
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
					fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%.12s\t%s\n", t.ID, t.State, t.Attempt, t.Queue, t.Module, oneLine(t.LastError, 60))
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
			t, err := s.Cancel(ctx, t.ID)
			if err == nil {
				printState(t)
			}
			return err
		})
	retry := a.idCommand("retry", "Put a dead or cancelled task back in the queue",
		func(ctx context.Context, s tasks.Store, t tasks.Task) error {
			t, err := s.Retry(ctx, t.ID)
			if err == nil {
				printState(t)
			}
			return err
		})
	result := a.idCommand("result", "Write a succeeded task's stored stdout",
		func(ctx context.Context, s tasks.Store, t tasks.Task) error {
			if t.State != tasks.StateSucceeded {
				return &exitError{code: exitInternal, err: fmt.Errorf("task %d has no result: it is %s", t.ID, t.State)}
			}
			_, err := a.stdout.Write(t.Result)
			return err
		})
	cmd.AddCommand(list, show, cancel, retry, result, a.pruneCommand())
	return cmd
}

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
			return a.withStore(cmd, func(ctx context.Context, s tasks.Store) error {
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
			return a.withStore(cmd, func(ctx context.Context, s tasks.Store) error {
				t, err := s.Get(ctx, id)
				if errors.Is(err, tasks.ErrNotFound) {
					return &exitError{code: exitInternal, err: fmt.Errorf("no task with id %d", id)}
				}
				if err != nil {
					return err
				}
				err = fn(ctx, s, t)
				if errors.Is(err, tasks.ErrInvalidState) {
					return &exitError{code: exitInternal, err: err}
				}
				return err
			})
		},
	}
}

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErrorf("task id %q: want a positive number", s)
	}
	return id, nil
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
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
	if t.LastError != "" {
		row("last error", t.LastError)
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
