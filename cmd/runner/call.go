package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/internal/hostdir"
	"github.com/stint-run/stint/sandbox"
)

// callFlags are the flags of `runner call`: the plugin's manifest and the
// call's input.
type callFlags struct {
	input, timeout, memory, outputCap string
	grants, config, env, mounts       []string
	work                              string       // --work (callwork.go)
	try                               callTryFlags // call_try.go
}

func (a *app) callCommand() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call MODULE.wasm FUNC | call --manifest M.json FUNC",
		Short: "Call one export of a plugin module once (bytes in, bytes out) and print its output",
		Long: `Call the export FUNC of a plugin module once, in a fresh instance, and
print its output on stdout; what the guest writes to stderr is passed
through. A plugin is a module whose exports are called by name under Stint's
calling convention (docs/plugins.md): the input goes into memory the
module's alloc export returns, FUNC(ptr, len) returns (ptr << 32 | len) of
its output. A module that exports _initialize (a reactor: a Go plugin
built with -buildmode=c-shared) is initialized first.

The plugin's manifest is deny by default: it may import only the host
modules --grant names (wasi_snapshot_preview1 for WASI, which a Go plugin
needs; stint for stop_requested and deadline_ms; stint_plugin for
config_get; extism:host/env for a plugin built with Extism's PDKs, whose
exports FUNC() -> i32 take input and give output through that module), and
sees only the --config values, --env variables and --mount directories
given. The CLI has no host modules of its own: an
embedding app registers those (sandbox.Config.HostModules).

Ctrl-C (SIGINT) or SIGTERM once asks the plugin to stop (stop_requested =
1); a second signal stops it by force. The exit codes are those of
runner run (0 succeeded, 11 trapped, 12 forced, 13 timed out, 14 memory
limit, 15 output limit, 16 invalid module, 17 bad import, 18 work limit,
19 unstoppable; 2 bad usage).

An Extism plugin may instead be described by Extism's JSON manifest
(--manifest; its wasm path is relative to the manifest's directory, a url
is fetched only with --fetch and must have a hash: a GET over https from a
public address, http only with --fetch-insecure-http, a loopback, private
or special-purpose address only if --fetch-allow-addr names it), and may
reach over HTTP only the hosts its manifest's allowed_hosts (or
--allow-host) names.
The output is the output: nothing else is printed unless the call does not
succeed (one line on stderr saying why), --verbose or --log-level is given.

Compiled modules are cached: in data_dir/cache if data_dir exists, else in
the user's cache directory (stint under $XDG_CACHE_HOME or ~/.cache,
created 0700; sandbox.user_cache=off for none), pruned to
sandbox.cache_max_bytes.`,
		Example: `  runner call plugin_basic.wasm upper --input - <<< "hi"
  runner call upper.wasm upper --grant wasi_snapshot_preview1 --input name.txt     # a C or Go plugin needs WASI
  runner call plugin.wasm greet --grant stint_plugin --config greeting=hi --input - <<< "Ada"
  runner call plugin_basic.wasm spin --timeout 2s                                  # exit 13: timed out
  runner call greet.wasm greet --grant extism:host/env --grant wasi_snapshot_preview1 --input - <<< "Ada"   # an Extism Go PDK plugin
  runner call --manifest greet.json greet --input-text Ada --loop 1000                                      # an Extism manifest; p50/p99 of warm calls`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			quiet := !f.try.verbose && source(a.v, cmd.Flags(), "log.level") == "default"
			return a.callPlugin(cmd.Context(), args, f, quiet)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "file whose bytes are the call's input, or - for this process's stdin (default: empty; the text itself: --input-text)")
	fl.StringVar(&f.timeout, "timeout", "", "the call's timeout, like 5s (default 10s; at most limits.max_timeout)")
	fl.StringVar(&f.memory, "memory", "", "memory limit, like 64MiB (default limits.memory)")
	fl.StringVar(&f.outputCap, "output-cap", "", "most bytes the call may return, like 1MiB (default 1MiB)")
	fl.StringArrayVar(&f.grants, "grant", nil, "host module the plugin may import (repeatable): wasi_snapshot_preview1, stint, stint_plugin, extism:host/env")
	fl.StringArrayVar(&f.config, "config", nil, "K=V configuration value the plugin may read with stint_plugin.config_get (repeatable)")
	fl.StringArrayVar(&f.env, "env", nil, "K=V environment variable for the plugin (repeatable; needs --grant wasi_snapshot_preview1)")
	fl.StringArrayVar(&f.mounts, "mount", nil, "host:guest[:rw] directory to give the plugin (repeatable; read-only unless :rw; needs WASI)")
	fl.StringVar(&f.work, "work", "", callWorkUsage)
	f.try.register(fl)
	return cmd
}

// manifest builds the plugin's manifest from the flags.
func (f *callFlags) manifest(cfg *Config, name string) (sandbox.Manifest, error) {
	man := sandbox.Manifest{Name: name, HostModules: f.grants, Fresh: true}
	var err error
	if man.Env, err = parseEnv(f.env); err != nil {
		return man, err
	}
	if len(f.env) == 0 {
		man.Env = nil
	}
	if len(f.config) > 0 {
		if man.Config, err = parseEnv(f.config); err != nil {
			return man, usageErrorf("--config: want KEY=VALUE (%v)", err)
		}
	}
	for _, s := range f.mounts {
		m, err := parseMount(s)
		if err != nil {
			return man, err
		}
		if m.HostPath, err = hostdir.Resolve(m.HostPath); err != nil {
			return man, usageErrorf("--mount: %v", err)
		}
		man.Mounts = append(man.Mounts, sandbox.Mount{HostPath: m.HostPath, GuestPath: m.GuestPath, Writable: m.Writable})
	}
	if f.timeout != "" {
		if man.Limits.Timeout, err = parseDuration(f.timeout); err != nil {
			return man, usageErrorf("--timeout: %v", err)
		}
		if man.Limits.Timeout > cfg.Policy.Max.Timeout {
			return man, usageErrorf("--timeout %s is over limits.max_timeout (%s)", man.Limits.Timeout, cfg.Policy.Max.Timeout)
		}
	}
	if f.memory != "" {
		n, err := parseSize(f.memory)
		if err != nil {
			return man, usageErrorf("--memory: %v", err)
		}
		if n > cfg.Policy.Max.MemoryBytes {
			return man, usageErrorf("--memory %s is over limits.max_memory (%s)", f.memory, bytesize.Format(cfg.Policy.Max.MemoryBytes))
		}
		man.Limits.MemoryBytes = n
	}
	if f.outputCap != "" {
		n, err := parseSize(f.outputCap)
		if err != nil || n <= 0 {
			return man, usageErrorf("--output-cap %s: want a positive size", f.outputCap)
		}
		man.Limits.MaxOutput = n
	}
	if err := applyCallWork(f.work, &man); err != nil {
		return man, err
	}
	man.Limits.MaxInput = sandbox.MaxPluginBytes
	man.Limits.MaxStderr = cfg.Limits.Stderr
	man.Limits.MaxStdout = cfg.Limits.Stdout
	return man, nil
}

func (a *app) callPlugin(ctx context.Context, args []string, f callFlags, quiet bool) error {
	path, fn, wasm, man, err := a.callTarget(ctx, args, &f) // call_try.go
	if err != nil {
		return err
	}
	input, err := a.callInput(&f)
	if err != nil {
		return err
	}
	if f.try.manifestFile == "" {
		if missing := ungranted(wasm, man.HostModules); len(missing) > 0 {
			return a.callOutcome(path, fn, quiet, &sandbox.Outcome{Kind: sandbox.KindBadImport, Message: ungrantedMessage(missing)})
		}
	}

	rt, err := a.newRuntime(ctx, false)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close(context.Background()) }()

	// Signals: the first asks the plugin to stop, the second forces it.
	stop, hard, release := a.stopOnSignals(ctx, "plugin")
	defer release()

	p, err := rt.LoadPlugin(hard, wasm, man)
	a.logCacheUse(rt)
	var out *sandbox.Outcome
	switch {
	case err == nil:
		defer func() { _ = p.Close(context.Background()) }()
		a.nameInCache(rt, p.Module(), path)
		out, err = a.callLoop(hard, p, fn, input, sandbox.CallOptions{Stop: stop}, f.try.loop)
		if err != nil {
			return usageErrorf("%v", err)
		}
	case isModuleError(err):
		out = sandbox.OutcomeFromError(err)
	default:
		return usageErrorf("%v", err)
	}
	return a.callOutcome(path, fn, quiet, out)
}

// callOutcome prints a call's outcome: the guest's stderr and output, and
// why it did not succeed (one line, or the log line unless quiet), and
// returns its exit code.
func (a *app) callOutcome(path, fn string, quiet bool, out *sandbox.Outcome) error {
	_, _ = a.stderr.Write(out.Stderr)
	_, _ = a.stdout.Write(out.Output)
	if !quiet {
		a.logOutcome(path+" "+fn, out)
	} else if !out.Success() {
		fmt.Fprintf(a.stderr, "runner: %s %s: %s\n", filepath.Base(path), fn, termLines(out.String()))
	}
	if code := outcomeExitCode(out.Kind); code != 0 {
		return &exitError{code: code, err: errOutcomeLogged}
	}
	return nil
}

func isModuleError(err error) bool {
	var me *sandbox.ModuleError
	return errors.As(err, &me)
}

// wasiModule is WASI's import module, which --grant gives.
const wasiModule = "wasi_snapshot_preview1"

// ungranted is the host modules wasm imports functions from that --grant
// does not name (grants), when a --grant would give each: none when wasm
// also imports a module the runner does not have (LoadPlugin says which),
// or cannot be read (LoadPlugin says why).
func ungranted(wasm []byte, grants []string) []string {
	mods, err := sandbox.ImportedModules(wasm)
	if err != nil {
		return nil
	}
	grantable := map[string]bool{wasiModule: true, sandbox.HostModule: true, sandbox.PluginModule: true, sandbox.ExtismModule: true}
	for _, m := range testHostModules() {
		grantable[m.Name] = true
	}
	var missing []string
	for _, m := range mods {
		if !grantable[m] {
			return nil
		}
		if !slices.Contains(grants, m) {
			missing = append(missing, m)
		}
	}
	return missing
}

// ungrantedMessage says which --grant flags a module needs.
func ungrantedMessage(missing []string) string {
	flags := make([]string, len(missing))
	for i, m := range missing {
		flags[i] = "--grant " + m
	}
	return fmt.Sprintf("the module imports functions from host modules no --grant names: %s (add %s)",
		strings.Join(missing, ", "), strings.Join(flags, " "))
}
