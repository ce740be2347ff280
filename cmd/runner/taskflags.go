package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stint-run/stint/sandbox"
)

// taskFlags are the flags `run` and `submit` share: what the guest gets.
type taskFlags struct {
	input, timeout, memory              string
	stdoutCap, stderrCap, checkpointCap string
	args, env, mounts                   []string
}

func (f *taskFlags) register(fl *pflag.FlagSet, mountHelp string) {
	fl.StringVar(&f.input, "input", "", "file given to the guest on stdin, or - for this process's stdin (default: empty)")
	fl.StringVar(&f.timeout, "timeout", "", "attempt timeout, like 30s (default limits.timeout)")
	fl.StringVar(&f.memory, "memory", "", "memory limit, like 64MiB (default limits.memory)")
	fl.StringVar(&f.stdoutCap, "stdout-cap", "", "most bytes the guest may write to stdout, like 8MiB (default limits.stdout)")
	fl.StringVar(&f.stderrCap, "stderr-cap", "", "most bytes the guest may write to stderr (default limits.stderr)")
	fl.StringVar(&f.checkpointCap, "checkpoint-cap", "", "largest checkpoint the guest may save (default limits.checkpoint)")
	fl.StringArrayVar(&f.args, "arg", nil, "argument for the guest (repeatable; or put them after --: MODULE.wasm -- ARGS...)")
	fl.StringArrayVar(&f.env, "env", nil, "K=V environment variable for the guest (repeatable; nothing else is passed)")
	fl.StringArrayVar(&f.mounts, "mount", nil, mountHelp)
}

// taskInput is what the flags ask for; zero limits mean the defaults.
type taskInput struct {
	// inputFile is --input FILE, fromStdin --input -: the caller reads
	// them (run streams them, submit stores them).
	inputFile string
	fromStdin bool
	timeout   time.Duration
	memory    int64
	// stdoutCap, stderrCap and checkpointCap are in bytes (0: default).
	stdoutCap, stderrCap, checkpointCap int64
	args                                []string
	env                                 map[string]string
	mounts                              []sandbox.Mount
}

// parse checks every flag. Mounts are only parsed: the queue checks them
// against mounts.allow (tasks.CheckSpec), `runner run` allows any.
func (f *taskFlags) parse(cfg *Config) (taskInput, error) {
	t := taskInput{args: f.args}
	var err error
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
	if f.timeout != "" {
		if t.timeout, err = parseDuration(f.timeout); err != nil {
			return t, usageErrorf("--timeout: %v", err)
		}
		if t.timeout > cfg.Limits.MaxTimeout {
			return t, usageErrorf("--timeout %s is over limits.max_timeout (%s)", t.timeout, cfg.Limits.MaxTimeout)
		}
	}
	if f.memory != "" {
		if t.memory, err = parseSize(f.memory); err != nil {
			return t, usageErrorf("--memory: %v", err)
		}
		if t.memory > cfg.Limits.MaxMemory {
			return t, usageErrorf("--memory %s is over limits.max_memory (%s)", f.memory, formatSize(cfg.Limits.MaxMemory))
		}
	}
	for _, c := range []struct {
		flag, key, val string
		max            int64
		dst            *int64
	}{
		{"--stdout-cap", "limits.max_stdout", f.stdoutCap, cfg.Limits.MaxStdout, &t.stdoutCap},
		{"--stderr-cap", "limits.max_stderr", f.stderrCap, cfg.Limits.MaxStderr, &t.stderrCap},
		{"--checkpoint-cap", "limits.max_checkpoint", f.checkpointCap, cfg.Limits.MaxCheckpoint, &t.checkpointCap},
	} {
		if c.val == "" {
			continue
		}
		n, err := parseSize(c.val)
		if err != nil {
			return t, usageErrorf("%s: %v", c.flag, err)
		}
		if n <= 0 {
			return t, usageErrorf("%s %s: want a positive size", c.flag, c.val)
		}
		if n > c.max {
			return t, usageErrorf("%s %s is over %s (%s)", c.flag, c.val, c.key, formatSize(c.max))
		}
		*c.dst = n
	}
	if t.env, err = parseEnv(f.env); err != nil {
		return t, err
	}
	for _, s := range f.mounts {
		m, err := parseMount(s)
		if err != nil {
			return t, err
		}
		t.mounts = append(t.mounts, m)
	}
	return t, nil
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
