package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The tests import nothing of this repository but package sandbox, like
// main.go: the example can be copied into another module as it is.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	denied = `load denied: bad_import: module imports env.kv_get, but its manifest does not grant host module "env"
`
	watCalls = `watplugin.kv("planet") -> succeeded "mars" warm=false
watplugin.config("motd") -> succeeded "the WAT plugin reads its own config" warm=true
watplugin.config("greeting") -> succeeded "denied" warm=true
watplugin.stop_aware("") -> succeeded "stopped" warm=true
watplugin.spin("") -> timed_out (call timeout of 100ms reached; forced) warm=true
watplugin.kv("answer") -> succeeded "42" warm=false
`
)

// TestPluginHost is `go run ./examples/plugin-host`: its own plugin only.
func TestPluginHost(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, nil, ""))
	t.Log("\n" + out.String())
	require.Equal(t, denied+watCalls+"watplugin: 6 calls, 2 instances made, 1 discarded\n", out.String())
}

// TestPluginHostKVPlugin adds the Go plugin (-kvplugin), built from
// wasm-examples/kvplugin when the example is in its repository.
func TestPluginHostKVPlugin(t *testing.T) {
	src := filepath.Join("..", "..", "wasm-examples", "kvplugin")
	if _, err := os.Stat(src); err != nil {
		t.Skip("no wasm-examples/kvplugin beside the example (copied elsewhere?)")
	}
	goWasm := filepath.Join(t.TempDir(), "kvplugin.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", goWasm, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=")
	msg, err := build.CombinedOutput()
	require.NoError(t, err, "building kvplugin: %s", msg)
	wasm, err := os.ReadFile(goWasm)
	require.NoError(t, err)

	// A compilation cache shared by test runs: a Go plugin takes seconds
	// to compile.
	cacheDir := filepath.Join(os.TempDir(), "stint-plugin-host-example-cache")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, wasm, cacheDir))
	t.Log("\n" + out.String())
	want := denied + `kvplugin.greet("Ada") -> succeeded "hi, Ada (call 1)" warm=false
kvplugin.greet("Grace") -> succeeded "hi, Grace (call 2)" warm=true
kvplugin.lookup("answer") -> succeeded "42" warm=true
kvplugin.lookup("pluto") -> succeeded "no such key: pluto" warm=true
kvplugin.spin("") -> timed_out (call timeout of 200ms reached; forced) warm=true
kvplugin.greet("Ada") -> succeeded "hi, Ada (call 1)" warm=false
` + watCalls + `watplugin: 6 calls, 2 instances made, 1 discarded
kvplugin: 6 calls, 2 instances made, 1 discarded
`
	require.Equal(t, want, out.String())
}

// TestPluginWasmUpToDate checks that plugin.wasm is plugin.wat built, when
// wat2wasm (WABT) is on PATH.
func TestPluginWasmUpToDate(t *testing.T) {
	bin, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not on PATH")
	}
	out := filepath.Join(t.TempDir(), "plugin.wasm")
	msg, err := exec.Command(bin, "--debug-names", "plugin.wat", "-o", out).CombinedOutput()
	require.NoError(t, err, "wat2wasm: %s", msg)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, pluginWasm), "plugin.wasm is stale: run wat2wasm --debug-names plugin.wat -o plugin.wasm")
}
