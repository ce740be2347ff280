package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// runner runners and runner schedule: the runners that work the store, and
// its periodic tasks.

func (a *app) runnersCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runners",
		Short: "List the runners that work the store: host, version, workers, attempts in flight, alive or silent",
		Long: `List the runners recorded in the store. Every runner serve records itself when it
starts and again with each heartbeat (a third of its lease), and removes its
record when it stops cleanly; one that is stopping shows as draining.

STATUS is alive, draining, or silent: not heard from for longer than its lease,
so it died, hangs or lost the store (its tasks go to other runners when their
leases expire). A silent runner's record is deleted after 24 hours.

With --json: {"runners": [...]}, as GET /v1/runners returns it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				list, err := s.Runners(ctx)
				if err != nil {
					return err
				}
				views := make([]server.RunnerView, 0, len(list))
				for _, r := range list {
					views = append(views, server.RunnerViewOf(r))
				}
				if asJSON {
					return a.printJSON(struct {
						Runners []server.RunnerView `json:"runners"`
					}{views})
				}
				if len(views) == 0 {
					fmt.Fprintln(a.stderr, "no runner works this store (runner serve records itself when it starts)")
					return nil
				}
				now := time.Now()
				w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "OWNER\tHOST\tPID\tVERSION\tSTATUS\tWORKERS\tIN FLIGHT\tHELD\tSTARTED\tLAST SEEN")
				for _, r := range views {
					fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", termSafe(r.Owner), termSafe(r.Host), r.PID,
						termSafe(r.Version), r.Status, r.Workers, r.InFlight, r.Held, ago(now, r.Started), ago(now, r.LastSeen))
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"runners": [...]} as JSON`)
	cmd.AddCommand(&cobra.Command{
		Use:   "drain OWNER",
		Short: "Ask a runner to stop claiming tasks (it finishes those it runs)",
		Long: `Ask the runner OWNER (as runner runners lists it) to stop claiming tasks,
from any machine that reaches the store: the request is kept in the store,
and the runner sees it at its next heartbeat (a third of its lease), claims
nothing more, finishes the tasks it runs and shows as draining. The process
keeps running until it is stopped (SIGTERM); a restarted runner claims again.
POST /v1/runners/OWNER/drain and the dashboard's Stop intake button do the same.`,
		Example: "  runner runners drain host-a-4242",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withExistingStore(cmd, func(ctx context.Context, s tasks.Store) error {
				if err := s.RequestDrain(ctx, args[0]); err != nil {
					if errors.Is(err, tasks.ErrRunnerNotFound) {
						return usageErrorf("no runner %s works this store (runner runners lists them)", termSafe(args[0]))
					}
					return err
				}
				fmt.Fprintf(a.stdout, "runner %s asked to stop claiming; it does at its next heartbeat\n", termSafe(args[0]))
				return nil
			})
		},
	})
	return cmd
}

// ago says how long before now t was ("3m ago").
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + shortDuration(-d)
	}
	return shortDuration(d) + " ago"
}

// shortDuration is d rounded for people: 42s, 5m, 3h12m, 2d4h.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

type scheduleFlags struct {
	taskFlags
	every, cron, queue, export string
	tenant                     string
	onRetry, overlap           string
	labels                     []string
	maxAttempts, priority      int
	paused, asJSON             bool
}

func (a *app) scheduleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Periodic tasks: add, list, pause, resume and remove schedules kept in the store",
		Long: `A schedule submits a task once per period: --every 10m (periods aligned on
multiples of the interval since the Unix epoch, so --every 1h runs on the hour)
or --cron "0 * * * *" (5 fields: minute hour day-of-month month day-of-week,
in UTC; @hourly, @daily, @weekly and @monthly too). Its first period is the
first that starts after it is added.

Every runner serve of the store looks for due schedules every second and
submits the period's task with the idempotency key
stint-schedule:NAME:PERIOD-START, so each period gets exactly one task however
many runners serve the store. Its tasks carry the label schedule=NAME.

Periods missed while no runner ran are not made up in a burst: the latest missed
period runs once, when a runner next looks. A paused schedule submits nothing;
resumed, it runs from the next period on. See docs/operations.md.`,
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the schedules: period, next run, last run and task, queue, paused or not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withSchedules(cmd, true, func(ctx context.Context, s tasks.Store) error {
				list, err := s.Schedules(ctx)
				if err != nil {
					return err
				}
				now := time.Now()
				views := make([]server.ScheduleView, 0, len(list))
				for _, s := range list {
					views = append(views, server.ScheduleViewOf(s, now))
				}
				if listJSON {
					return a.printJSON(struct {
						Schedules []server.ScheduleView `json:"schedules"`
					}{views})
				}
				if len(views) == 0 {
					fmt.Fprintln(a.stderr, "no schedules (runner schedule add NAME MODULE.wasm --every 10m)")
					return nil
				}
				w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tPERIOD\tSTATE\tNEXT RUN\tLAST RUN\tLAST TASK\tQUEUE")
				for i, v := range views {
					state, next := "active", "-"
					if v.Paused {
						state = "paused"
					} else if !v.NextRun.IsZero() {
						next = v.NextRun.Format(time.RFC3339) + " (" + ago(now, v.NextRun) + ")"
					}
					last, task := "-", "-"
					if !list[i].LastRun.IsZero() && list[i].LastTask != 0 {
						last, task = v.LastRun.Format(time.RFC3339), fmt.Sprint(v.LastTask)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(v.Name), termSafe(list[i].Period()), state, next, last, task,
						termSafe(list[i].Spec.WithDefaults().Queue))
				}
				return w.Flush()
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, `print {"schedules": [...]} as JSON, as GET /v1/schedules returns it`)

	var f scheduleFlags
	add := &cobra.Command{
		Use:   "add NAME MODULE.wasm [-- ARGS...]",
		Short: "Add a schedule: submit a task of MODULE.wasm every period (--every or --cron)",
		Example: `  runner schedule add hourly-report report.wasm --cron "0 * * * *" --queue edge
  runner schedule add sweep sweep.wasm --every 10m --timeout 2m -- --dry-run`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || (cmd.ArgsLenAtDash() >= 0 && cmd.ArgsLenAtDash() != 2) {
				return fmt.Errorf("want NAME MODULE.wasm, then optionally -- and the guest's arguments")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = append(append([]string{}, f.args...), args[2:]...)
			return a.addSchedule(cmd, args[0], args[1], f)
		},
	}
	fl := add.Flags()
	f.register(fl, "host:guest[:rw] directory, which must be under mounts.allow (repeatable; :rw+snapshots: writable, and snapshots may suspend the task all the same)")
	fl.StringVar(&f.every, "every", "", "period, like 10m or 1h (aligned: 1h runs on the hour)")
	fl.StringVar(&f.cron, "cron", "", `cron expression in UTC, like "0 * * * *" (minute hour day-of-month month day-of-week) or @daily`)
	fl.StringVar(&f.queue, "queue", "", "queue of its tasks (default \"default\")")
	fl.StringVar(&f.tenant, "tenant", "", "tenant its tasks are for (fair claims: runner tenants --help) (default: the empty tenant)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "failed attempts before a task is dead (default 3)")
	fl.IntVar(&f.priority, "priority", 0, "higher runs first")
	fl.StringVar(&f.export, "export", "", "call this export of a plugin module instead of _start")
	fl.StringArrayVar(&f.labels, "label", nil, "KEY=VALUE label kept with each task (repeatable; schedule=NAME is added)")
	fl.BoolVar(&f.paused, "paused", false, "add it paused (runner schedule resume starts it)")
	registerOnRetry(add, &f.onRetry)
	fl.StringVar(&f.overlap, "overlap", "", "while its last task has not ended: skip (the default: no new task while it is queued or running), queue_one (one more while it runs) or allow (one every period)")
	fl.BoolVar(&f.asJSON, "json", false, "print the schedule as JSON")
	_ = add.RegisterFlagCompletionFunc("queue", a.completeQueues)

	remove := a.scheduleNameCommand("remove", "Remove a schedule (its tasks stay)", func(ctx context.Context, ss tasks.Store, name string) error {
		if err := ss.RemoveSchedule(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "schedule %s removed\n", termSafe(name))
		return nil
	})
	pause := a.scheduleNameCommand("pause", "Pause a schedule: it submits nothing until resumed", func(ctx context.Context, ss tasks.Store, name string) error {
		_, err := ss.PauseSchedule(ctx, name, true)
		if err == nil {
			fmt.Fprintf(a.stdout, "schedule %s paused\n", termSafe(name))
		}
		return err
	})
	resume := a.scheduleNameCommand("resume", "Resume a paused schedule from its next period (the periods paused are not made up)",
		func(ctx context.Context, ss tasks.Store, name string) error {
			s, err := ss.PauseSchedule(ctx, name, false)
			if err == nil {
				fmt.Fprintf(a.stdout, "schedule %s resumed; next run %s\n", termSafe(name), server.NextRun(s, time.Now()).Format(time.RFC3339))
			}
			return err
		})
	run := &cobra.Command{
		Use:   "run NAME",
		Short: "Submit a task of a schedule now, apart from its periods (paused or not)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withSchedules(cmd, true, func(ctx context.Context, s tasks.Store) error {
				t, err := tasks.RunScheduleNow(ctx, s, args[0], time.Now(), s.Submit)
				if err == nil {
					fmt.Fprintf(a.stdout, "%d\n", t.ID)
				}
				return err
			})
		},
	}
	cmd.AddCommand(add, list, remove, pause, resume, run)
	return cmd
}

// scheduleNameCommand is a command of one argument, a schedule's name.
func (a *app) scheduleNameCommand(use, short string, fn func(ctx context.Context, ss tasks.Store, name string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withSchedules(cmd, true, func(ctx context.Context, s tasks.Store) error {
				return fn(ctx, s, args[0])
			})
		},
	}
}

// withSchedules runs fn on the store's schedules: an existing store only
// when mustExist (nothing is created); a schedule not found is exit 3.
func (a *app) withSchedules(cmd *cobra.Command, mustExist bool, fn func(ctx context.Context, s tasks.Store) error) error {
	err := a.useStore(cmd, mustExist, fn)
	switch {
	case errors.Is(err, tasks.ErrScheduleNotFound):
		return &exitError{code: exitNotFound, err: fmt.Errorf("%w (runner schedule list shows them)", err)}
	case errors.Is(err, tasks.ErrScheduleExists):
		// Not bad usage: the command was right, the name is taken. The
		// store's wrapping (its name, the sentinel's words) says nothing more.
		var named errScheduleExists
		if errors.As(err, &named) {
			err = named
		}
		return &exitError{code: exitInternal, err: err}
	case errors.Is(err, tasks.ErrInvalidSchedule), errors.Is(err, tasks.ErrInvalidSpec):
		return usageErrorf("%v", err)
	}
	return err
}

func (a *app) addSchedule(cmd *cobra.Command, name, path string, f scheduleFlags) error {
	if f.maxAttempts < 0 {
		return usageErrorf("--max-attempts must be at least 1")
	}
	if (f.every == "") == (f.cron == "") {
		return usageErrorf("give one of --every (like 10m) and --cron (like \"0 * * * *\")")
	}
	sc := tasks.Schedule{Name: name, Cron: f.cron, Paused: f.paused, Overlap: f.overlap}
	switch f.overlap {
	case "", tasks.OverlapSkip, tasks.OverlapQueueOne, tasks.OverlapAllow:
	default:
		return usageErrorf("--overlap %q: want skip (the default), queue_one or allow", f.overlap)
	}
	if f.every != "" {
		d, err := time.ParseDuration(f.every)
		if err != nil {
			return usageErrorf("--every %q: want a duration like 10m or 1h", f.every)
		}
		sc.Every = d
	}
	in, err := f.parse()
	if err != nil {
		return err
	}
	if in.inputFile != "" || in.fromStdin {
		if in.spec.Input, err = a.readTaskInput(in); err != nil {
			return err
		}
	}
	spec := in.spec
	spec.Queue, spec.MaxAttempts, spec.Priority, spec.Export = f.queue, f.maxAttempts, f.priority, f.export
	spec.Tenant = f.tenant
	if spec.OnRetry, err = parseOnRetry(f.onRetry); err != nil {
		return err
	}
	if err := addLabels(&spec, f.labels); err != nil {
		return err
	}
	wasm, err := a.readModule(path)
	if err != nil {
		return err
	}
	if err := checkSpec(spec, a.cfg.Policy); err != nil {
		return err
	}
	// Checked before the store is opened (or created).
	sum := sha256.Sum256(wasm)
	spec.Module = hex.EncodeToString(sum[:])
	sc.Spec = spec
	if err := sc.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	return a.withSchedules(cmd, false, func(ctx context.Context, s tasks.Store) error {
		sha, err := s.PutModule(ctx, wasm)
		if err != nil {
			return err
		}
		spec.Module = sha
		sc.Spec = spec
		sc, err = s.AddSchedule(ctx, sc)
		if errors.Is(err, tasks.ErrScheduleExists) {
			return errScheduleExists{name: name}
		}
		if err != nil {
			return err
		}
		if li, ok := s.(tasks.LockInspector); ok {
			if _, held, err := li.LockHolder(); err == nil && !held {
				a.log.Warn("no runner serve is working this store: the schedule submits its tasks once one runs " +
					"(runner serve, with the same data_dir or store)")
			}
		}
		v := server.ScheduleViewOf(sc, time.Now())
		if f.asJSON {
			return a.printJSON(v)
		}
		next := "none while paused (runner schedule resume " + termSafe(sc.Name) + ")"
		if !v.NextRun.IsZero() {
			next = v.NextRun.Format(time.RFC3339)
		}
		fmt.Fprintf(a.stdout, "schedule %s added: %s; next run %s\n", termSafe(sc.Name), termSafe(sc.Period()), next)
		return nil
	})
}

// errScheduleExists is runner schedule add's error for a name taken.
type errScheduleExists struct{ name string }

func (e errScheduleExists) Error() string {
	return "a schedule named " + termSafe(e.name) + " exists (runner schedule remove " + termSafe(e.name) + " first, or choose another name)"
}

func (e errScheduleExists) Unwrap() error { return tasks.ErrScheduleExists }
