package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/extism"
)

// callTryFlags are runner call's flags for trying a plugin: an Extism
// manifest, a literal input, a loop of warm calls, the log.
type callTryFlags struct {
	manifestFile string
	fetch        bool
	fetchHTTP    bool
	fetchAddrs   []string
	allowHosts   []string
	inputText    string
	loop         int
	verbose      bool
}

func (f *callTryFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.manifestFile, "manifest", "", "Extism JSON manifest of the plugin (wasm, config, memory, timeout_ms, allowed_paths, allowed_hosts); then give only FUNC")
	fl.BoolVar(&f.fetch, "fetch", false, "with --manifest: fetch a wasm entry's url (it must have a hash): GET over https, from a public address only")
	fl.BoolVar(&f.fetchHTTP, "fetch-insecure-http", false, "with --fetch: allow an http url (and http redirects); default https only")
	fl.StringArrayVar(&f.fetchAddrs, "fetch-allow-addr", nil, "with --fetch: an IP address the fetch may reach although loopback, private or special-purpose, with an optional :port (127.0.0.1:8080; repeatable)")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "host an Extism plugin may reach with HTTP: a name, an IP address or a glob like *.example.com (repeatable; loopback and private addresses only if named)")
	fl.StringVar(&f.inputText, "input-text", "", "the call's input, literally (like extism call --input)")
	fl.IntVar(&f.loop, "loop", 1, "call N times in one warm instance; prints the last output, and the first call's time and the p50/p99 of the warm calls on stderr")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log the outcome as a log line (default: only the output, and a one-line reason when the call did not succeed)")
}

// callTarget is the module, the export and the manifest runner call's
// arguments and flags name.
func (a *app) callTarget(ctx context.Context, args []string, f *callFlags) (path, fn string, wasm []byte, man sandbox.Manifest, err error) {
	t := &f.try
	if t.loop < 1 {
		return "", "", nil, man, usageErrorf("--loop %d: want 1 or more", t.loop)
	}
	if t.inputText != "" && f.input != "" {
		return "", "", nil, man, usageErrorf("--input and --input-text: give one")
	}
	if t.manifestFile == "" {
		if len(args) != 2 {
			return "", "", nil, man, usageErrorf("want MODULE.wasm FUNC (or --manifest M.json FUNC)")
		}
		if t.fetch || t.fetchHTTP || len(t.fetchAddrs) > 0 {
			return "", "", nil, man, usageErrorf("--fetch (and --fetch-insecure-http, --fetch-allow-addr) go with --manifest")
		}
		path, fn = args[0], args[1]
		if wasm, err = a.readModule(path); err != nil {
			return "", "", nil, man, err
		}
		if man, err = f.manifest(a.cfg, filepath.Base(path)); err != nil {
			return "", "", nil, man, err
		}
		man.HTTP.AllowedHosts = t.allowHosts
		man.Fresh = t.loop == 1
		return path, fn, wasm, man, nil
	}
	if len(args) != 1 {
		return "", "", nil, man, usageErrorf("with --manifest, give only FUNC")
	}
	if len(f.grants) > 0 || len(f.config) > 0 || len(f.env) > 0 || len(f.mounts) > 0 || len(t.allowHosts) > 0 {
		return "", "", nil, man, usageErrorf("--grant, --config, --env, --mount and --allow-host do not go with --manifest: the manifest says what the plugin may do")
	}
	if !t.fetch && (t.fetchHTTP || len(t.fetchAddrs) > 0) {
		return "", "", nil, man, usageErrorf("--fetch-insecure-http and --fetch-allow-addr go with --fetch")
	}
	path, fn = t.manifestFile, args[0]
	fh, err := os.Open(path)
	if err != nil {
		return "", "", nil, man, usageErrorf("--manifest: %v", err)
	}
	data, err := bytesize.ReadAtMost(fh, 16<<20)
	_ = fh.Close()
	if err != nil {
		return "", "", nil, man, usageErrorf("--manifest %s: %v", path, err)
	}
	man, wasm, err = sandbox.ManifestFromExtism(ctx, data, sandbox.ExtismManifestOptions{Dir: filepath.Dir(path), FetchURLs: t.fetch,
		FetchInsecureHTTP: t.fetchHTTP, FetchAllowAddrs: t.fetchAddrs,
		MaxWasmBytes: int64(a.cfg.Sandbox.ModuleLimits.WithDefaults().MaxModuleSize)})
	if err != nil {
		return "", "", nil, man, usageErrorf("--manifest %s: %v", path, err)
	}
	// ManifestFromExtism grants extism:host/user to a module that imports
	// it; the runner has no such functions (an embedding app gives them,
	// extism.HostModules): without the grant, the load says so.
	man.HostModules = slices.DeleteFunc(man.HostModules, func(h string) bool { return h == extism.UserModule && !hasTestModule(h) })
	// The command line's limits over the manifest's.
	flagMan, err := f.manifest(a.cfg, man.Name)
	if err != nil {
		return "", "", nil, man, err
	}
	if f.timeout != "" {
		man.Limits.Timeout = flagMan.Limits.Timeout
	}
	if f.memory != "" {
		man.Limits.MemoryBytes = flagMan.Limits.MemoryBytes
	}
	if man.Limits.MemoryBytes > a.cfg.Policy.Max.MemoryBytes {
		return "", "", nil, man, usageErrorf("--manifest %s: memory.max_pages is over limits.max_memory (%s)", path, bytesize.Format(a.cfg.Policy.Max.MemoryBytes))
	}
	if man.Limits.Timeout > a.cfg.Policy.Max.Timeout {
		return "", "", nil, man, usageErrorf("--manifest %s: timeout_ms is over limits.max_timeout (%s)", path, a.cfg.Policy.Max.Timeout)
	}
	man.Limits.MaxOutput, man.Limits.MaxInput = flagMan.Limits.MaxOutput, flagMan.Limits.MaxInput
	man.Limits.MaxStderr, man.Limits.MaxStdout = flagMan.Limits.MaxStderr, flagMan.Limits.MaxStdout
	return path, fn, wasm, man, nil
}

// callInput is the call's input: --input-text, or --input's file or stdin.
func (a *app) callInput(f *callFlags) ([]byte, error) {
	if f.try.inputText != "" {
		return []byte(f.try.inputText), nil
	}
	switch f.input {
	case "":
		return nil, nil
	case "-":
		in, err := bytesize.ReadAtMost(a.stdin, sandbox.MaxPluginBytes)
		if err != nil {
			return nil, usageErrorf("--input: stdin: %v", err)
		}
		return in, nil
	}
	fh, err := os.Open(f.input)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageErrorf("--input %s: no such file (--input reads a file, or stdin with -; for the input itself, give --input-text %s)",
			termSafe(f.input), shellQuote([]string{f.input}))
	}
	if err != nil {
		return nil, usageErrorf("--input: %v", err)
	}
	defer func() { _ = fh.Close() }()
	if fi, err := fh.Stat(); err == nil && fi.IsDir() {
		return nil, usageErrorf("--input %s: a directory, not a file (for the input itself, give --input-text)", termSafe(f.input))
	}
	in, err := bytesize.ReadAtMost(fh, sandbox.MaxPluginBytes)
	if err != nil {
		return nil, usageErrorf("--input %s: %v", f.input, err)
	}
	return in, nil
}

// callLoop calls fn n times (n >= 1) and returns the last outcome, or the
// first that did not succeed. With n > 1 it prints the times on stderr:
// the first call's, and the p50 and p99 of the others (warm, unless a
// call discarded its instance).
func (a *app) callLoop(ctx context.Context, p *sandbox.Plugin, fn string, input []byte, opts sandbox.CallOptions, n int) (*sandbox.Outcome, error) {
	times := make([]time.Duration, 0, n)
	var out *sandbox.Outcome
	for i := 0; i < n; i++ {
		start := time.Now()
		o, err := p.CallWith(ctx, fn, input, opts)
		took := time.Since(start)
		if err != nil {
			return nil, err
		}
		out = o
		times = append(times, took)
		if !o.Success() {
			break
		}
	}
	if n > 1 {
		fmt.Fprintln(a.stderr, loopSummary(times))
	}
	return out, nil
}

// loopSummary is --loop's line: the calls made, the first's time, the
// warm calls' p50 and p99.
func loopSummary(times []time.Duration) string {
	s := fmt.Sprintf("runner: %d calls: first %s", len(times), roundDuration(times[0]))
	warm := append([]time.Duration(nil), times[1:]...)
	if len(warm) == 0 {
		return s
	}
	sort.Slice(warm, func(i, j int) bool { return warm[i] < warm[j] })
	return s + fmt.Sprintf(", warm p50 %s p99 %s (%d calls)", roundDuration(percentile(warm, 50)), roundDuration(percentile(warm, 99)), len(warm))
}

// percentile is the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100 // ceil(n*p/100)
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}

// roundDuration rounds d to about three significant digits.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	}
	return d
}

// logCacheUse logs at debug what the compilation cache gave the command.
func (a *app) logCacheUse(rt *sandbox.Runtime) {
	st := rt.Stats()
	a.log.Debug("compilation cache use", zap.Int64("compilations", st.Compilations),
		zap.Int64("prepared_cache_hits", st.PreparedCacheHits), zap.Int64("cache_failures", st.CacheFailures))
}

// hasTestModule reports whether the runner has the host module name of
// its own (testHostModules: only the end-to-end tests' build has any).
func hasTestModule(name string) bool {
	for _, m := range testHostModules() {
		if m.Name == name {
			return true
		}
	}
	return false
}
