package main

import (
	"bytes"
	"context"
	"os"
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

// TestExtismHost is `go run ./examples/extism-host`, with the plugin built
// from wasm-examples/extism-kv.
func TestExtismHost(t *testing.T) {
	src := filepath.Join("..", "..", "wasm-examples", "extism-kv")
	if _, err := os.Stat(src); err != nil {
		t.Skip("no wasm-examples/extism-kv beside the example (copied elsewhere?)")
	}
	wasm, err := buildPlugin(src)
	require.NoError(t, err)
	// A compilation cache shared by test runs: a Go plugin takes seconds
	// to compile.
	cacheDir := filepath.Join(os.TempDir(), "stint-extism-host-example-cache")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, wasm, cacheDir))
	t.Log("\n" + out.String())
	want := `load denied: bad_import: module imports extism:host/user.kv_get, but its manifest does not grant host module "extism:host/user"
lookup("answer") -> succeeded "42" warm=false
store("planet=mars") -> succeeded "stored planet" warm=true
lookup("planet") -> succeeded "mars" warm=true
lookup("pluto") -> succeeded "no such key: pluto" warm=true
wait("") -> succeeded "stopped" warm=true
stuck("") -> timed_out (call timeout of 200ms reached; forced) warm=true
lookup("planet") -> succeeded "mars" warm=false
extism-kv: 7 calls, 2 instances made, 1 discarded
`
	require.Equal(t, want, out.String())
}
