package extism_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/extism"
)

// userKV is the host side of wasm-examples/extism-kv: extism:host/user
// functions defined as with Extism's go-sdk. kv_get and kv_set keep a
// map; hold blocks, ignoring its context, until release (entered and
// returned tell the test where it is). seen records what the callbacks
// saw of the kernel's checks.
type userKV struct {
	mu   sync.Mutex
	data map[string][]byte
	seen []string

	entered, returned chan struct{}
	release           chan struct{}
	once              sync.Once
}

func newUserKV(t *testing.T) *userKV {
	k := &userKV{data: map[string][]byte{"answer": []byte("42")},
		entered: make(chan struct{}, 4), returned: make(chan struct{}, 4), release: make(chan struct{})}
	t.Cleanup(k.free) // goleak: the held host calls return before the test ends
	return k
}

func (k *userKV) free() { k.once.Do(func() { close(k.release) }) }

func (k *userKV) funcs() []extism.HostFunction {
	get := extism.NewHostFunctionWithStack("kv_get", func(_ context.Context, p *extism.CurrentPlugin, stack []uint64) {
		key, err := p.ReadString(stack[0])
		if err != nil {
			panic(err)
		}
		// The kernel's checks, seen from a host function.
		_, badErr := p.ReadBytes(stack[0] + 1)
		_, low := p.Memory().Read(0, 8)
		_, past := p.Memory().Read(p.Memory().Size(), 1)
		n, _ := p.Length(stack[0])
		k.mu.Lock()
		k.seen = append(k.seen, p.Call().Plugin(), errText(badErr), boolText(low), boolText(past), string(rune('0'+n)))
		v, ok := k.data[key]
		k.mu.Unlock()
		if key == "boom" {
			panic(errors.New("kv is down"))
		}
		if !ok {
			stack[0] = 0
			return
		}
		if stack[0], err = p.WriteBytes(v); err != nil {
			panic(err)
		}
	}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
	set := extism.NewHostFunctionWithStack("kv_set", func(_ context.Context, p *extism.CurrentPlugin, stack []uint64) {
		key, err := p.ReadString(stack[0])
		if err != nil {
			panic(err)
		}
		v, err := p.ReadBytes(stack[1])
		if err != nil {
			panic(err)
		}
		k.mu.Lock()
		k.data[key] = v
		k.mu.Unlock()
	}, []extism.ValueType{extism.ValueTypePTR, extism.ValueTypePTR}, nil)
	hold := extism.NewHostFunctionWithStack("hold", func(context.Context, *extism.CurrentPlugin, []uint64) {
		k.entered <- struct{}{}
		<-k.release // ignores its context
		k.returned <- struct{}{}
	}, nil, nil)
	return []extism.HostFunction{get, set, hold}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// userManifest grants what extism-kv imports: WASI, Extism's kernel,
// Stint's stint module and the host app's functions.
func userManifest() sandbox.Manifest {
	return sandbox.Manifest{Name: "extism-kv",
		HostModules: []string{"wasi_snapshot_preview1", sandbox.ExtismModule, "stint", extism.UserModule},
		Limits:      sandbox.PluginLimits{Timeout: 30 * time.Second, MemoryBytes: 32 << 20}}
}

func extismKV(t *testing.T) []byte {
	t.Helper()
	wasm, err := os.ReadFile(testwasm.GoPlugin(t, "extism-kv"))
	require.NoError(t, err)
	return wasm
}

// An Extism Go PDK plugin calls its host app's functions in
// extism:host/user, which read and write its kernel memory at the offsets
// it passes, as under Extism's go-sdk; a callback's panic traps the
// plugin, not the host.
func TestExtismUserHostFunctions(t *testing.T) {
	t.Parallel()
	kv := newUserKV(t)
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t),
		HostModules: extism.HostModules(kv.funcs()...)})
	p, err := rt.LoadPlugin(context.Background(), extismKV(t), userManifest())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })

	out := call(t, p, "lookup", "answer", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "42", string(out.Output))
	kv.mu.Lock()
	require.Len(t, kv.seen, 5)
	require.Equal(t, "extism-kv", kv.seen[0], "the host function sees the call's identity")
	require.Regexp(t, `^extism:host/user\.kv_get: offset \d+ is not a live memory block of the plugin$`, kv.seen[1])
	require.Equal(t, []string{"false", "false", "6"}, kv.seen[2:], "no access below 8 or past the memory in use; the key's length")
	kv.mu.Unlock()

	out = call(t, p, "store", "planet=mars", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "stored planet", string(out.Output))
	out = call(t, p, "lookup", "planet", sandbox.CallOptions{})
	require.Equal(t, "mars", string(out.Output))
	require.True(t, out.Warm)
	require.Equal(t, "no such key: pluto", string(call(t, p, "lookup", "pluto", sandbox.CallOptions{}).Output))

	// Stint's extras reach an Extism plugin: guest.StopRequested.
	stop := make(chan struct{})
	close(stop)
	out = call(t, p, "wait", "", sandbox.CallOptions{Stop: stop})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "stopped", string(out.Output))
	require.True(t, out.StopRequested)

	out = call(t, p, "lookup", "boom", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindTrapped, out.Kind, out.String())
	require.Contains(t, out.Message, "host function extism:host/user.kv_get panicked: kv is down")
	var he *sandbox.HostError
	require.ErrorAs(t, out.Err, &he)
	require.Equal(t, extism.UserModule, he.Module)

	out = call(t, p, "lookup", "answer", sandbox.CallOptions{})
	require.Equal(t, "42", string(out.Output), "the host went on")
	require.False(t, out.Warm, "the trapped instance was discarded")

	// A block the host writes counts against the plugin's memory limit.
	kv.mu.Lock()
	kv.data["huge"] = make([]byte, 40<<20) // over the manifest's 32 MiB
	kv.mu.Unlock()
	out = call(t, p, "lookup", "huge", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindMemoryLimit, out.Kind, out.String())
	require.Contains(t, out.Message, "host function extism:host/user.kv_get panicked: extism:host/user.kv_get: alloc: a block of 41943040 bytes would take the plugin over its memory limit")
}

// Deny by default: a plugin whose manifest does not grant
// extism:host/user reaches none of its functions (it is not loaded), and
// a runtime that has no such functions refuses the module, saying how to
// give them.
func TestExtismUserNeedsGrant(t *testing.T) {
	t.Parallel()
	kv := newUserKV(t)
	wasm := extismKV(t)
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t),
		HostModules: extism.HostModules(kv.funcs()...)})
	man := userManifest()
	man.HostModules = man.HostModules[:3]
	_, err := rt.LoadPlugin(context.Background(), wasm, man)
	var me *sandbox.ModuleError
	require.ErrorAs(t, err, &me)
	require.Equal(t, sandbox.KindBadImport, me.Kind)
	require.Contains(t, me.Message, `but its manifest does not grant host module "extism:host/user"`)

	bare := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t)})
	_, err = bare.LoadPlugin(context.Background(), wasm, man)
	require.ErrorAs(t, err, &me)
	require.Equal(t, sandbox.KindBadImport, me.Kind)
	require.Contains(t, me.Message, "which no host function provides (the host app gives Extism plugins its own functions with extism.HostModules, package sandbox/extism")
}

// A host function in extism:host/user that ignores its context: Call
// returns at its deadline plus the watchdog while the host function is
// still blocked (the test releases it only after), the instance is never
// used again, the module gets a strike, and the second such call is
// unstoppable and refuses the module.
func TestExtismUserHostFunctionIgnoresStop(t *testing.T) {
	t.Parallel()
	kv := newUserKV(t)
	logger, lw := newLogWatch()
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t), StopWatchdog: 50 * time.Millisecond, Logger: logger,
		HostModules: extism.HostModules(kv.funcs()...)})
	wasm := extismKV(t)
	p, err := rt.LoadPlugin(context.Background(), wasm, userManifest())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	warm := call(t, p, "lookup", "answer", sandbox.CallOptions{}) // the instance is made under the long timeout
	require.Equal(t, sandbox.KindSucceeded, warm.Kind, warm.String())

	short := sandbox.CallOptions{Timeout: 100 * time.Millisecond}
	out := call(t, p, "stuck", "", short)
	waitFor(t, kv.entered, "the call entered hold")
	select {
	case <-kv.returned:
		t.Fatal("Call waited for the host function")
	default:
	}
	require.True(t, out.Abandoned, out.String())
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	require.Contains(t, out.Message, "call timeout of 100ms reached; forced, but the guest did not end within 50ms of its forced stop; abandoned")
	require.Equal(t, 1, rt.Stats().Stray)

	next := call(t, p, "lookup", "answer", sandbox.CallOptions{})
	require.Equal(t, "42", string(next.Output))
	require.False(t, next.Warm, "the abandoned instance is never reused")

	ended := lw.Next("an abandoned guest ended after all")
	kv.release <- struct{}{}
	waitFor(t, ended, "the stray ends once its host function returns")
	// The stray's worker discards the instance after it logs its end.
	testutil.WaitFor(t, "the abandoned instance discarded", func() bool { return p.Stats().Discarded == 1 })

	out = call(t, p, "stuck", "", short)
	waitFor(t, kv.entered, "the second call entered hold")
	require.Equal(t, sandbox.KindUnstoppable, out.Kind, out.String())
	require.Contains(t, out.Message, "abandoned run 2 of this module")
	require.Equal(t, 1, lw.Logs.FilterMessageSnippet("run abandoned").FilterField(zap.Bool("module_refused", true)).Len())
	out = call(t, p, "lookup", "answer", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindUnstoppable, out.Kind, "refused, not run: %s", out)
	_, err = rt.LoadPlugin(context.Background(), wasm, userManifest())
	require.ErrorIs(t, err, sandbox.ErrUnstoppable)
}
