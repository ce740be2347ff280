package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stint-run/stint/tasks"
)

// taskFlags are the flags `run` and `submit` share: what the guest gets.
type taskFlags struct {
	input, timeout, memory              string
	stdoutCap, stderrCap, checkpointCap string
	disk, diskFiles, work               string
	args, env, mounts                   []string
}

func (f *taskFlags) register(fl *pflag.FlagSet, mountHelp string) {
	fl.StringVar(&f.input, "input", "", "file given to the guest on stdin, or - for this process's stdin (default: empty)")
	fl.StringVar(&f.timeout, "timeout", "", "attempt timeout, like 30s (default limits.timeout)")
	fl.StringVar(&f.memory, "memory", "", "memory limit, like 64MiB (default limits.memory)")
	fl.StringVar(&f.stdoutCap, "stdout-cap", "", "most bytes the guest may write to stdout, like 8MiB (default limits.stdout)")
	fl.StringVar(&f.stderrCap, "stderr-cap", "", "most bytes the guest may write to stderr (default limits.stderr)")
	fl.StringVar(&f.checkpointCap, "checkpoint-cap", "", "largest checkpoint the guest may save (default limits.checkpoint)")
	fl.StringVar(&f.disk, "disk", "", "disk budget of the writable mounts, like 256MiB: bytes written or added to files; past it the guest gets ENOSPC (default limits.disk)")
	fl.StringVar(&f.diskFiles, "disk-files", "", "files, directories and links the guest may create in its writable mounts; past it ENOSPC (default limits.disk_files)")
	fl.StringVar(&f.work, "work", "", "work budget of an attempt, in work units: past it the guest ends with outcome work_limit, deterministically (default limits.work; needs sandbox.interrupt=checks)")
	fl.StringArrayVar(&f.args, "arg", nil, "argument for the guest (repeatable; or put them after --: MODULE.wasm -- ARGS...)")
	fl.StringArrayVar(&f.env, "env", nil, "K=V environment variable for the guest (repeatable; nothing else is passed)")
	fl.StringArrayVar(&f.mounts, "mount", nil, mountHelp)
}

// taskInput is what the flags ask for: the task's spec (its Args, Env,
// Mounts and Limits, zero limits meaning the defaults) and where its input
// comes from.
type taskInput struct {
	// inputFile is --input FILE, fromStdin --input -: the caller reads
	// them (run streams them, submit stores them in spec.Input).
	inputFile string
	fromStdin bool
	spec      tasks.Spec
}

// parse reads every flag into a tasks.Spec, the shape the API's JSON and
// the embedding API build too. It only parses: the spec is checked against
// the runner's policy (limits.max_*, mounts.allow) by tasks.CheckSpec,
// the one check, which `runner run` calls with any mount allowed.
func (f *taskFlags) parse() (taskInput, error) {
	t := taskInput{spec: tasks.Spec{Args: f.args}}
	switch f.input {
	case "":
	case "-":
		t.fromStdin = true
	default:
		fi, err := os.Stat(f.input)
		if err == nil && fi.IsDir() {
			err = fmt.Errorf("%s is a directory", f.input)
		}
		if err != nil {
			return t, usageErrorf("--input: %v", err)
		}
		t.inputFile = f.input
	}
	l := &t.spec.Limits
	if f.timeout != "" {
		d, err := parseDuration(f.timeout)
		if err != nil {
			return t, usageErrorf("--timeout: %v", err)
		}
		l.Timeout = d
	}
	for _, c := range []struct {
		flag, val string
		dst       *int64
		// zero: whether 0 is allowed (--memory 0 is the default)
		zero bool
	}{
		{"--memory", f.memory, &l.MemoryBytes, true},
		{"--stdout-cap", f.stdoutCap, &l.Stdout, false},
		{"--stderr-cap", f.stderrCap, &l.Stderr, false},
		{"--checkpoint-cap", f.checkpointCap, &l.Checkpoint, false},
		{"--disk", f.disk, &l.DiskBytes, false},
	} {
		if c.val == "" {
			continue
		}
		n, err := parseSize(c.val)
		if err != nil {
			return t, usageErrorf("%s: %v", c.flag, err)
		}
		if n <= 0 && !c.zero {
			return t, usageErrorf("%s %s: want a positive size", c.flag, c.val)
		}
		*c.dst = n
	}
	if f.diskFiles != "" {
		var n int
		if !isInt(f.diskFiles, &n) || n <= 0 {
			return t, usageErrorf("--disk-files %s: want a positive number", f.diskFiles)
		}
		l.DiskFiles = int64(n)
	}
	if f.work != "" {
		var n int
		if !isInt(f.work, &n) || n <= 0 {
			return t, usageErrorf("--work %s: want a positive number of work units", f.work)
		}
		l.Work = int64(n)
	}
	env, err := parseEnv(f.env)
	if err != nil {
		return t, err
	}
	if len(env) > 0 {
		t.spec.Env = env
	}
	for _, s := range f.mounts {
		m, err := parseMount(s)
		if err != nil {
			return t, err
		}
		t.spec.Mounts = append(t.spec.Mounts, m)
	}
	return t, nil
}

// onRetryHelp is the help of --on-retry (registerOnRetry).
const onRetryHelp = "on a retry after a failure of a task with snapshots (snapshots.enabled): resume from its last snapshot (default) or restart from the beginning (after a drain or a lost runner it resumes either way)"

// registerOnRetry adds --on-retry (tasks.Spec.OnRetry) to a command that
// queues tasks, which can be retried (submit; not run, which has no
// retries, so it is not among the taskFlags). parseOnRetry reads its value.
func registerOnRetry(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "on-retry", "", onRetryHelp)
	_ = cmd.RegisterFlagCompletionFunc("on-retry",
		cobra.FixedCompletions([]string{tasks.OnRetryResume, tasks.OnRetryRestart}, cobra.ShellCompDirectiveNoFileComp))
}

// parseOnRetry is --on-retry's value as tasks.Spec.OnRetry: "" when not
// given (resume, the default), else resume or restart; anything else is
// a usage error naming the flag.
func parseOnRetry(v string) (string, error) {
	switch v {
	case "", tasks.OnRetryResume, tasks.OnRetryRestart:
		return v, nil
	}
	return "", usageErrorf("--on-retry %q: want %s (the default: resume from the task's last snapshot) or %s (start from the beginning)",
		v, tasks.OnRetryResume, tasks.OnRetryRestart)
}

// moduleAndGuestArgs is the Args of `run` and `submit`: MODULE, then
// optionally `--` and the guest's own arguments (which may look like
// flags: cobra leaves everything after `--` alone).
func moduleAndGuestArgs(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	switch {
	case len(args) == 0:
		return fmt.Errorf("accepts 1 arg(s), received 0: want MODULE.wasm")
	case dash == 0:
		return fmt.Errorf("want MODULE.wasm before --, then the guest's arguments")
	case dash < 0 && len(args) > 1:
		return fmt.Errorf("accepts 1 arg(s), received %d: pass the guest's arguments after --, like runner %s MODULE.wasm -- %s",
			len(args), cmd.Name(), strings.Join(args[1:], " "))
	case dash > 1:
		return fmt.Errorf("accepts 1 arg(s) before --, received %d: %s", dash, strings.Join(args[:dash], " "))
	}
	return nil
}

// guestArgs are --arg's values followed by the arguments after `--`.
func guestArgs(flagArgs, args []string) []string {
	if len(args) <= 1 {
		return flagArgs
	}
	return append(append([]string{}, flagArgs...), args[1:]...)
}

// checkSpec is tasks.CheckSpec as the CLI reports it: a usage error, with
// the configuration keys that set the maxima.
func checkSpec(spec tasks.Spec, p tasks.Policy) error {
	err := tasks.CheckSpec(spec, p)
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "over the runner's maximum") {
		return usageErrorf("%v\n(the maxima are the limits.max_* keys; runner config shows them)", err)
	}
	return usageErrorf("%v", err)
}
