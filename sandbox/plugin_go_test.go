package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
)

// A Go plugin (//go:wasmexport, a wasip1 reactor): warm state across
// calls, a host function, config, and a stuck export that ends at its
// timeout, after which a fresh instance serves the next call.
func TestGoPlugin(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(testwasm.GoPlugin(t, "kvplugin"))
	require.NoError(t, err)
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			kv := &kvHost{data: map[string]string{"answer": "42"}}
			rt := newRuntime(t, sandbox.Config{Interrupt: mode, CacheDir: testwasm.CompileCacheDir(t),
				HostModules: []sandbox.HostModuleDef{kv.module()}})
			p, err := rt.LoadPlugin(context.Background(), wasm, sandbox.Manifest{Name: "kvplugin",
				HostModules: []string{"wasi_snapshot_preview1", "env", "stint_plugin"},
				Config:      map[string]string{"greeting": "hi"},
				Limits:      sandbox.PluginLimits{Timeout: 5 * time.Second}})
			require.NoError(t, err)
			defer p.Close(context.Background())

			out := call(t, p, "greet", "Ada", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String()+string(out.Stderr))
			require.Equal(t, "hi, Ada (call 1)", string(out.Output))
			out = call(t, p, "greet", "Grace", sandbox.CallOptions{})
			require.Equal(t, "hi, Grace (call 2)", string(out.Output))
			require.True(t, out.Warm)
			require.Equal(t, "42", string(call(t, p, "lookup", "answer", sandbox.CallOptions{}).Output))
			require.Equal(t, "no such key: nope", string(call(t, p, "lookup", "nope", sandbox.CallOptions{}).Output))
			require.Equal(t, "SHOUT", string(call(t, p, "upper", "shout", sandbox.CallOptions{}).Output))
			require.Equal(t, sandbox.KindSucceeded, call(t, p, "noop", "", sandbox.CallOptions{}).Kind)

			out = call(t, p, "spin", "", sandbox.CallOptions{Timeout: 200 * time.Millisecond})
			require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
			out = call(t, p, "greet", "Ada", sandbox.CallOptions{})
			require.Equal(t, "hi, Ada (call 1)", string(out.Output), "a fresh instance after the stuck call")
			require.False(t, out.Warm)
			require.Equal(t, int64(2), p.Stats().Instantiations)
		})
	}
}

// A C plugin (clang and wasi-libc), built here when they are installed.
func TestCPlugin(t *testing.T) {
	t.Parallel()
	clang, err := exec.LookPath("clang-14")
	if err != nil {
		t.Skip("clang-14 is not installed")
	}
	if _, err := os.Stat("/usr/lib/wasm32-wasi/libc.a"); err != nil {
		t.Skip("wasi-libc is not installed")
	}
	out := filepath.Join(t.TempDir(), "upper.wasm")
	src := filepath.Join(testwasm.RepoRoot(t), "wasm-examples", "cplugin", "upper.c")
	msg, err := exec.Command(clang, "--target=wasm32-wasi", "--sysroot=/usr", "-mexec-model=reactor", "-O2",
		"-nodefaultlibs", "-lc", "-o", out, src).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	wasm, err := os.ReadFile(out)
	require.NoError(t, err)
	rt := newRuntime(t, sandbox.Config{})
	p, err := rt.LoadPlugin(context.Background(), wasm, sandbox.Manifest{Name: "upper", HostModules: []string{"wasi_snapshot_preview1"}})
	require.NoError(t, err)
	defer p.Close(context.Background())
	for _, in := range []string{"hello from c", "again, warm", ""} {
		res := call(t, p, "upper", in, sandbox.CallOptions{})
		require.Equal(t, sandbox.KindSucceeded, res.Kind, res.String())
		require.Equal(t, strings.ToUpper(in), string(res.Output))
	}
	require.Equal(t, int64(1), p.Stats().Instantiations)
}

// A Go plugin written with the PDK (guest/plugin, wasm-examples/kvplugin):
// a host value longer than Get's first buffer comes whole, an empty input
// reaches the export as empty, and Handle's error fails the call (exit 1,
// the message on stderr) and discards the instance.
func TestGoPluginPDK(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(testwasm.GoPlugin(t, "kvplugin"))
	require.NoError(t, err)
	long := strings.Repeat("v", 1000)
	kv := &kvHost{data: map[string]string{"long": long}}
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t), HostModules: []sandbox.HostModuleDef{kv.module()}})
	p, err := rt.LoadPlugin(context.Background(), wasm, sandbox.Manifest{Name: "kvplugin",
		HostModules: []string{"wasi_snapshot_preview1", "env", "stint_plugin"},
		Limits:      sandbox.PluginLimits{Timeout: 30 * time.Second}})
	require.NoError(t, err)
	defer p.Close(context.Background())

	require.Equal(t, long, string(call(t, p, "lookup", "long", sandbox.CallOptions{}).Output))
	require.Equal(t, "hello,  (call 1)", string(call(t, p, "greet", "", sandbox.CallOptions{}).Output), "no config, no input")
	out := call(t, p, "double", "21", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "42", string(out.Output))

	out = call(t, p, "double", "x", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindFailed, out.Kind, out.String())
	require.EqualValues(t, 1, out.ExitCode)
	require.Equal(t, "strconv.Atoi: parsing \"x\": invalid syntax\n", string(out.Stderr))
	require.EqualValues(t, 1, p.Stats().Discarded)
	out = call(t, p, "double", "5", sandbox.CallOptions{})
	require.Equal(t, "10", string(out.Output))
	require.False(t, out.Warm)
}
