package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/internal/testwasm"
)

// Real programs nobody on the project wrote (issue 42, item 7): the
// corpus's Lua interpreter, SQLite shell and zstd CLI, each run through
// the real runner with its default settings, only the arguments a user
// would give, and checked: Lua's and SQLite's output against the same
// module on wazero alone, in this process; zstd's round trip against its
// input. docs/sandbox.md's compatibility table reports them.

// corpusDir is ../shared/corpus beside the repository (where CI puts it),
// or a skip that says so.
func corpusDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testwasm.RepoRoot(t), "..", "shared", "corpus")
	for _, f := range []string{"lua.wasm", "bench.lua", "sqlite3.wasm", "sqlite-work.sql", "zstd.wasm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Skipf("the real programs' corpus is absent (%v): these tests need ../shared/corpus beside the repository, as CI has it", err)
		}
	}
	return dir
}

// onWazero runs wasm on wazero alone (its WASI, its compiler, no limits),
// with args after the program's name and stdin, and returns its stdout
// and exit code. Compiled modules are kept in the tests' shared cache.
func onWazero(t *testing.T, wasm []byte, stdin []byte, args ...string) ([]byte, uint32) {
	t.Helper()
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(testwasm.CompileCacheDir(t))
	require.NoError(t, err)
	defer cache.Close(ctx)
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	var out, errb bytes.Buffer
	_, err = r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().
		WithArgs(append([]string{"program"}, args...)...).
		WithStdin(bytes.NewReader(stdin)).WithStdout(&out).WithStderr(&errb))
	code := uint32(0)
	if err != nil {
		var exit *sys.ExitError
		require.True(t, errors.As(err, &exit), "wazero: %v (stderr %s)", err, errb.Bytes())
		code = exit.ExitCode()
	}
	return out.Bytes(), code
}

// runDefault runs module through the real runner as a user would, its
// stdin given with --input - and args after --, and nothing else: no
// data dir, no limits (the runner's defaults; the user cache is the
// tests' temporary one, TestMain).
func runDefault(t *testing.T, module string, stdin []byte, args ...string) string {
	t.Helper()
	stdout, stderr, code := runRunner(t, string(stdin), append([]string{"run", "-v", module, "--input", "-", "--"}, args...)...)
	require.Equal(t, 0, code, "runner run %s %v under the default settings:\n%s", filepath.Base(module), args, stderr)
	require.Contains(t, stderr, `"outcome":"succeeded"`)
	return stdout
}

// TestRunRealPrograms: Lua runs bench.lua from stdin, the SQLite shell
// runs sqlite-work.sql on an in-memory database, each giving wazero's
// output byte for byte; zstd compresses 10 MiB of text (-c -3, the same
// bytes as wazero's) and gives it back (-d -c): 10 MiB on stdout, which a
// one-shot run's defaults allow (limits.max_stdout, where a queued task
// has limits.stdout, 1 MiB; issue 42, item 1).
func TestRunRealPrograms(t *testing.T) {
	t.Parallel()
	dir := corpusDir(t)
	read := func(name string) []byte { return readFile(t, filepath.Join(dir, name)) }

	t.Run("lua", func(t *testing.T) {
		t.Parallel()
		got := sameAsWazero(t, dir, "lua.wasm", read("bench.lua"), "-")
		require.True(t, strings.HasPrefix(got, "fib(27)\t196418\n"), got)
	})

	t.Run("sqlite3", func(t *testing.T) {
		t.Parallel()
		got := sameAsWazero(t, dir, "sqlite3.wasm", read("sqlite-work.sql"), ":memory:")
		require.True(t, strings.HasPrefix(got, "100003|14399278|row-00999999\n"), got)
	})

	t.Run("zstd", func(t *testing.T) {
		t.Parallel()
		input := corpusText(10 << 20)
		module := filepath.Join(dir, "zstd.wasm")
		compressed := runDefault(t, module, input, "-c", "-3")
		require.True(t, strings.HasPrefix(compressed, "\x28\xb5\x2f\xfd"), "not a zstd frame")
		require.Less(t, len(compressed), len(input)/2)
		want, code := onWazero(t, read("zstd.wasm"), input, "-c", "-3")
		require.Zero(t, code)
		require.Equal(t, want, []byte(compressed), "zstd -c -3: wazero's bytes")
		back := runDefault(t, module, []byte(compressed), "-d", "-c")
		require.Equal(t, len(input), len(back))
		require.True(t, bytes.Equal(input, []byte(back)), "zstd -d -c gave back other bytes")
	})
}

// sameAsWazero runs module (a file of dir) with runner run's defaults and
// on wazero alone, both with stdin and args, checks that wazero's run
// exits 0 with the same stdout, and returns that stdout.
func sameAsWazero(t *testing.T, dir, module string, stdin []byte, args ...string) string {
	t.Helper()
	got := runDefault(t, filepath.Join(dir, module), stdin, args...)
	want, code := onWazero(t, readFile(t, filepath.Join(dir, module)), stdin, args...)
	require.Zero(t, code)
	require.Equal(t, string(want), got)
	return got
}

// corpusText is n bytes of deterministic text: lines of words from a
// small vocabulary and numbers, which compress about 4:1 at level 3.
func corpusText(n int) []byte {
	words := strings.Fields("stint wasm sandbox runner queue mount zstd lua sqlite task limit memory")
	rng := rand.New(rand.NewPCG(42, 42))
	var b bytes.Buffer
	for b.Len() < n {
		for i := range 3 + rng.IntN(12) {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		fmt.Fprintf(&b, " %d\n", rng.IntN(1e9))
	}
	return b.Bytes()[:n]
}
