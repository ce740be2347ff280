package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stint-run/stint/internal/testwasm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestPluginHost(t *testing.T) {
	goWasm, err := os.ReadFile(testwasm.GoPlugin(t, "kvplugin"))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, goWasm, testwasm.CompileCacheDir(t)))
	t.Log("\n" + out.String())
	want := `load denied: bad_import: module imports env.kv_get, but its manifest does not grant host module "env"
kvplugin.greet("Ada") -> succeeded "hi, Ada (call 1)" warm=false
kvplugin.greet("Grace") -> succeeded "hi, Grace (call 2)" warm=true
kvplugin.lookup("answer") -> succeeded "42" warm=true
kvplugin.lookup("pluto") -> succeeded "no such key: pluto" warm=true
kvplugin.spin("") -> timed_out (call timeout of 200ms reached; forced) warm=true
kvplugin.greet("Ada") -> succeeded "hi, Ada (call 1)" warm=false
plugin_host.kv("planet") -> succeeded "mars" warm=false
plugin_host.config("motd") -> succeeded "the WAT plugin reads its own config" warm=true
plugin_host.config("greeting") -> succeeded "denied" warm=true
plugin_host.stop_aware("") -> succeeded "stopped" warm=true
plugin_host.kv("answer") -> succeeded "42" warm=true
kvplugin: 6 calls, 2 instances made, 1 discarded
plugin_host: 5 calls, 1 instances made, 0 discarded
`
	require.Equal(t, want, out.String())
}
