package extism_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/extism"
)

// The log levels have the go-sdk's names, values, strings and Extism
// numbers.
func TestLogLevels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		l      extism.LogLevel
		value  int32
		name   string
		compat int32
	}{
		{extism.LogLevelTrace, 1, "TRACE", 0}, {extism.LogLevelDebug, 2, "DEBUG", 1}, {extism.LogLevelInfo, 3, "INFO", 2},
		{extism.LogLevelWarn, 4, "WARN", 3}, {extism.LogLevelError, 5, "ERROR", 4}, {extism.LogLevelOff, math.MaxInt32, "OFF", math.MaxInt32},
		{extism.LogLevel(0), 0, "OFF", math.MaxInt32},
	} {
		require.Equal(t, c.value, int32(c.l))
		require.Equal(t, c.name, c.l.String())
		require.Equal(t, c.compat, c.l.ExtismCompat(), c.name)
	}
	require.Equal(t, int32(sandbox.ExtismLogLevel), extism.LogLevelInfo.ExtismCompat())
}

// A host function's CurrentPlugin.Log and Logf write to the call's stderr
// as the plugin's own log functions do ("[info] ..."), info and above
// only; past the call's stderr cap the call ends as output_limit.
func TestCurrentPluginLog(t *testing.T) {
	t.Parallel()
	kv := newUserKV(t)
	funcs := kv.funcs()
	require.Equal(t, "kv_get", funcs[0].Name)
	funcs[0] = extism.NewHostFunctionWithStack("kv_get", func(_ context.Context, p *extism.CurrentPlugin, stack []uint64) {
		key, err := p.ReadString(stack[0])
		if err != nil {
			panic(err)
		}
		p.Log(extism.LogLevelInfo, "looking up "+key)
		p.Logf(extism.LogLevelWarn, "%d cache misses", 3)
		p.Logf(extism.LogLevelError, "the %s is slow", "store")
		p.Log(extism.LogLevelDebug, "dropped")
		p.Logf(extism.LogLevelTrace, "dropped %d", 1)
		p.Log(extism.LogLevelOff, "dropped")
		p.Log(extism.LogLevel(0), "dropped")
		for key == "flood" {
			p.Log(extism.LogLevelInfo, strings.Repeat("x", 1000))
		}
		if stack[0], err = p.WriteString("v"); err != nil {
			panic(err)
		}
	}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t), HostModules: extism.HostModules(funcs...)})
	man := userManifest()
	man.Limits.MaxStderr = 8 << 10
	p, err := rt.LoadPlugin(context.Background(), extismKV(t), man)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })

	out := call(t, p, "lookup", "answer", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "v", string(out.Output))
	require.Equal(t, "[info] looking up answer\n[warn] 3 cache misses\n[error] the store is slow\n", string(out.Stderr))

	out = call(t, p, "lookup", "flood", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindOutputLimit, out.Kind, out.String())
	require.Contains(t, out.Message, "stderr over its limit of 8192 bytes")
}

// A plugin that imports its host app's functions, loaded from Extism's
// JSON manifest as with the go-sdk (which has no field for them: the host
// app passes them with it): ManifestFromExtism grants extism:host/user,
// and the plugin reaches the runtime's extism.HostModules.
func TestManifestFromExtismWithHostFunctions(t *testing.T) {
	t.Parallel()
	kv := newUserKV(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kv.wasm"), extismKV(t), 0o600))
	man, wasm, err := sandbox.ManifestFromExtism(context.Background(),
		[]byte(`{"wasm": [{"path": "kv.wasm"}], "timeout_ms": 30000, "memory": {"max_pages": 512}}`), sandbox.ExtismManifestOptions{Dir: dir})
	require.NoError(t, err)
	require.Contains(t, man.HostModules, extism.UserModule)
	// extism-kv also imports Stint's own stint module (guest.StopRequested),
	// which no Extism manifest can grant: the host app adds it.
	man.HostModules = append(man.HostModules, sandbox.HostModule)
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t), HostModules: extism.HostModules(kv.funcs()...)})
	p, err := rt.LoadPlugin(context.Background(), wasm, man)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	out := call(t, p, "lookup", "answer", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "42", string(out.Output))
}
