package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
)

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
