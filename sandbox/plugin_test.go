package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/kvhost"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// kvHost is an env module with kv_get(key_ptr, key_len, buf_ptr, buf_len)
// -> i32 over a map; some keys misbehave on purpose. seen records the
// identity of the last call.
type kvHost struct {
	mu   sync.Mutex
	data map[string]string
	seen struct {
		plugin, task string
		labels       map[string]string
		config       string
	}
}

func (k *kvHost) module() sandbox.HostModuleDef { return kvhost.Def(k.get, false) }

func (k *kvHost) get(ctx context.Context, c sandbox.Call, key string) ([]byte, bool, error) {
	k.mu.Lock()
	k.seen.plugin, k.seen.task, k.seen.labels = c.Plugin(), c.Task(), c.Labels()
	k.seen.config, _ = c.Config("greeting")
	v, ok := k.data[key]
	k.mu.Unlock()
	switch key {
	case "fail":
		return nil, false, errors.New("the store is down")
	case "panic":
		panic("kv exploded")
	case "block":
		<-ctx.Done() // what a blocking host function must do
		return nil, false, ctx.Err()
	case "badptr":
		return nil, false, c.Write(0xFFFFFFF0, []byte("far away"))
	}
	return []byte(v), ok, nil
}

func newPluginRuntime(t *testing.T, mode sandbox.InterruptMode) (*sandbox.Runtime, *kvHost) {
	t.Helper()
	kv := &kvHost{data: map[string]string{"answer": "42"}}
	rt := newRuntime(t, sandbox.Config{Interrupt: mode, HostModules: []sandbox.HostModuleDef{kv.module()}})
	return rt, kv
}

func loadPlugin(t *testing.T, rt *sandbox.Runtime, fixture string, man sandbox.Manifest) *sandbox.Plugin {
	t.Helper()
	p, err := rt.LoadPlugin(context.Background(), wat.MustLoad(fixture), man)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	return p
}

func call(t *testing.T, p *sandbox.Plugin, fn, input string, opts sandbox.CallOptions) *sandbox.Outcome {
	t.Helper()
	return callCtx(t, context.Background(), p, fn, input, opts)
}

func callCtx(t *testing.T, ctx context.Context, p *sandbox.Plugin, fn, input string, opts sandbox.CallOptions) *sandbox.Outcome {
	t.Helper()
	out := runBounded(t, func() *sandbox.Outcome {
		out, err := p.CallWith(ctx, fn, []byte(input), opts)
		require.NoError(t, err)
		return out
	})
	return out
}

func TestPluginWarmCalls(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "basic"})
	require.Equal(t, []string{"badout", "big", "count", "grow", "noop", "spin", "trap", "upper"}, p.Exports())

	out := call(t, p, "upper", "hello, plugin", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "HELLO, PLUGIN", string(out.Output))
	require.False(t, out.Warm)
	for i := 1; i <= 3; i++ {
		out := call(t, p, "count", "", sandbox.CallOptions{})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
		require.Equal(t, fmt.Sprint(i), string(out.Output), "the instance stays warm")
		require.True(t, out.Warm)
	}
	out = call(t, p, "noop", "", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind)
	require.Nil(t, out.Output)
	st := p.Stats()
	require.Equal(t, sandbox.PluginStats{Calls: 5, Instantiations: 1, Idle: 1}, st)
}

func TestPluginFresh(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "fresh", Fresh: true})
	for range 3 {
		out := call(t, p, "count", "", sandbox.CallOptions{})
		require.Equal(t, "1", string(out.Output), "every call gets a new instance")
		require.False(t, out.Warm)
	}
	require.Equal(t, int64(3), p.Stats().Instantiations)
	require.Equal(t, 0, p.Stats().Idle)
}

// After a call that did not succeed, the next one gets a fresh instance:
// count starts again at 1.
func TestPluginDiscardsAfterFailure(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			rt, _ := newPluginRuntime(t, mode)
			p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "basic",
				Limits: sandbox.PluginLimits{MemoryBytes: 32 * sandbox.PageSize, MaxOutput: 1000, Timeout: 300 * time.Millisecond}})
			bg := func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }
			caller := func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			}
			cases := []struct {
				fn      string
				ctx     func() (context.Context, context.CancelFunc)
				kind    sandbox.Kind
				message string
			}{
				{"trap", bg, sandbox.KindTrapped, "unreachable"},
				{"spin", bg, sandbox.KindTimedOut, "timeout of 300ms"},
				{"spin", caller, sandbox.KindForced, "stopped by force"},
				{"grow", bg, sandbox.KindMemoryLimit, "memory limit of 32 pages"},
				{"big", bg, sandbox.KindOutputLimit, "output of 65536 bytes is over its limit of 1000 bytes"},
				{"badout", bg, sandbox.KindTrapped, "outside the guest's memory"},
			}
			for _, c := range cases {
				out := call(t, p, "count", "", sandbox.CallOptions{})
				require.Equal(t, "1", string(out.Output), "before %s: a fresh instance", c.fn)
				ctx, cancel := c.ctx()
				out = callCtx(t, ctx, p, c.fn, "", sandbox.CallOptions{})
				cancel()
				require.Equal(t, c.kind, out.Kind, "%s: %s", c.fn, out)
				require.Contains(t, out.Message, c.message)
				require.True(t, out.Warm)
			}
			out := call(t, p, "count", "", sandbox.CallOptions{})
			require.Equal(t, "1", string(out.Output))
			require.Equal(t, int64(len(cases)), p.Stats().Discarded)
		})
	}
}

func TestPluginHostFunctions(t *testing.T) {
	t.Parallel()
	rt, kv := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_host", sandbox.Manifest{Name: "hosted",
		HostModules: []string{"env", "stint_plugin", "stint"},
		Config:      map[string]string{"greeting": "hi"},
		Limits:      sandbox.PluginLimits{Timeout: 200 * time.Millisecond}})

	out := call(t, p, "kv", "answer", sandbox.CallOptions{Task: "t-1", Labels: map[string]string{"team": "a"}})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "42", string(out.Output))
	kv.mu.Lock()
	require.Equal(t, "hosted", kv.seen.plugin)
	require.Equal(t, "t-1", kv.seen.task)
	require.Equal(t, map[string]string{"team": "a"}, kv.seen.labels)
	require.Equal(t, "hi", kv.seen.config)
	kv.mu.Unlock()
	require.Equal(t, "missing", string(call(t, p, "kv", "nope", sandbox.CallOptions{}).Output))
	require.Equal(t, "hi", string(call(t, p, "config", "greeting", sandbox.CallOptions{}).Output))
	require.Equal(t, "denied", string(call(t, p, "config", "secret", sandbox.CallOptions{}).Output))

	out = call(t, p, "kv", "fail", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindTrapped, out.Kind)
	require.Equal(t, "host function env.kv_get failed: the store is down", out.Message)
	var he *sandbox.HostError
	require.ErrorAs(t, out.Err, &he)
	require.Equal(t, "kv_get", he.Func)

	out = call(t, p, "kv", "panic", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindTrapped, out.Kind)
	require.Equal(t, "host function env.kv_get panicked: kv exploded", out.Message)

	out = call(t, p, "kv", "badptr", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindTrapped, out.Kind)
	require.Contains(t, out.Message, "env.kv_get: pointer out of bounds (ptr=4294967280 len=8")
	var bp *sandbox.BadPointerError
	require.ErrorAs(t, out.Err, &bp)

	out = call(t, p, "kv", "block", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	caller, cancel := context.WithCancel(context.Background())
	cancel()
	out = callCtx(t, caller, p, "kv", "block", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindForced, out.Kind, out.String())

	require.Equal(t, "42", string(call(t, p, "kv", "answer", sandbox.CallOptions{}).Output), "the host is unharmed")
}

func TestPluginCooperativeStop(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_host", sandbox.Manifest{Name: "stoppable", HostModules: []string{"env", "stint_plugin", "stint"}})
	stop := make(chan struct{})
	close(stop)
	out := call(t, p, "stop_aware", "", sandbox.CallOptions{Stop: stop})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "stopped", string(out.Output))
	require.True(t, out.StopRequested)

	// Near its timeout, the call is asked to stop (Grace) before it is forced.
	out = call(t, p, "stop_aware", "", sandbox.CallOptions{Timeout: time.Second})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "stopped", string(out.Output))
}

func TestPluginConcurrentInstances(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "pool", Instances: 2})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			out, err := p.Call(context.Background(), "upper", []byte(fmt.Sprint("call ", i)))
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("CALL ", i), string(out.Output))
		})
	}
	wg.Wait()
	st := p.Stats()
	require.LessOrEqual(t, st.Instantiations, int64(2))
	require.Equal(t, int64(8), st.Calls)
}

// One instance: a call waits while it is busy, the wait ends with the
// caller's context, and the place given back wakes the calls that wait.
func TestPluginCallWaitsForInstance(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "one", Instances: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan *sandbox.Outcome, 1)
	go func() {
		out, err := p.Call(ctx, "spin", nil)
		if err != nil {
			out = &sandbox.Outcome{Message: err.Error()}
		}
		first <- out
	}()
	testutil.WaitFor(t, "the spin call to hold the instance", func() bool { return p.Stats().Calls == 1 })

	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	_, err := p.Call(short, "noop", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a call whose context ends while it waits")
	require.Equal(t, int64(1), p.Stats().Calls, "the waiting call never ran")

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			out, err := p.Call(context.Background(), "noop", nil)
			require.NoError(t, err)
			require.True(t, out.Success(), out.String())
		})
	}
	cancel()
	out := <-first
	require.Equal(t, sandbox.KindForced, out.Kind, out.String())
	wg.Wait()
	require.Equal(t, int64(4), p.Stats().Calls)
}

func TestPluginCallErrors(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "basic", Limits: sandbox.PluginLimits{MaxInput: 4}})
	_, err := p.Call(context.Background(), "nope", nil)
	require.ErrorIs(t, err, sandbox.ErrNoExport)
	require.ErrorContains(t, err, `plugin "basic" has no export "nope"`)
	_, err = p.Call(context.Background(), "alloc", nil)
	require.ErrorIs(t, err, sandbox.ErrNoExport)
	_, err = p.Call(context.Background(), "upper", []byte("too long"))
	require.ErrorIs(t, err, sandbox.ErrInputTooLarge)
	require.NoError(t, p.Close(context.Background()))
	_, err = p.Call(context.Background(), "noop", nil)
	require.ErrorIs(t, err, sandbox.ErrPluginClosed)
}

func TestPluginManifestDenies(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	ctx := context.Background()
	host := wat.MustLoad("plugin_host")

	_, err := rt.LoadPlugin(ctx, host, sandbox.Manifest{Name: "nothing granted"})
	require.ErrorIs(t, err, sandbox.ErrBadImport)
	require.ErrorContains(t, err, `module imports env.kv_get, but its manifest does not grant host module "env"`)

	_, err = rt.LoadPlugin(ctx, host, sandbox.Manifest{HostModules: []string{"env", "stint_plugin"}})
	require.ErrorIs(t, err, sandbox.ErrBadImport)
	require.ErrorContains(t, err, `stint.stop_requested, but its manifest does not grant host module "stint"`)

	for name, c := range map[string]struct {
		man  sandbox.Manifest
		want string
	}{
		"unknown module": {sandbox.Manifest{HostModules: []string{"kv"}}, `host module "kv": no such host module`},
		"memory":         {sandbox.Manifest{Limits: sandbox.PluginLimits{MemoryBytes: 70000 * sandbox.PageSize}}, "memory limit of 4587520000 bytes"},
		"output":         {sandbox.Manifest{Limits: sandbox.PluginLimits{MaxOutput: 1 << 40}}, "max output of 1099511627776 bytes"},
		"instances":      {sandbox.Manifest{Instances: 1000}, "instances 1000"},
		"env sans wasi":  {sandbox.Manifest{Env: map[string]string{"A": "b"}}, "mounts and env need WASI"},
		"mount":          {sandbox.Manifest{HostModules: []string{"wasi_snapshot_preview1"}, Mounts: []sandbox.Mount{{HostPath: "/no/such/dir", GuestPath: "/data"}}}, "/no/such/dir"},
		"sha256":         {sandbox.Manifest{SHA256: "0000000000000000000000000000000000000000000000000000000000000000"}, "the manifest expects 0000"},
		"sha256 format":  {sandbox.Manifest{SHA256: "abc"}, "not 64 hex digits"},
	} {
		_, err := rt.LoadPlugin(ctx, wat.MustLoad("plugin_basic"), c.man)
		require.ErrorIs(t, err, sandbox.ErrManifest, name)
		require.ErrorContains(t, err, c.want, name)
	}
	p, err := rt.LoadPlugin(ctx, wat.MustLoad("plugin_basic"), sandbox.Manifest{SHA256: sandbox.SHA256(wat.MustLoad("plugin_basic"))})
	require.NoError(t, err)
	require.NoError(t, p.Close(ctx))

	_, err = rt.LoadPlugin(ctx, wat.MustLoad("bigmem"), sandbox.Manifest{HostModules: []string{"wasi_snapshot_preview1"}, Limits: sandbox.PluginLimits{MemoryBytes: 16 * sandbox.PageSize}})
	require.ErrorIs(t, err, sandbox.ErrMemoryLimit)
}

// A plugin is not a task, and a task's module runs as before.
func TestPluginIsNotACommand(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	mod, err := rt.Compile(context.Background(), wat.MustLoad("plugin_basic"))
	require.NoError(t, err)
	require.False(t, mod.Command)
	out, err := rt.Run(context.Background(), mod, sandbox.Spec{})
	require.NoError(t, err)
	require.Equal(t, sandbox.KindInvalidModule, out.Kind)
	require.Contains(t, out.Message, "exports no _start")
	mod = compile(t, rt, "echo")
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Input: []byte("still a task")})
	require.Equal(t, "still a task", string(out.Stdout))
}

func TestHostModulesValidated(t *testing.T) {
	t.Parallel()
	f := func(context.Context, sandbox.Call, []uint64) error { return nil }
	for name, c := range map[string]struct {
		mods []sandbox.HostModuleDef
		want string
	}{
		"reserved":  {[]sandbox.HostModuleDef{{Name: "stint"}}, `"stint" is a module Stint provides itself`},
		"twice":     {[]sandbox.HostModuleDef{{Name: "a"}, {Name: "a"}}, `"a" is registered twice`},
		"no func":   {[]sandbox.HostModuleDef{{Name: "a", Funcs: []sandbox.HostFunc{{Name: "f"}}}}, "a.f has no Func"},
		"dup func":  {[]sandbox.HostModuleDef{{Name: "a", Funcs: []sandbox.HostFunc{{Name: "f", Func: f}, {Name: "f", Func: f}}}}, "a.f is defined twice"},
		"bad type":  {[]sandbox.HostModuleDef{{Name: "a", Funcs: []sandbox.HostFunc{{Name: "f", Func: f, Params: []sandbox.ValueType{0x70}}}}}, "value type 0x70"},
		"no name":   {[]sandbox.HostModuleDef{{}}, "needs a name"},
		"func name": {[]sandbox.HostModuleDef{{Name: "a", Funcs: []sandbox.HostFunc{{Func: f}}}}, "a function needs a name"},
	} {
		_, err := sandbox.New(context.Background(), sandbox.Config{HostModules: c.mods})
		require.ErrorIs(t, err, sandbox.ErrBadHostModule, name)
		require.ErrorContains(t, err, c.want, name)
	}
}

// A task may import the embedder's host modules; one that imports a
// function nobody provides is still refused, naming it.
func TestTaskImports(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	_, err := rt.Compile(context.Background(), wat.MustLoad("unknown_module"))
	require.ErrorIs(t, err, sandbox.ErrBadImport)
	require.ErrorContains(t, err, "env.whatever, which no host module provides (env has kv_get)")
}

func TestHostImportSignature(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	_, err := rt.LoadPlugin(context.Background(), wat.MustLoad("plugin_badsig"), sandbox.Manifest{HostModules: []string{"env"}})
	require.ErrorIs(t, err, sandbox.ErrBadImport)
	require.ErrorContains(t, err, "module imports env.kv_get as (i32) -> (i32), but the host function is (i32, i32, i32, i32) -> (i32)")
}

// A run may call an export instead of _start (a queued plugin call): in a
// fresh instance, its output is the run's stdout.
func TestRunExport(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	mod := compile(t, rt, "plugin_basic")
	out := run(t, rt, context.Background(), mod, sandbox.Spec{Export: "upper", Input: []byte("queued call")})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "QUEUED CALL", string(out.Stdout))
	require.Equal(t, "QUEUED CALL", string(out.Output))
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Export: "count"})
	require.Equal(t, "1", string(out.Stdout), "a fresh instance per run")

	out = run(t, rt, context.Background(), mod, sandbox.Spec{Export: "spin", Limits: sandbox.Limits{Timeout: 200 * time.Millisecond}})
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Export: "big", Limits: sandbox.Limits{MaxStdout: 100}})
	require.Equal(t, sandbox.KindOutputLimit, out.Kind, out.String())
	require.Contains(t, out.Message, "stdout over its limit of 100 bytes")
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Export: "nope"})
	require.Equal(t, sandbox.KindInvalidModule, out.Kind, out.String())
	require.Contains(t, out.Message, `no function "nope"`)

	// A command may be called by export too, and a plugin task may use
	// the stint module (here: a stop request).
	host := compile(t, rt, "plugin_host")
	stop := make(chan struct{})
	close(stop)
	out = run(t, rt, context.Background(), host, sandbox.Spec{Export: "stop_aware", Stop: stop})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "stopped", string(out.Stdout))
}

// A manifest's mounts and env are opened for each instance and closed
// with it.
func TestPluginMountsAndEnv(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, "")
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "mounted", Fresh: true,
		HostModules: []string{"wasi_snapshot_preview1"},
		Mounts:      []sandbox.Mount{{HostPath: t.TempDir(), GuestPath: "/data"}},
		Env:         map[string]string{"MODE": "test"}})
	for range 2 {
		out := call(t, p, "upper", "mounted", sandbox.CallOptions{})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
		require.Equal(t, "MOUNTED", string(out.Output))
	}
	require.Equal(t, int64(2), p.Stats().Discarded)
}

// A plugin call's work budget, as a task's: a spinning export ends as
// work_limit (its instance discarded), a call within the budget succeeds
// and reports its work, the same for the same input; CallOptions.Work
// narrows the manifest's budget for one call. In wazero mode a budget is
// refused, in the manifest and in a call.
func TestPluginWork(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{Interrupt: sandbox.InterruptChecks})
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "w",
		Limits: sandbox.PluginLimits{Timeout: time.Minute, Work: 5_000_000}})

	out := call(t, p, "upper", "hello", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Positive(t, out.WorkUnits)
	again := call(t, p, "upper", "hello", sandbox.CallOptions{})
	require.True(t, again.Warm)
	require.Equal(t, out.WorkUnits, again.WorkUnits, "a warm call counts its own work, deterministically")

	out = call(t, p, "spin", "", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.String())
	require.ErrorIs(t, out.Err, sandbox.ErrWorkLimit)
	require.Contains(t, out.Message, "work limit of 5000000 units reached")
	require.GreaterOrEqual(t, out.WorkUnits, int64(5_000_000))
	require.EqualValues(t, 1, p.Stats().Discarded, "the instance is discarded")

	out = call(t, p, "spin", "", sandbox.CallOptions{Work: 100_000})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.String())
	require.Contains(t, out.Message, "work limit of 100000 units reached")

	// A budget smaller than a call's work: that call never succeeds.
	out = call(t, p, "upper", strings.Repeat("a", 10_000), sandbox.CallOptions{Work: 10})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.String())

	wz := newRuntime(t, sandbox.Config{Interrupt: sandbox.InterruptWazero})
	_, err := wz.LoadPlugin(context.Background(), wat.MustLoad("plugin_basic"), sandbox.Manifest{Limits: sandbox.PluginLimits{Work: 1000}})
	require.ErrorIs(t, err, sandbox.ErrManifest)
	require.ErrorIs(t, err, sandbox.ErrWorkNeedsChecks)
	pw := loadPlugin(t, wz, "plugin_basic", sandbox.Manifest{})
	_, err = pw.CallWith(context.Background(), "noop", nil, sandbox.CallOptions{Work: 1000})
	require.ErrorIs(t, err, sandbox.ErrWorkNeedsChecks)
}

// TestPluginWarmWorkUnits: a warm instance's call counts the same work as
// the same call in a fresh instance, for random sequences of inputs long
// enough to refill the countdown inside a call (so a call starts where
// the last one left it, mid-budget): a warm call starts from the
// countdown the last call's end read, without reading it again.
func TestPluginWarmWorkUnits(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	rt := newRuntime(t, sandbox.Config{Interrupt: sandbox.InterruptChecks})
	warm := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "warm"})
	fresh := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "fresh", Fresh: true})
	var into sandbox.Outcome
	for i := range 40 {
		fn, input := "noop", []byte(nil)
		if rng.IntN(4) != 0 {
			fn, input = "upper", []byte(strings.Repeat("x", rng.IntN(32<<10)))
		}
		want, err := fresh.Call(context.Background(), fn, input)
		require.NoError(t, err)
		require.True(t, want.Success(), want.String())
		require.False(t, want.Warm)
		require.NoError(t, warm.CallInto(context.Background(), fn, input, sandbox.CallOptions{}, &into))
		require.True(t, into.Success(), into.String())
		require.Equal(t, i > 0, into.Warm)
		require.Equal(t, want.WorkUnits, into.WorkUnits, "call %d: %s of %d bytes", i, fn, len(input))
	}
}
