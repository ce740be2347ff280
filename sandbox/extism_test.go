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

// extismManifest grants what a Go PDK plugin imports: WASI (the Go
// runtime) and Extism's ABI.
func extismManifest() sandbox.Manifest {
	return sandbox.Manifest{Name: "extism-greet",
		HostModules: []string{"wasi_snapshot_preview1", sandbox.ExtismModule},
		Config:      map[string]string{"greeting": "hi"},
		Limits:      sandbox.PluginLimits{Timeout: 30 * time.Second, MemoryBytes: 32 << 20}} // a long timeout: the machine may be loaded
}

func loadExtismGreet(t *testing.T, mode sandbox.InterruptMode, man sandbox.Manifest) *sandbox.Plugin {
	t.Helper()
	wasm, err := os.ReadFile(testwasm.GoPlugin(t, "extism-greet"))
	require.NoError(t, err)
	rt := newRuntime(t, sandbox.Config{Interrupt: mode, CacheDir: testwasm.CompileCacheDir(t)})
	p, err := rt.LoadPlugin(context.Background(), wasm, man)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	return p
}

// A plugin built with Extism's Go PDK, unchanged: input and output,
// config (granted and not), vars across warm calls, logs on stderr, an
// error, a stuck export stopped by its timeout, memory without end, HTTP
// denied.
func TestExtismGoPDK(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			p := loadExtismGreet(t, mode, extismManifest())
			require.Contains(t, p.Exports(), "greet")

			out := call(t, p, "greet", "Ada", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
			require.Equal(t, "Hello, Ada!", string(out.Output))
			big := string(make([]byte, 100_003)) // not a multiple of 8: input_load_u64 then input_load_u8
			out = call(t, p, "greet", big, sandbox.CallOptions{})
			require.Equal(t, "Hello, "+big+"!", string(out.Output))
			require.True(t, out.Warm)

			require.Equal(t, "hi", string(call(t, p, "config", "greeting", sandbox.CallOptions{}).Output))
			require.Equal(t, "<none>", string(call(t, p, "config", "secret", sandbox.CallOptions{}).Output), "only granted keys")

			for i, want := range []string{"1", "2", "3"} {
				out := call(t, p, "count", "", sandbox.CallOptions{})
				require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
				require.Equal(t, want, string(out.Output), "call %d", i)
			}

			out = call(t, p, "log", "hello", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
			require.Equal(t, "[info] info: hello\n[warn] warn: hello\n[error] error: hello\n", string(out.Stderr))
			require.Empty(t, out.Output)

			out = call(t, p, "fail", "now", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindFailed, out.Kind, out.String())
			require.Equal(t, uint32(1), out.ExitCode)
			require.Equal(t, "fail returned 1: failed on purpose: now", out.Message)
			out = call(t, p, "count", "", sandbox.CallOptions{})
			require.Equal(t, "4", string(out.Output), "an error return keeps the instance and its vars")
			require.True(t, out.Warm)

			out = call(t, p, "http", "", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindTrapped, out.Kind, out.String())
			require.Equal(t, "extism:host/env.http_request: denied: the plugin's manifest allows no hosts (allowed_hosts)", out.Message)

			out = call(t, p, "count", "", sandbox.CallOptions{})
			require.Equal(t, "1", string(out.Output), "vars go with the discarded instance")
			require.False(t, out.Warm)

			out = call(t, p, "spin", "", sandbox.CallOptions{Timeout: 200 * time.Millisecond})
			require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())

			out = call(t, p, "kernelhog", "", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindMemoryLimit, out.Kind, out.String())
			require.Contains(t, out.Message, "extism:host/env.alloc: a block of 1048576 bytes would take the plugin over its memory limit of 33554432 bytes")

			out = call(t, p, "hog", "", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindMemoryLimit, out.Kind, out.String())

			out = call(t, p, "greet", "again", sandbox.CallOptions{})
			require.Equal(t, "Hello, again!", string(out.Output))
			require.False(t, out.Warm, "a fresh instance after the limit")
			st := p.Stats()
			require.Equal(t, int64(5), st.Instantiations, "the first, then after http, spin, kernelhog and hog")
		})
	}
}

// A forced stop (the caller's context) ends a stuck Extism export like any.
func TestExtismForcedStop(t *testing.T) {
	t.Parallel()
	p := loadExtismGreet(t, sandbox.InterruptChecks, extismManifest())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *sandbox.Outcome, 1)
	go func() {
		out, err := p.CallWith(ctx, "spin", nil, sandbox.CallOptions{})
		if err != nil {
			out = &sandbox.Outcome{Message: err.Error()}
		}
		done <- out
	}()
	cancel()
	out := <-done
	require.Equal(t, sandbox.KindForced, out.Kind, out.String())
}

// The manifest must grant Extism's module, like any.
func TestExtismNeedsGrant(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(testwasm.GoPlugin(t, "extism-greet"))
	require.NoError(t, err)
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t)})
	_, err = rt.LoadPlugin(context.Background(), wasm, sandbox.Manifest{HostModules: []string{"wasi_snapshot_preview1"}})
	require.ErrorIs(t, err, sandbox.ErrBadImport)
	require.Contains(t, err.Error(), `its manifest does not grant host module "extism:host/env"`)
}
