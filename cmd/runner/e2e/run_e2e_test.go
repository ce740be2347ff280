package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

func fixture(t *testing.T, name string) string {
	return filepath.Join(testwasm.RepoRoot(t), "internal", "testwasm", "wat", name+".wasm")
}

func TestRunHello(t *testing.T) {
	t.Parallel()
	hello := testwasm.GoGuest(t, "hello")
	out, stderr, code := runRunner(t, "hello, stint\n", "run", "-v", hello, "--input", "-", "--data-dir", dataDir(t))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "HELLO, STINT\n", out)
	require.Contains(t, stderr, `"outcome":"succeeded"`)
}

func TestRunOutcomeExitCodes(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	cases := []struct {
		fixture string
		args    []string
		code    int
		outcome string
	}{
		{"noop", nil, 0, "succeeded"},
		{"exit3", nil, 10, "failed"},
		{"trap", nil, 11, "trapped"},
		{"loop", []string{"--timeout", "200ms"}, 13, "timed_out"},
		{"loop", []string{"--timeout", "200ms", "--sandbox-interrupt", "wazero"}, 13, "timed_out"},
		{"shape_recursion", []string{"--timeout", "200ms"}, 13, "timed_out"},
		{"shape_recursion", []string{"--timeout", "200ms", "--sandbox-interrupt", "wazero"}, 13, "timed_out"},
		{"shape_tree", []string{"--timeout", "200ms"}, 13, "timed_out"},
		{"shape_bulk", []string{"--timeout", "200ms"}, 13, "timed_out"},
		{"memgrow", []string{"--memory", "1MiB"}, 14, "memory_limit"},
		{"flood", nil, 15, "output_limit"},
		{"flood_stderr", []string{"--stderr-cap", "1KiB"}, 15, "output_limit"},
		{"unknown_import", nil, 17, "bad_import"},
		{"stop_aware", []string{"--timeout", "1s"}, 75, "interrupted"},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"run", "-v", fixture(t, c.fixture), "--data-dir", dir}, c.args...)
			_, stderr, code := runRunner(t, "", args...)
			require.Equal(t, c.code, code, stderr)
			require.Contains(t, stderr, `"outcome":"`+c.outcome+`"`)
		})
	}
}

func TestRunStuckIsForcedAtTimeout(t *testing.T) {
	t.Parallel()
	stuck := testwasm.GoGuest(t, "stuck")
	requireTimesOut(t, "", "run", "-v", stuck, "--timeout", "2s", "--data-dir", dataDir(t))
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	empty := filepath.Join(t.TempDir(), "empty.wasm")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	garbage := filepath.Join(t.TempDir(), "garbage.wasm")
	require.NoError(t, os.WriteFile(garbage, []byte("\x00asm\x01\x00\x00\x00\xff\xff\xff"), 0o644))

	runExits(t, 2, "no such file", "run", "-v", "/no/such/module.wasm", "--data-dir", dir)

	runExits(t, 16, "empty module", "run", "-v", empty, "--data-dir", dir)

	runExits(t, 16, "invalid_module", "run", "-v", garbage, "--data-dir", dir)

	runExits(t, 2, `invalid duration "soon"`, "run", "-v", fixture(t, "noop"), "--timeout", "soon", "--data-dir", dir)

	runExits(t, 2, "limits.memory", "run", "-v", fixture(t, "noop"), "--limits-memory", "lots", "--data-dir", dir)

	stderr := runExits(t, 2, "KEY=VALUE", "run", "-v", fixture(t, "noop"), "--env", "NOEQUALS", "--data-dir", dir)

	for _, s := range []string{stderr} {
		require.NotContains(t, s, "panic")
	}
}

func TestRunArgsEnvMount(t *testing.T) {
	t.Parallel()
	out, stderr, code := runRunner(t, "", "run", "-v", fixture(t, "args_env"), "--arg", "x", "--env", "K=V", "--data-dir", dataDir(t))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "args_env.wasm\nx\nK=V\n", out)
}

// TestRunPrimesInterruptedBySIGINT: the first Ctrl-C asks the guest to stop;
// it saves a checkpoint and exits 75; a second run resumes from it and
// prints the same answer as an uninterrupted run.
func TestRunPrimesInterruptedBySIGINT(t *testing.T) {
	t.Parallel()
	primes := testwasm.GoGuest(t, "primes")
	dir := dataDir(t)
	cp := filepath.Join(t.TempDir(), "primes.ckpt")
	const n = "20000000"
	p := startRunner(t, strings.NewReader(n), "run", "-v", primes, "--input", "-", "--checkpoint", cp, "--data-dir", dir, "--timeout", "10m")
	p.waitLine(t, "primes: checkpoint at")
	p.signal(t, syscall.SIGINT)
	require.Equal(t, 75, p.wait(t), p.stderr())
	p.waitLine(t, `"outcome":"interrupted"`)
	saved, err := os.ReadFile(cp)
	require.NoError(t, err)
	require.Len(t, saved, 24, "primes saved its checkpoint")

	// Resume with a smaller limit is refused by primes itself (different n);
	// resume with the same n continues from the checkpoint.
	p2 := startRunner(t, strings.NewReader(n), "run", "-v", primes, "--input", "-", "--checkpoint", cp, "--data-dir", dir, "--timeout", "10m")
	p2.waitLine(t, "resumed from checkpoint")
	p2.signal(t, syscall.SIGINT)
	require.Equal(t, 75, p2.wait(t))
}
