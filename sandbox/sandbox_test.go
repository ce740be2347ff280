package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint/internal/testwasm/blockhost"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// bound is how long a call may take before a test calls it hung. It is not
// a timing assertion: a healthy run takes microseconds to milliseconds.
const bound = 30 * time.Second

func newRuntime(t *testing.T, cfg sandbox.Config) *sandbox.Runtime {
	t.Helper()
	if cfg.CompileTimeout == 0 {
		// Under -race and a loaded CI machine, a Go guest's compilation,
		// sharing the cores with other tests' slow ones, once outlasted the
		// default budget (60s). The budget is tested where a test sets it.
		cfg.CompileTimeout = 10 * time.Minute
	}
	rt, err := sandbox.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	return rt
}

func compile(t *testing.T, rt *sandbox.Runtime, fixture string) *sandbox.Module {
	t.Helper()
	mod, err := rt.Compile(context.Background(), wat.MustLoad(fixture))
	require.NoError(t, err)
	return mod
}

// runBounded runs fn and fails the test if it has not returned within bound.
func runBounded[T any](t *testing.T, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(bound):
		t.Fatalf("call did not return within %s", bound)
		var zero T
		return zero
	}
}

func run(t *testing.T, rt *sandbox.Runtime, ctx context.Context, mod *sandbox.Module, spec sandbox.Spec) *sandbox.Outcome {
	t.Helper()
	out := runBounded(t, func() *sandbox.Outcome {
		out, err := rt.Run(ctx, mod, spec)
		require.NoError(t, err)
		return out
	})
	return out
}

// signal closes ch on the first write: a guest writing to stderr says it
// has reached its blocking point.
type signalWriter struct {
	once sync.Once
	ch   chan struct{}
}

func newSignal() *signalWriter { return &signalWriter{ch: make(chan struct{})} }

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

func (w *signalWriter) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.ch:
	case <-time.After(bound):
		t.Fatal("guest never reached its blocking point")
	}
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fixture string
		limits  sandbox.Limits
		input   string
		kind    sandbox.Kind
		check   func(t *testing.T, o *sandbox.Outcome)
	}{
		{fixture: "noop", kind: sandbox.KindSucceeded},
		{fixture: "echo", input: "hello", kind: sandbox.KindSucceeded, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Equal(t, "hello", string(o.Stdout))
			require.EqualValues(t, 5, o.StdoutBytes)
		}},
		{fixture: "exit3", kind: sandbox.KindFailed, check: func(t *testing.T, o *sandbox.Outcome) {
			require.EqualValues(t, 3, o.ExitCode)
			require.Contains(t, o.Message, "exit code 3")
		}},
		{fixture: "trap", kind: sandbox.KindTrapped, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Contains(t, o.Message, "unreachable")
			require.Contains(t, o.Stack, "crash")
		}},
		{fixture: "recursion", kind: sandbox.KindTrapped, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Contains(t, o.Message, "call stack over its limit") // callstack.go, before wazero's "stack overflow"
			require.ErrorIs(t, o.Err, sandbox.ErrCallStack)
		}},
		{fixture: "badptr", kind: sandbox.KindTrapped, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Contains(t, o.Message, "stint.checkpoint_save: pointer out of bounds")
			var bp *sandbox.BadPointerError
			require.ErrorAs(t, o.Err, &bp)
		}},
		{fixture: "badptr_load", kind: sandbox.KindTrapped, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Contains(t, o.Message, "stint.checkpoint_load: pointer out of bounds")
		}},
		{fixture: "loop", limits: sandbox.Limits{Timeout: 50 * time.Millisecond}, kind: sandbox.KindTimedOut, check: func(t *testing.T, o *sandbox.Outcome) {
			require.True(t, o.Deadline)
		}},
		{fixture: "stop_aware", limits: sandbox.Limits{Timeout: time.Second, Grace: 900 * time.Millisecond}, kind: sandbox.KindInterrupted, check: func(t *testing.T, o *sandbox.Outcome) {
			require.True(t, o.Deadline, "asked by the deadline, not the caller")
			require.True(t, o.StopRequested)
			require.EqualValues(t, 75, o.ExitCode)
		}},
		{fixture: "memgrow", limits: sandbox.Limits{MemoryBytes: 64 * sandbox.PageSize}, kind: sandbox.KindMemoryLimit, check: func(t *testing.T, o *sandbox.Outcome) {
			require.LessOrEqual(t, o.PeakMemoryBytes, int64(64*sandbox.PageSize))
			require.Greater(t, o.PeakMemoryBytes, int64(sandbox.PageSize))
		}},
		{fixture: "bigmem", limits: sandbox.Limits{MemoryBytes: 64 << 20}, kind: sandbox.KindMemoryLimit, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Contains(t, o.Message, "minimum memory of 2048 pages")
		}},
		{fixture: "flood", limits: sandbox.Limits{MaxStdout: 10000}, kind: sandbox.KindOutputLimit, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Contains(t, o.Message, "stdout over its limit of 10000 bytes")
			require.LessOrEqual(t, len(o.Stdout), 10000)
		}},
		{fixture: "flood_stderr", limits: sandbox.Limits{MaxStderr: 10000}, kind: sandbox.KindOutputLimit, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Contains(t, o.Message, "stderr")
		}},
		{fixture: "progress", limits: sandbox.Limits{Timeout: time.Hour}, kind: sandbox.KindSucceeded, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Equal(t, "deadline\n", string(o.Stdout))
			require.EqualValues(t, 3, o.ProgressDone)
			require.EqualValues(t, 10, o.ProgressTotal)
		}},
		{fixture: "progress", limits: sandbox.Limits{Timeout: -1}, kind: sandbox.KindSucceeded, check: func(t *testing.T, o *sandbox.Outcome) {
			require.Equal(t, "none\n", string(o.Stdout), "no deadline: deadline_ms is -1")
		}},
	}
	for _, mode := range sandbox.InterruptModes() {
		rt := newRuntime(t, sandbox.Config{Interrupt: mode})
		for _, c := range cases {
			t.Run(string(mode)+"/"+c.fixture+"/"+string(c.kind), func(t *testing.T) {
				t.Parallel()
				mod := compile(t, rt, c.fixture)
				out := run(t, rt, context.Background(), mod, sandbox.Spec{Input: []byte(c.input), Limits: c.limits})
				require.Equal(t, c.kind, out.Kind, "outcome: %s", out)
				if c.check != nil {
					c.check(t, out)
				}
			})
		}
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{MaxMemoryBytes: 64 << 20})
	cases := []struct {
		name string
		wasm []byte
		kind sandbox.Kind
		msg  string
		is   error
	}{
		{"empty", nil, sandbox.KindInvalidModule, "empty module", sandbox.ErrInvalidModule},
		{"not wasm", []byte("#!/bin/sh\necho hi\n"), sandbox.KindInvalidModule, "bad magic", sandbox.ErrInvalidModule},
		{"truncated", wat.MustLoad("echo")[:40], sandbox.KindInvalidModule, "", sandbox.ErrInvalidModule},
		{"corrupt", corrupt(wat.MustLoad("echo")), sandbox.KindInvalidModule, "", sandbox.ErrInvalidModule},
		{"unknown import", wat.MustLoad("unknown_import"), sandbox.KindBadImport, "stint.no_such_function", sandbox.ErrBadImport},
		{"unknown module", wat.MustLoad("unknown_module"), sandbox.KindBadImport, "env.whatever", sandbox.ErrBadImport},
		{"Stint's own module", wat.MustLoad("import_internal"), sandbox.KindBadImport, "module imports stint:sandbox.interrupt: stint:sandbox is Stint's own module", sandbox.ErrBadImport},
		{"over max memory", wat.MustLoad("bigmem"), sandbox.KindMemoryLimit, "over the runner's maximum of 1024 pages", sandbox.ErrMemoryLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rt.Compile(context.Background(), c.wasm)
			require.Error(t, err)
			var me *sandbox.ModuleError
			require.ErrorAs(t, err, &me)
			require.Equal(t, c.kind, me.Kind)
			require.ErrorIs(t, err, c.is)
			require.Contains(t, err.Error(), c.msg)
			out := sandbox.OutcomeFromError(err)
			require.Equal(t, c.kind, out.Kind)
		})
	}
	// The runtime is still healthy after all of that.
	out := run(t, rt, context.Background(), compile(t, rt, "echo"), sandbox.Spec{Input: []byte("still ok")})
	require.Equal(t, sandbox.KindSucceeded, out.Kind)
	require.Equal(t, "still ok", string(out.Stdout))
}

// TestFeaturesAndImportsAnsweredFirst: a module that uses a WebAssembly
// feature Stint does not run, or imports what no host module provides, is
// refused with that reason, even when it is also over a module limit, and
// before anything is compiled (issue 42: pandoc was refused for its size
// before its exception handling was named, ruby.wasm's unknown import
// came after a 20 s compile).
func TestFeaturesAndImportsAnsweredFirst(t *testing.T) {
	t.Parallel()
	sec := func(id byte, payload ...byte) []byte { return append([]byte{id, byte(len(payload))}, payload...) }
	module := func(secs ...[]byte) []byte {
		return append([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, bytes.Join(secs, nil)...)
	}
	voidType := sec(1, 1, 0x60, 0, 0)
	threeFuncs := [][]byte{sec(3, 3, 0, 0, 0), sec(10, 3, 2, 0, 0x0b, 2, 0, 0x0b, 2, 0, 0x0b)}
	over := func(secs ...[]byte) []byte { return module(append(secs, threeFuncs...)...) }
	cases := []struct {
		name, msg string
		wasm      []byte
		kind      sandbox.Kind
	}{
		{"exception handling", "exception handling", over(voidType, sec(13, 1, 0, 0)), sandbox.KindInvalidModule},
		{"threads", "threads (a shared memory)", over(voidType, sec(5, 1, 0x03, 1, 1)), sandbox.KindInvalidModule},
		{"imported shared memory", "threads", over(voidType, sec(2, 1, 1, 'e', 1, 'm', 2, 0x03, 1, 1)), sandbox.KindInvalidModule},
		{"memory64", "64-bit memory", over(voidType, sec(5, 1, 0x04, 1)), sandbox.KindInvalidModule},
		{"GC types", "garbage-collected types", over(sec(1, 1, 0x5f, 0)), sandbox.KindInvalidModule},
		{"unknown import", "module imports env.nope, which Stint does not provide",
			over(voidType, sec(2, 1, 3, 'e', 'n', 'v', 4, 'n', 'o', 'p', 'e', 0, 0)), sandbox.KindBadImport},
	}
	rt := newRuntime(t, sandbox.Config{ModuleLimits: sandbox.ModuleLimits{MaxFunctions: 2}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rt.Compile(context.Background(), c.wasm)
			var me *sandbox.ModuleError
			require.ErrorAs(t, err, &me)
			require.Equal(t, c.kind, me.Kind, me.Message)
			require.Contains(t, me.Message, c.msg)
			require.NotContains(t, me.Message, "max_functions")
		})
	}
	require.Zero(t, rt.Stats().Compilations, "a module was given to wazero")
	// The same functions without the feature are over the limit, and say so.
	_, err := rt.Compile(context.Background(), over(voidType))
	require.ErrorContains(t, err, "max_functions")
}

// TestCachedPreparationChecksImports: a module prepared by a runtime
// whose host modules it imports, loaded from the prepared-module cache by
// a runtime without them, is still refused as bad_import, before wazero
// sees it: the cache keeps no verdict on imports.
func TestCachedPreparationChecksImports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := wat.MustLoad("stopping_block")
	with := newRuntime(t, sandbox.Config{CacheDir: dir, HostModules: []sandbox.HostModuleDef{blockhost.Def()}})
	_, err := with.Compile(context.Background(), wasm)
	require.NoError(t, err)
	without := newRuntime(t, sandbox.Config{CacheDir: dir})
	_, err = without.Compile(context.Background(), wasm)
	var me *sandbox.ModuleError
	require.ErrorAs(t, err, &me)
	require.Equal(t, sandbox.KindBadImport, me.Kind, me.Message)
	require.Contains(t, me.Message, blockhost.Name+".block")
	st := without.Stats()
	require.EqualValues(t, 1, st.PreparedCacheHits, "the preparation came from the cache")
	require.Zero(t, st.Compilations, "refused before wazero")
}

// corrupt flips bytes in the code section so that the module no longer
// validates, keeping the header intact.
func corrupt(b []byte) []byte {
	c := append([]byte(nil), b...)
	for i := len(c) - 20; i < len(c)-4; i++ {
		c[i] = 0xff
	}
	return c
}

func TestCompileOncePerHash(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	var wg sync.WaitGroup
	mods := make([]*sandbox.Module, 8)
	for i := range mods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := rt.Compile(context.Background(), wat.MustLoad("noop"))
			require.NoError(t, err)
			mods[i] = m
		}()
	}
	wg.Wait()
	for _, m := range mods {
		require.Same(t, mods[0], m)
	}
	require.Equal(t, sandbox.SHA256(wat.MustLoad("noop")), mods[0].SHA256)
	got, ok := rt.Lookup(mods[0].SHA256)
	require.True(t, ok)
	require.Same(t, mods[0], got)
	// Many runs of one compiled module: each gets a fresh instance.
	for range 20 {
		out := run(t, rt, context.Background(), compile(t, rt, "checkpoint"), sandbox.Spec{})
		require.Equal(t, sandbox.KindSucceeded, out.Kind)
		require.Empty(t, out.Stdout, "no state leaks between instances")
	}
}

func TestStopCooperative(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	stop := make(chan struct{})
	close(stop)
	out := run(t, rt, context.Background(), compile(t, rt, "stop_aware"), sandbox.Spec{Stop: stop})
	require.Equal(t, sandbox.KindInterrupted, out.Kind, out.String())
	require.False(t, out.Deadline)
	require.True(t, out.StopRequested)

	// Exit 75 without a stop request is an ordinary failure.
	ignore := compile(t, rt, "stop_ignore")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out = run(t, rt, ctx, ignore, sandbox.Spec{})
	require.Equal(t, sandbox.KindForced, out.Kind)
}

// TestForcedStopEveryBlockingPath: the hard context ends the guest in each
// place it can block, and Run returns, in both interrupt modes.
func TestForcedStopEveryBlockingPath(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		forcedStopEveryBlockingPath(t, mode)
	}
}

func forcedStopEveryBlockingPath(t *testing.T, mode sandbox.InterruptMode) {
	rt := newRuntime(t, sandbox.Config{Interrupt: mode})
	type setup func(t *testing.T, sig *signalWriter, spec *sandbox.Spec) (cleanup func())
	cases := []struct {
		fixture string
		setup   setup
	}{
		{"loop", nil},
		{"stop_ignore", nil},
		{"sleep", nil},
		{"stdin", func(t *testing.T, sig *signalWriter, spec *sandbox.Spec) func() {
			return blockingStdin(sig, spec)
		}},
		{"checkpoint", func(t *testing.T, sig *signalWriter, spec *sandbox.Spec) func() {
			release := make(chan struct{})
			spec.SaveCheckpoint = func(ctx context.Context, blob []byte) error {
				_, _ = sig.Write(nil)
				<-release // a host callback that ignores its context
				return nil
			}
			return func() { close(release) }
		}},
	}
	for _, c := range cases {
		t.Run(string(mode)+"/"+c.fixture, func(t *testing.T) {
			t.Parallel()
			mod := compile(t, rt, c.fixture)
			sig := newSignal()
			spec := sandbox.Spec{StderrTee: sig, Limits: sandbox.Limits{Timeout: -1}}
			if c.setup != nil {
				defer c.setup(t, sig, &spec)()
			}
			forcedRun(t, rt, mod, spec, sig)
		})
	}
}

// forcedRun runs mod with spec on a goroutine, cancels its context (the
// cause: "test forced stop") once the guest has written to sig, and
// returns the outcome, which must be a forced stop that names the cause.
// It fails t if Run does not return within bound of the cancel.
func forcedRun(t *testing.T, rt *sandbox.Runtime, mod *sandbox.Module, spec sandbox.Spec, sig *signalWriter) *sandbox.Outcome {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan *sandbox.Outcome, 1)
	go func() {
		out, err := rt.Run(ctx, mod, spec)
		require.NoError(t, err)
		done <- out
	}()
	sig.wait(t)
	cancel(errors.New("test forced stop"))
	select {
	case out := <-done:
		require.Equal(t, sandbox.KindForced, out.Kind, out.String())
		require.Contains(t, out.Message, "test forced stop")
		return out
	case <-time.After(bound):
		t.Fatalf("Run did not return within %s of the cancel", bound)
		return nil
	}
}

// TestPollWithoutClock: poll_oneoff on stdin with no clock subscription
// (which sleeps forever with wazero's own sleep) returns: the guest's stdin
// is never pollable, so it is reported ready and the read itself is what
// the hard context bounds.
func TestPollWithoutClock(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	spec := sandbox.Spec{}
	defer blockingStdin(newSignal(), &spec)()
	out := run(t, rt, context.Background(), compile(t, rt, "poll_noclock"), spec)
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
}

// blockingStdin gives the guest a stdin that signals on its first read and
// then never returns data until cleanup.
func blockingStdin(sig *signalWriter, spec *sandbox.Spec) func() {
	pr, pw := io.Pipe()
	spec.Stdin = readerFunc(func(p []byte) (int, error) {
		_, _ = sig.Write(nil)
		return pr.Read(p)
	})
	return func() { _ = pw.Close() }
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestCheckpoints(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "checkpoint")

	// No checkpoint to start from; the save goes to the callback.
	var saved [][]byte
	out := run(t, rt, context.Background(), mod, sandbox.Spec{SaveCheckpoint: func(_ context.Context, b []byte) error {
		saved = append(saved, b)
		return nil
	}})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Empty(t, out.Stdout)
	require.Equal(t, [][]byte{[]byte("saved")}, saved)
	require.Equal(t, 1, out.CheckpointsSaved)
	require.Equal(t, "saved", string(out.Checkpoint))

	// Resume: the guest loads the checkpoint it is given.
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Checkpoint: []byte("from before")})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "from before", string(out.Stdout))

	// Too large: refused with -1 (the fixture exits 3 on a failed save).
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{MaxCheckpoint: 4}})
	require.Equal(t, sandbox.KindFailed, out.Kind)
	require.EqualValues(t, 3, out.ExitCode)

	// Lease lost and store failures are reported to the guest, not crashed on.
	for _, e := range []error{sandbox.ErrLeaseLost, errors.New("disk full")} {
		out = run(t, rt, context.Background(), mod, sandbox.Spec{SaveCheckpoint: func(context.Context, []byte) error { return e }})
		require.Equal(t, sandbox.KindFailed, out.Kind)
		require.Zero(t, out.CheckpointsSaved)
	}

	// Stop request after a checkpoint: the last checkpoint is kept.
	stop := make(chan struct{})
	close(stop)
	out = run(t, rt, context.Background(), compile(t, rt, "checkpoint_then_loop"), sandbox.Spec{Stop: stop})
	require.Equal(t, sandbox.KindInterrupted, out.Kind, out.String())
	require.Equal(t, "cp2", string(out.Checkpoint))
	require.Equal(t, 2, out.CheckpointsSaved)
}

func TestArgsEnvIsolation(t *testing.T) {
	t.Setenv("STINT_HOST_SECRET", "leak") // the guest must not see it
	rt := newRuntime(t, sandbox.Config{})
	out := run(t, rt, context.Background(), compile(t, rt, "args_env"), sandbox.Spec{
		Name: "prog", Args: []string{"a", "b c"}, Env: map[string]string{"B": "2", "A": "1"},
	})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "prog\na\nb c\nA=1\nB=2\n", string(out.Stdout))
	require.NotContains(t, string(out.Stdout), "leak")
}

func TestSpecValidation(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "noop")
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, spec := range []sandbox.Spec{
		{Mounts: []sandbox.Mount{{HostPath: "/does/not/exist", GuestPath: "/data"}}},
		{Mounts: []sandbox.Mount{{HostPath: file, GuestPath: "/data"}}},
		{Mounts: []sandbox.Mount{{HostPath: t.TempDir(), GuestPath: "relative"}}},
		{Env: map[string]string{"A=B": "x"}},
		{Limits: sandbox.Limits{MaxStdout: -1}},
	} {
		_, err := rt.Run(context.Background(), mod, spec)
		require.Error(t, err)
		require.Contains(t, err.Error(), "invalid spec")
	}
	_, err := rt.Run(context.Background(), nil, sandbox.Spec{})
	require.Error(t, err)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, sandbox.Config{}.WithDefaults().Validate())
	err := sandbox.Config{MaxMemoryBytes: 70000 * sandbox.PageSize}.WithDefaults().Validate()
	require.ErrorContains(t, err, "over the wasm32 maximum")
	err = sandbox.Config{MaxMemoryBytes: 10 * sandbox.PageSize}.WithDefaults().Validate()
	require.ErrorContains(t, err, "default memory limit of 67108864 bytes is over the maximum of 655360 bytes")
	_, err = sandbox.New(context.Background(), sandbox.Config{MaxMemoryBytes: 10 * sandbox.PageSize})
	require.Error(t, err)
}

func TestCompilationCacheDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt := newRuntime(t, sandbox.Config{CacheDir: dir})
	echo := compile(t, rt, "echo")
	require.NoError(t, rt.Close(context.Background()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "compiled code is written to the cache directory")
	_, err = rt.Compile(context.Background(), wat.MustLoad("noop"))
	require.ErrorIs(t, err, sandbox.ErrClosed)
	_, err = rt.Run(context.Background(), echo, sandbox.Spec{})
	require.ErrorIs(t, err, sandbox.ErrClosed)
	require.Equal(t, sandbox.KindForced, sandbox.OutcomeFromError(err).Kind, "a closed runtime is not the module's fault")
}

func TestStderrTee(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	var tee bytes.Buffer
	out := run(t, rt, context.Background(), compile(t, rt, "flood_stderr"), sandbox.Spec{StderrTee: &tee, Limits: sandbox.Limits{MaxStderr: 8192}})
	require.Equal(t, sandbox.KindOutputLimit, out.Kind)
	require.Equal(t, out.Stderr, tee.Bytes())
	require.True(t, strings.Count(tee.String(), "") > 1)
}

// TestMemoryReuseIsZeroed: linear-memory buffers are reused between tasks;
// each task must still start with zeroed memory, also when tasks run at
// the same time.
func TestMemoryReuseIsZeroed(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "dirty")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				out, err := rt.Run(context.Background(), mod, sandbox.Spec{})
				require.NoError(t, err)
				require.Equal(t, sandbox.KindSucceeded, out.Kind, "the task saw another task's bytes: %s", out)
				require.EqualValues(t, 16*sandbox.PageSize, out.PeakMemoryBytes)
			}
		}()
	}
	wg.Wait()
}

// TestBrokenCompilationCache: a cache entry that cannot be read (corrupt)
// or written (here its directory is a file, which stops root too, like a
// full disk) costs a compilation without the cache, never the task: the
// module compiles and runs, and a warning says why.
func TestBrokenCompilationCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// runsDespite opens a runtime on dir, breaks the cache, then compiles
	// and runs the echo fixture.
	runsDespite := func(t *testing.T, dir string, breakCache func()) {
		t.Helper()
		core, logs := observer.New(zapcore.WarnLevel)
		rt := newRuntime(t, sandbox.Config{CacheDir: dir, Logger: zap.New(core)})
		breakCache()
		mod, err := rt.Compile(ctx, wat.MustLoad("echo"))
		require.NoError(t, err)
		out, err := rt.Run(ctx, mod, sandbox.Spec{Input: []byte("still runs")})
		require.NoError(t, err)
		require.True(t, out.Success(), out.String())
		require.Equal(t, "still runs", string(out.Stdout))
		require.Equal(t, 1, logs.FilterMessageSnippet("the compilation cache failed").Len())
		require.EqualValues(t, 1, rt.Stats().CacheFailures)
	}

	t.Run("corrupt entry", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		rt := newRuntime(t, sandbox.Config{CacheDir: dir})
		_, err := rt.Compile(ctx, wat.MustLoad("echo"))
		require.NoError(t, err)
		var files []string
		require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && (d.Name() == "stint-prepared" || d.Name() == "stint-names") {
				return filepath.SkipDir // Stint's own cache (preparedcache.go) and its names (cachenames.go), not wazero's
			}
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		}))
		require.Len(t, files, 1, "the first compilation filled the cache")
		runsDespite(t, dir, func() {
			require.NoError(t, os.WriteFile(files[0], []byte("garbage"), 0o644))
		})
	})
	t.Run("cannot write", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		runsDespite(t, dir, func() {
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return e.Name() == "stint-prepared" || e.Name() == "stint-names" })
			require.Len(t, entries, 1, "wazero's versioned cache directory")
			sub := filepath.Join(dir, entries[0].Name())
			require.NoError(t, os.RemoveAll(sub))
			require.NoError(t, os.WriteFile(sub, nil, 0o644))
		})
	})
}
