package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleOverSizeLimitNotRead: a module file over max_module_size is
// refused by its size, before it is read, and a module "file" that never
// ends (/dev/zero) once max_module_size has been read: never read whole,
// by every command that takes a module. On the code before, /dev/zero ran
// until the test's bound, its memory growing without end. A checkpoint
// file that is not a regular file is refused, one over
// limits.max_checkpoint once that much is read.
func TestModuleOverSizeLimitNotRead(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	big := filepath.Join(t.TempDir(), "big.wasm")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(2<<20)) // sparse: 2 MiB of zeros, over the 1 MiB limit
	require.NoError(t, f.Close())
	// Through the environment: every command reads it (not every one has
	// the --sandbox-module-limits flag).
	env := []string{"RUNNER_SANDBOX_MODULE_LIMITS=max_module_size=1048576", "RUNNER_LIMITS_MAX_CHECKPOINT=1MiB"}

	_, stderr, code := runRunnerWith(t, env, "", "run", "-v", big, "--data-dir", dir)
	require.Equal(t, 16, code, stderr) // invalid_module
	require.Contains(t, stderr, "module of 2097152 bytes, over the limit of 1048576 (sandbox module limit max_module_size)")

	in := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(in, "a.txt"), []byte("a"), 0o600))
	for _, args := range [][]string{
		{"run", "-v", "/dev/zero"},
		{"submit", "/dev/zero"},
		{"call", "/dev/zero", "f"},
		{"batch", "/dev/zero", "--in", in, "--out", filepath.Join(t.TempDir(), "out")},
		{"batch", big, "--in", in, "--out", filepath.Join(t.TempDir(), "out")},
	} {
		_, stderr, code := runRunnerWith(t, env, "", append(args, "--data-dir", dir)...)
		require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "over the limit of 1MiB (sandbox module limit max_module_size)", "%v", args)
	}

	// A checkpoint that is not a regular file is refused before it is
	// read; a regular one over limits.max_checkpoint once that much is.
	_, stderr, code = runRunnerWith(t, env, "", "run", "-v", fixture(t, "noop"), "--checkpoint", "/dev/zero", "--data-dir", dir)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "--checkpoint: /dev/zero: not a regular file")
	_, stderr, code = runRunnerWith(t, env, "", "run", "-v", fixture(t, "noop"), "--checkpoint", big, "--data-dir", dir)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "more than 1MiB (limits.max_checkpoint)")
}
