package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

// TestCallNamesEveryMissingGrant: runner call of a plugin whose --grant
// flags miss host modules it imports names them all at once and the flags
// that give them, in the command's words (no manifest the user never
// wrote); exit 17, bad_import.
func TestCallNamesEveryMissingGrant(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	greet := testwasm.GoPlugin(t, "extism-greet")

	_, stderr, code := runRunner(t, "Ada", "call", greet, "greet", "--input", "-", "--data-dir", dir)
	require.Equal(t, 17, code, stderr)
	require.Regexp(t, `^runner: \S+\.wasm greet: bad_import: the module imports functions from host modules no --grant names: `+
		`wasi_snapshot_preview1, extism:host/env \(add --grant wasi_snapshot_preview1 --grant extism:host/env\)\n$`, withoutDirWarning(stderr))
	require.NotContains(t, stderr, "manifest")

	_, stderr, code = runRunner(t, "Ada", "call", greet, "greet", "--input", "-", "--grant", "wasi_snapshot_preview1", "--data-dir", dir)
	require.Equal(t, 17, code, stderr)
	require.Contains(t, stderr, "no --grant names: extism:host/env (add --grant extism:host/env)\n")

	// A module that imports what no --grant gives: the load names it.
	runExits(t, 17, "module imports env.kv_get, which Stint does not provide",
		"call", fixture(t, "plugin_host"), "config", "--data-dir", dir)
}

// TestCallExtismManifestHostFunctions: an Extism manifest's plugin that
// imports its host app's functions (extism:host/user) is refused by
// runner call, which has none, saying who gives them.
func TestCallExtismManifestHostFunctions(t *testing.T) {
	t.Parallel()
	m := pluginManifestFile(t, "extism-kv", "kv", `"memory": {"max_pages": 512}, "timeout_ms": 30000`)
	stderr := runExits(t, 17, "module imports extism:host/user.",
		"call", "--manifest", m, "lookup", "--input-text", "answer", "--data-dir", dataDir(t))
	require.Contains(t, stderr, "with extism.HostModules, package sandbox/extism")
}

// TestCallInputNotAFile: --input names a file; given what is not one, the
// error says to give the input itself with --input-text.
func TestCallInputNotAFile(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	runExits(t, 2, "--input hello world: no such file (--input reads a file, or stdin with -; for the input itself, give --input-text 'hello world')",
		"call", fixture(t, "plugin_basic"), "upper", "--input", "hello world", "--data-dir", dir)

	runExits(t, 2, "a directory, not a file (for the input itself, give --input-text)",
		"call", fixture(t, "plugin_basic"), "upper", "--input", t.TempDir(), "--data-dir", dir)

	out, stderr, code := runRunner(t, "", "call", fixture(t, "plugin_basic"), "upper", "--input-text", "hello world", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "HELLO WORLD", out)
}
