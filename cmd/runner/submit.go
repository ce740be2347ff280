package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

type submitFlags struct {
	taskFlags
	key, queue, runAt     string
	tenant                string
	export, onRetry       string
	labels                []string
	maxAttempts, priority int
	wait, asJSON          bool
	waitTimeout           time.Duration
}

func (a *app) submitCommand() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit MODULE.wasm [-- ARGS...]",
		Short: "Store a module and queue a task that runs it; prints the task id",
		Long: `Store MODULE.wasm (content-addressed: the same bytes are stored once) and
queue a task that runs it. Prints the task id; with --wait, waits for the
task to end and prints its result (the guest's stdout).

With --wait, the exit code says how the task ended: 0 succeeded, 4 dead,
5 cancelled, 6 --wait-timeout passed first (the task stays queued), 1 a
store error.

With --json, the task is printed as a JSON object, as runner tasks show
--json prints it ("task"; without the input and result bytes, their sizes
instead): at once, or with --wait once it has ended (whatever its state;
the exit code still says how it ended, and runner tasks result writes the
result).

A running ` + "`runner serve`" + ` on the same data directory picks the task up.`,
		Example: `  runner submit hello.wasm --input name.txt --wait
  runner submit job.wasm --key nightly-2026-11-29 --max-attempts 5 --timeout 10m
  runner submit sim.wasm --timeout 10m --on-retry restart
  runner submit job.wasm --tenant acme --queue reports
  runner submit job.wasm --json | jq .id`,
		Args: moduleAndGuestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = guestArgs(f.args, args)
			return a.submit(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	f.register(fl, "host:guest[:rw] directory, which must be under mounts.allow (repeatable; :rw+snapshots: writable, and snapshots may suspend the task all the same)")
	fl.StringVar(&f.key, "key", "", "idempotency key: submitting the same key again returns the first task")
	fl.StringVar(&f.queue, "queue", "", "queue name (default \"default\")")
	fl.StringVar(&f.tenant, "tenant", "", "tenant the task is for: within a queue and a priority, tenants take turns (weighted: runner tenants weight) (default: the empty tenant)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "failed attempts before the task is dead (default 3; interrupted attempts do not count)")
	fl.IntVar(&f.priority, "priority", 0, "higher runs first")
	fl.StringVar(&f.export, "export", "", "call this export of a plugin module (docs/plugins.md) instead of _start; the input is its input, its output the result")
	registerOnRetry(cmd, &f.onRetry)
	fl.StringArrayVar(&f.labels, "label", nil, "KEY=VALUE label kept with the task and shown by tasks show (repeatable)")
	fl.StringVar(&f.runAt, "run-at", "", "earliest start: RFC 3339 time or a delay like 10m")
	fl.BoolVar(&f.wait, "wait", false, "wait for the task to end and print its result")
	fl.DurationVar(&f.waitTimeout, "wait-timeout", 0, "give up waiting after this long (default: wait forever)")
	_ = cmd.RegisterFlagCompletionFunc("queue", a.completeQueues)
	fl.BoolVar(&f.asJSON, "json", false, "print the task as JSON (with --wait, once it has ended) instead of its id or result")
	return cmd
}

func (a *app) submit(cmd *cobra.Command, path string, f submitFlags) error {
	wasm, err := a.readModule(path)
	if err != nil {
		return err
	}
	if f.maxAttempts < 0 {
		return usageErrorf("--max-attempts must be at least 1")
	}
	in, err := f.parse()
	if err != nil {
		return err
	}
	onRetry, err := parseOnRetry(f.onRetry)
	if err != nil {
		return err
	}
	spec := in.spec
	if spec.Input, err = a.readTaskInput(in); err != nil {
		return err
	}
	spec.Queue, spec.IdempotencyKey, spec.MaxAttempts, spec.Priority = f.queue, f.key, f.maxAttempts, f.priority
	spec.Export, spec.OnRetry, spec.Tenant = f.export, onRetry, f.tenant
	if err := addLabels(&spec, f.labels); err != nil {
		return err
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
	if err := checkSpec(spec, a.cfg.Policy); err != nil {
		return err
	}
	return a.withStore(cmd, func(ctx context.Context, s tasks.Store) error {
		sha, err := s.PutModule(ctx, wasm)
		if err != nil {
			return err
		}
		nameModule(ctx, a, s, sha, path)
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
			if f.asJSON {
				return a.printJSON(server.ViewOf(t))
			}
			fmt.Fprintln(a.stdout, t.ID)
			return nil
		}
		wctx := ctx
		if f.waitTimeout > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, f.waitTimeout)
			defer cancel()
		}
		id := t.ID
		t, err = tasks.WaitFor(wctx, s, id, 50*time.Millisecond)
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				return &exitError{code: exitWaitTimeout, err: fmt.Errorf("task %d did not end within --wait-timeout %s: it stays in the queue; "+
					"see runner tasks show %d, or runner tasks cancel %d", id, f.waitTimeout, id, id)}
			}
			return fmt.Errorf("waiting for task %d: %w", id, err)
		}
		if f.asJSON {
			if err := a.printJSON(server.ViewOf(t)); err != nil {
				return err
			}
		}
		switch t.State {
		case tasks.StateSucceeded:
		case tasks.StateDead:
			return &exitError{code: exitTaskDead, err: fmt.Errorf("task %d ended dead: %s (failed attempts: %d; runner tasks show %d)",
				id, termSafe(t.LastError), t.Failures, id)}
		case tasks.StateCancelled:
			return &exitError{code: exitTaskCancelled, err: fmt.Errorf("task %d was cancelled", id)}
		default:
			return fmt.Errorf("task %d ended %s", id, t.State)
		}
		if f.asJSON {
			return nil
		}
		_, err = a.stdout.Write(t.Result)
		return err
	})
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
	b, err := bytesize.ReadAtMost(r, a.cfg.Policy.MaxInput)
	if err != nil {
		return nil, usageErrorf("%s: %v (limits.max_input %s); for big data, mount a directory (--mount, mounts.allow) "+
			"and pass the guest a path", name, err, bytesize.Format(a.cfg.Policy.MaxInput))
	}
	return b, nil
}

// printJSON writes v to stdout as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// addLabels adds the --label flags' KEY=VALUE pairs to spec's labels.
func addLabels(spec *tasks.Spec, labels []string) error {
	for _, kv := range labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErrorf("--label %q: want KEY=VALUE", kv)
		}
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[k] = v
	}
	return nil
}
