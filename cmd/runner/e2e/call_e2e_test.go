package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

func TestCallPlugin(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	out, stderr, code := runRunner(t, "hello, plugin", "call", fixture(t, "plugin_basic"), "upper", "--input", "-", "--data-dir", dir, "-v")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "HELLO, PLUGIN", out)
	require.Contains(t, stderr, `"outcome":"succeeded"`)

	runExits(t, 13, `"outcome":"timed_out"`,
		"call", fixture(t, "plugin_basic"), "spin", "--timeout", "200ms", "--data-dir", dir, "--log-level", "info")
	_, stderr, code = runRunner(t, "", "call", fixture(t, "plugin_basic"), "spin", "--timeout", "200ms", "--data-dir", dir)
	require.Equal(t, 13, code, stderr)
	require.Regexp(t, `^runner: plugin_basic\.wasm spin: timed_out: [^\n]*\n$`, withoutDirWarning(stderr), "quiet by default: one line")

	_, stderr, code = runRunner(t, "x", "call", fixture(t, "plugin_basic"), "big", "--output-cap", "1KiB", "--data-dir", dir)
	require.Equal(t, 15, code, stderr)
	require.Contains(t, stderr, "output of 65536 bytes is over its limit of 1024 bytes")

	// Deny by default: nothing granted, so the host import is refused.
	runExits(t, 17, "module imports env.kv_get", "call", fixture(t, "plugin_host"), "config", "--data-dir", dir)

	runExits(t, 2, `has no export "nope"`, "call", fixture(t, "plugin_basic"), "nope", "--data-dir", dir)

	runExits(t, 2, `host module "kv": no such host module`,
		"call", fixture(t, "plugin_basic"), "noop", "--grant", "kv", "--data-dir", dir)
}

// TestCallExtismPlugin: a plugin built with Extism's Go PDK, unchanged,
// through runner call: refused until its manifest grants extism:host/env,
// then its greet export answers; an error it sets is a failed call.
func TestCallExtismPlugin(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	greet := testwasm.GoPlugin(t, "extism-greet")

	_, stderr, code := runRunner(t, "Ada", "call", greet, "greet", "--input", "-", "--grant", "wasi_snapshot_preview1", "--data-dir", dir)
	require.Equal(t, 17, code, stderr)
	require.Contains(t, stderr, `no --grant names: extism:host/env (add --grant extism:host/env)`)

	out, stderr, code := runRunner(t, "Ada", "call", greet, "greet", "--input", "-",
		"--grant", "extism:host/env", "--grant", "wasi_snapshot_preview1", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "Hello, Ada!", out)
}
