package sandbox_test

import (
	"context"
	"os"
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
	for _, mode := range sandbox.InterruptModes {
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
