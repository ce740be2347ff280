package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks/storeurl"
)

// Exit codes of the runner itself (a guest's outcome has its own, see
// outcomeExitCodes in exitcodes.go).
const (
	exitOK       = 0
	exitInternal = 1
	exitUsage    = 2
	// exitNotFound: no task with that id, or no store at all.
	exitNotFound = 3
	// exitTaskDead, exitTaskCancelled and exitWaitTimeout are submit
	// --wait's: the task ended dead or cancelled, or --wait-timeout passed
	// first (the task stays queued).
	exitTaskDead      = 4
	exitTaskCancelled = 5
	exitWaitTimeout   = 6
)

// exitCodesHelp documents the runner's own exit codes.
const exitCodesHelp = `Exit codes:
  0  success
  1  error: a store error, or the command does not apply (cancel a task that ended)
  2  bad usage or configuration
  3  not found: no task with that id, or no store (nothing submitted yet)
  4  submit --wait: the task ended dead
  5  submit --wait: the task was cancelled
  6  submit --wait: --wait-timeout passed first (the task stays in the queue)
  7  batch: some inputs failed (see the summary)
 75  batch: stopped by a signal before every input was done (run it again to resume)
runner run exits with the guest's outcome instead (see runner run --help).`

// exitError carries the process exit code of a failed command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// exitCode maps run's error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitInternal
}

// app holds what every command shares: one viper instance, the config and
// the logger, built in PersistentPreRunE once flags are parsed.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	configFile     string
	v              *viper.Viper
	cfg            *Config
	log            *zap.Logger
	dirs           dataDirs
	// setupStart and setupEnd bracket setup (configuration and logger),
	// for the debug log of a command's phases (diag.go).
	setupStart, setupEnd time.Time
	// api is runner serve's API server once started: the pool's events
	// feed its attempt metrics (observeEvent).
	api atomic.Pointer[server.Server]
	// probe is runner serve's in-process GET /healthz, the systemd
	// watchdog's health check (sdnotify.go).
	probe healthProbe
}

// run is the whole program, testable: it parses args and runs a command.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if a.log != nil {
		_ = a.log.Sync()
	}
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) && strings.HasPrefix(err.Error(), "unknown command") {
			err = &exitError{code: exitUsage, err: err}
		}
		if ee == nil || !ee.quiet() {
			fmt.Fprintln(stderr, "runner:", termLines(err.Error()))
		}
	}
	return err
}

// quiet reports an exit whose reason was already logged (a guest outcome).
func (e *exitError) quiet() bool { return e.err == errOutcomeLogged }

var errOutcomeLogged = errors.New("outcome logged")

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "runner",
		Short: "Run untrusted WebAssembly tasks in sandboxes, from a durable queue, and stop without losing work",
		Long: `runner runs WebAssembly (WASI) tasks in wazero sandboxes.

  runner run MODULE.wasm         run one task now, no queue
  runner batch MODULE.wasm --in DIR --out DIR   run it over every file of a folder (resumable)
  runner call MODULE.wasm FUNC   call one export of a plugin once (bytes in, bytes out)
  runner serve                   work the durable queue (SQLite in ./stint-data by default)
  runner submit MODULE.wasm      queue a task (--wait to wait for its result)
  runner tasks list|stats|show|cancel|retry|result|prune
  runner config                  print the effective configuration and where each value came from
  runner config init [PATH]      write a commented YAML file with every key at its default
  runner version                 the version, commit, Go and wazero versions (--json)

Every configuration key has three spellings: shutdown.budget in the YAML
file (--config), RUNNER_SHUTDOWN_BUDGET in the environment, --shutdown-budget
on the command line; flags win over env, env over the file. The variables
and YAML keys work with every command; a key's flag is on the commands that
use it (serve and config take them all; see each command's --help).

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setup(cmd)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.configFile, "config", "", "YAML configuration file (or RUNNER_CONFIG)")
	root.AddCommand(a.versionCommand(), a.configCommand(), a.runCommand(), a.batchCommand(), a.serveCommand(),
		a.submitCommand(), a.tasksCommand(), a.callCommand(), a.runnersCommand(), a.scheduleCommand(), a.tenantsCommand(), a.queuesCommand(),
		a.cacheCommand())
	addKeyFlags(root)
	markUsageErrors(root)
	return root
}

// markUsageErrors makes cobra's own errors (a bad flag, a wrong number of
// arguments) exit with exitUsage; every other error is exitInternal.
func markUsageErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: exitUsage, err: err} })
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markUsageErrors(sub)
	}
}

func (a *app) setup(cmd *cobra.Command) error {
	a.setupStart = time.Now()
	defer func() { a.setupEnd = time.Now() }()
	v, err := newViper(cmd.Flags(), a.configFile)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(v)
	if err != nil {
		return err
	}
	cfg.DataDirSet = source(v, cmd.Flags(), "data_dir") != "default"
	a.v, a.cfg = v, cfg
	a.log = newLogger(cfg, a.stderr)
	return nil
}

func newLogger(cfg *Config, w io.Writer) *zap.Logger {
	level := zap.NewAtomicLevel()
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	format := cfg.LogFormat
	if format == "" {
		format = "json"
		if _, ok := terminalFd(w); ok {
			format = "console"
		}
	}
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if format == "console" {
		ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	} else {
		enc = zapcore.NewJSONEncoder(ec)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), level))
}

func (a *app) configCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value came from",
		Long: `Print every configuration key, its effective value, and its source:
default, file, env (RUNNER_*) or flag. Flags win over env, env over the file.
With --json, an object of key: {"value": ..., "source": ...} (list keys'
values are arrays; http.token shows "(set)", and so does a password in the
store URL). runner config init writes a
commented YAML file with every key at its default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			type entry struct {
				Value  any    `json:"value"`
				Source string `json:"source"`
			}
			all := map[string]entry{}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			for _, k := range configKeys {
				val := a.v.GetString(k.name)
				if k.name == "http.token" && val != "" {
					val = "(set)"
				}
				if k.name == "store" {
					val = storeurl.Redact(val)
				}
				var jv any = val
				if k.kind == kindList {
					l := splitList(a.v.Get(k.name))
					val, jv = fmt.Sprint(l), append([]string{}, l...)
				}
				if k.name == "workers" && val == "" {
					val = fmt.Sprintf("%d", a.cfg.Workers)
					jv = val
				}
				src := source(a.v, cmd.Flags(), k.name)
				if asJSON {
					all[k.name] = entry{jv, src}
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", k.name, termSafe(val), src)
			}
			if asJSON {
				return a.printJSON(all)
			}
			// Columns as wide as their longest cell: a long key or value
			// does not push its row out of line.
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print a JSON object: each key with its "value" and "source"`)
	cmd.AddCommand(a.configInitCommand())
	return cmd
}
