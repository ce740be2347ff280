package wat_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
	"go.uber.org/goleak"

	"github.com/stint-run/stint/internal/testwasm/wat"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wat2wasmFlags must match the flags in build.sh.
var wat2wasmFlags = []string{"--debug-names"}

func watNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.wat")
	require.NoError(t, err)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(f, ".wat")
	}
	return names
}

func TestEveryWatHasItsWasm(t *testing.T) {
	t.Parallel()
	names := watNames(t)
	require.NotEmpty(t, names)
	require.Equal(t, names, wat.Names(), "each .wat needs its .wasm and each .wasm its .wat: run build.sh")
}

// TestIndexListsEveryFixture keeps the index in doc.go true: every fixture
// (name.wat) is listed there, and every name listed is a fixture. An index
// line is a tab-indented comment line "//\tname[, name]  description".
func TestIndexListsEveryFixture(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	indexed := map[string]bool{}
	for line := range strings.Lines(string(src)) {
		rest, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			continue
		}
		names, _, _ := strings.Cut(strings.TrimSpace(rest), "  ")
		for name := range strings.SplitSeq(names, ",") {
			indexed[strings.TrimSpace(name)] = true
		}
	}
	var problems []string
	fixtures := slices.Compact(slices.Sorted(slices.Values(append(watNames(t), wat.Names()...)))) // a .wasm alone counts too
	for _, name := range fixtures {
		if !indexed[name] {
			problems = append(problems, fmt.Sprintf("fixture %s is not in doc.go's index: add a line \"//\\t%s  what it does\"", name, name))
		}
		delete(indexed, name)
	}
	for name := range indexed {
		problems = append(problems, fmt.Sprintf("doc.go's index lists %q, but there is no %s.wat: remove or rename its line", name, name))
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		t.Errorf("the fixture index in doc.go is out of date:\n%s", strings.Join(problems, "\n"))
	}
}

func TestWasmUpToDate(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not on PATH")
	}
	tmp := t.TempDir()
	for _, name := range watNames(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(tmp, name+".wasm")
			args := append(slices.Clone(wat2wasmFlags), name+".wat", "-o", out)
			msg, err := exec.Command(bin, args...).CombinedOutput()
			require.NoError(t, err, "wat2wasm %s: %s", name, msg)
			want, err := os.ReadFile(out)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, wat.MustLoad(name)), "%s.wasm is stale: run build.sh", name)
		})
	}
}

func TestFixturesCompile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	noMemory := []string{"noop", "trap", "recursion", "callstack", "unknown_import", "unknown_module", "import_internal"}
	for _, name := range wat.Names() {
		compiled, err := r.CompileModule(ctx, wat.MustLoad(name))
		require.NoError(t, err, name)
		_, ok := compiled.ExportedFunctions()["_start"]
		require.Equal(t, !strings.HasPrefix(name, "plugin_"), ok, "%s exports _start if and only if it is not a plugin", name)
		if !slices.Contains(noMemory, name) {
			_, ok := compiled.ExportedMemories()["memory"]
			require.True(t, ok, "%s exports its memory", name)
		}
		require.NoError(t, compiled.Close(ctx))
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	a, err := wat.Load("noop")
	require.NoError(t, err)
	b, err := wat.Load("noop.wasm")
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Equal(t, []byte("\x00asm"), a[:4])

	_, err = wat.Load("no_such_fixture")
	require.ErrorContains(t, err, "no_such_fixture")
	require.Panics(t, func() { wat.MustLoad("no_such_fixture") })
}

// fakeHost is a minimal stint host module, enough to check what the fixtures do.
type fakeHost struct {
	mu         sync.Mutex
	stop       func() int32 // nil: never
	checkpoint []byte       // nil: none
	saveCode   int32
	deadlineMs int64

	saves    [][]byte
	progress [][2]int64
}

func (h *fakeHost) instantiate(ctx context.Context, r wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	mem := func(mod api.Module, ptr, n uint64) []byte {
		b, ok := mod.Memory().Read(api.DecodeU32(ptr), api.DecodeU32(n))
		if !ok {
			panic(errors.New("fake stint host: bad pointer"))
		}
		return b
	}
	_, err := r.NewHostModuleBuilder("stint").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
		if h.stop != nil {
			stack[0] = api.EncodeI32(h.stop())
		}
	}), nil, []api.ValueType{i32}).Export("stop_requested").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, mod api.Module, stack []uint64) {
		b := mem(mod, stack[0], stack[1])
		h.mu.Lock()
		defer h.mu.Unlock()
		h.saves = append(h.saves, slices.Clone(b))
		stack[0] = api.EncodeI32(h.saveCode)
	}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("checkpoint_save").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = api.EncodeI32(-1)
		if h.checkpoint != nil {
			stack[0] = api.EncodeI32(int32(len(h.checkpoint)))
		}
	}), nil, []api.ValueType{i32}).Export("checkpoint_size").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, mod api.Module, stack []uint64) {
		b := mem(mod, stack[0], stack[1])
		stack[0] = api.EncodeI32(-1)
		if h.checkpoint != nil {
			stack[0] = api.EncodeI32(int32(copy(b, h.checkpoint)))
		}
	}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("checkpoint_load").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.progress = append(h.progress, [2]int64{int64(stack[0]), int64(stack[1])})
	}), []api.ValueType{i64, i64}, nil).Export("progress").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = api.EncodeI64(h.deadlineMs)
	}), nil, []api.ValueType{i64}).Export("deadline_ms").
		Instantiate(ctx)
	return err
}

type runOpts struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	args           []string
	env            [][2]string
	memLimitPages  uint32
	nanosleep      func(ns int64)
}

type result struct {
	code   uint32 // exit code, when err is nil
	err    error  // anything but a *sys.ExitError
	stdout string
	stderr string
}

// run runs a fixture to its end in a fresh runtime with WASI and host.
func run(t *testing.T, name string, host *fakeHost, o runOpts) result {
	t.Helper()
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	if o.memLimitPages > 0 {
		cfg = cfg.WithMemoryLimitPages(o.memLimitPages)
	}
	r := wazero.NewRuntimeWithConfig(context.Background(), cfg)
	defer func() { require.NoError(t, r.Close(context.Background())) }()
	wasi_snapshot_preview1.MustInstantiate(context.Background(), r)
	if host == nil {
		host = &fakeHost{}
	}
	require.NoError(t, host.instantiate(context.Background(), r))

	var stdout, stderr bytes.Buffer
	mc := wazero.NewModuleConfig().WithStdout(&stdout).WithStderr(&stderr).WithName("")
	if o.stdout != nil {
		mc = mc.WithStdout(o.stdout)
	}
	if o.stderr != nil {
		mc = mc.WithStderr(o.stderr)
	}
	if o.stdin != nil {
		mc = mc.WithStdin(o.stdin)
	}
	if o.args != nil {
		mc = mc.WithArgs(o.args...)
	}
	for _, kv := range o.env {
		mc = mc.WithEnv(kv[0], kv[1])
	}
	if o.nanosleep != nil {
		mc = mc.WithNanosleep(o.nanosleep)
	}

	res := result{}
	compiled, err := r.CompileModule(ctx, wat.MustLoad(name))
	if err == nil {
		_, err = r.InstantiateModule(ctx, compiled, mc)
	}
	var exitErr *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
	default:
		res.err = err
	}
	res.stdout, res.stderr = stdout.String(), stderr.String()
	return res
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	require.Equal(t, result{}, run(t, "noop", nil, runOpts{}))
	require.Equal(t, result{code: 3}, run(t, "exit3", nil, runOpts{}))
	require.Equal(t, result{}, run(t, "bigmem", nil, runOpts{}))
}

func TestTrapAndRecursion(t *testing.T) {
	t.Parallel()
	res := run(t, "trap", nil, runOpts{})
	require.ErrorContains(t, res.err, "unreachable")
	require.ErrorContains(t, res.err, "crash", "the stack trace names the function")

	res = run(t, "recursion", nil, runOpts{})
	require.ErrorContains(t, res.err, "stack overflow")
}

func TestMemory(t *testing.T) {
	t.Parallel()
	require.Equal(t, result{code: 2}, run(t, "memgrow", nil, runOpts{memLimitPages: 256}))
	res := run(t, "bigmem", nil, runOpts{memLimitPages: 1024})
	require.ErrorContains(t, res.err, "2048")
}

func TestUnknownImports(t *testing.T) {
	t.Parallel()
	res := run(t, "unknown_import", nil, runOpts{})
	require.ErrorContains(t, res.err, "no_such_function")
	res = run(t, "unknown_module", nil, runOpts{})
	require.ErrorContains(t, res.err, "env")
}

func TestBadPointers(t *testing.T) {
	t.Parallel()
	res := run(t, "badptr", nil, runOpts{})
	require.ErrorContains(t, res.err, "bad pointer")
	res = run(t, "badptr_load", &fakeHost{checkpoint: []byte("cp")}, runOpts{})
	require.ErrorContains(t, res.err, "bad pointer")
}

func TestStdio(t *testing.T) {
	t.Parallel()
	in := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // several reads
	res := run(t, "echo", nil, runOpts{stdin: bytes.NewReader(in)})
	require.Equal(t, uint32(0), res.code)
	require.NoError(t, res.err)
	require.Equal(t, string(in), res.stdout)

	require.Equal(t, result{}, run(t, "stdin", nil, runOpts{stdin: bytes.NewReader(in)}))
	require.Equal(t, result{}, run(t, "stdin", nil, runOpts{})) // no stdin: EOF at once

	res = run(t, "args_env", nil, runOpts{
		args: []string{"prog", "a b", ""},
		env:  [][2]string{{"FOO", "bar"}, {"EMPTY", ""}},
	})
	require.Equal(t, result{stdout: "prog\na b\n\nFOO=bar\nEMPTY=\n"}, res)
	require.Equal(t, result{}, run(t, "args_env", nil, runOpts{}))
}

func TestSleep(t *testing.T) {
	t.Parallel()
	var slept []int64
	res := run(t, "sleep", nil, runOpts{nanosleep: func(ns int64) { slept = append(slept, ns) }})
	require.Equal(t, result{stderr: "sleep\n"}, res)
	require.Equal(t, []int64{int64(time.Hour)}, slept)
}

func TestNap(t *testing.T) {
	t.Parallel()
	var slept []int64
	host := &fakeHost{}
	res := run(t, "nap", host, runOpts{nanosleep: func(ns int64) { slept = append(slept, ns) }})
	require.Equal(t, result{stdout: "nap\n"}, res)
	require.Equal(t, [][]byte{[]byte("nap")}, host.saves)
	require.Equal(t, []int64{int64(time.Second)}, slept)
}

// stopAtCall is a host's stop_requested that counts its calls in calls
// and says stop (1) from call n on.
func stopAtCall(calls *atomic.Int32, n int32) func() int32 {
	return func() int32 {
		if calls.Add(1) < n {
			return 0
		}
		return 1
	}
}

func TestStopAware(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	host := &fakeHost{stop: stopAtCall(&calls, 1000)}
	require.Equal(t, result{code: 75}, run(t, "stop_aware", host, runOpts{}))
	require.Equal(t, int32(1000), calls.Load())
}

func TestCheckpoint(t *testing.T) {
	t.Parallel()
	host := &fakeHost{}
	require.Equal(t, result{}, run(t, "checkpoint", host, runOpts{}))
	require.Equal(t, [][]byte{[]byte("saved")}, host.saves)

	host = &fakeHost{checkpoint: []byte("previous")}
	require.Equal(t, result{stdout: "previous"}, run(t, "checkpoint", host, runOpts{}))
	require.Equal(t, [][]byte{[]byte("saved")}, host.saves)

	host = &fakeHost{checkpoint: []byte{}} // empty checkpoint: nothing to write
	require.Equal(t, result{}, run(t, "checkpoint", host, runOpts{}))

	host = &fakeHost{saveCode: -1}
	require.Equal(t, result{code: 3}, run(t, "checkpoint", host, runOpts{}))
}

func TestCheckpointThenLoop(t *testing.T) {
	t.Parallel()
	var stop atomic.Int32
	host := &fakeHost{stop: func() int32 { return stop.Swap(1) }} // 0 once, then 1
	require.Equal(t, result{code: 75}, run(t, "checkpoint_then_loop", host, runOpts{}))
	require.Equal(t, [][]byte{[]byte("cp1"), []byte("cp2")}, host.saves)

	host = &fakeHost{saveCode: -2}
	require.Equal(t, result{code: 3}, run(t, "checkpoint_then_loop", host, runOpts{}))
}

func TestProgress(t *testing.T) {
	t.Parallel()
	host := &fakeHost{deadlineMs: 1500}
	require.Equal(t, result{stdout: "deadline\n"}, run(t, "progress", host, runOpts{}))
	require.Equal(t, [][2]int64{{3, 10}}, host.progress)

	for _, ms := range []int64{-1, 0} {
		host = &fakeHost{deadlineMs: ms}
		require.Equal(t, result{stdout: "none\n"}, run(t, "progress", host, runOpts{}))
	}
}

func TestProgressWait(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	host := &fakeHost{stop: stopAtCall(&calls, 100)}
	require.Equal(t, result{code: 75}, run(t, "progress_wait", host, runOpts{}))
	require.Equal(t, [][2]int64{{1, 2}}, host.progress)
	require.EqualValues(t, 100, calls.Load())
}

// cancelAfter is a writer that cancels a context once it got n bytes.
// If copy is set, it also keeps what was written.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
	copy   *bytes.Buffer
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	if w.copy != nil {
		w.copy.Write(p)
	}
	w.n -= len(p)
	if w.n <= 0 {
		w.cancel()
	}
	return len(p), nil
}

// The endless fixtures run until their context is cancelled, and only a
// close-on-context-done runtime ends them.
func TestEndless(t *testing.T) {
	t.Parallel()
	cancelled := func(t *testing.T, res result) {
		t.Helper()
		require.NoError(t, res.err)
		require.Equal(t, sys.ExitCodeContextCanceled, res.code)
	}

	t.Run("loop", func(t *testing.T) {
		t.Parallel()
		// Cancel once the guest has written its line, so the loop is
		// certainly running when the context ends (a timer could fire
		// before the guest starts on a slow machine).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stderr bytes.Buffer
		w := &cancelAfter{n: len("loop\n"), cancel: cancel, copy: &stderr}
		res := run(t, "loop", nil, runOpts{ctx: ctx, stderr: w})
		cancelled(t, res)
		require.Equal(t, "loop\n", stderr.String())
	})
	t.Run("stop_ignore", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var calls atomic.Int32
		host := &fakeHost{stop: func() int32 {
			if calls.Add(1) == 10_000 {
				cancel()
			}
			return 1
		}}
		res := run(t, "stop_ignore", host, runOpts{ctx: ctx})
		cancelled(t, res)
		require.Equal(t, "stop_ignore\n", res.stderr)
		require.GreaterOrEqual(t, calls.Load(), int32(10_000))
	})
	for _, name := range []string{"flood", "flood_stderr"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &cancelAfter{n: 1 << 20, cancel: cancel}
			o := runOpts{ctx: ctx}
			if name == "flood" {
				o.stdout = w
			} else {
				o.stderr = w
			}
			cancelled(t, run(t, name, nil, o))
			require.LessOrEqual(t, w.n, 0)
		})
	}
}
