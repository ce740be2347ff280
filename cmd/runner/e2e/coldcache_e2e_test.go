package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

// copyDir copies the regular files of a directory tree (a data directory's
// cache) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	}))
}

// onlyFile is the one file in dir.
func onlyFile(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, dir)
	return filepath.Join(dir, ents[0].Name())
}

// TestRunColdCacheDamaged: `runner run` of a Go guest from a warm cache
// whose prepared-module entry (or wazero's own entry) is truncated,
// emptied, has a byte flipped or is garbage still gives the right output
// and exit code, never a crash or a wrong result: the module is prepared
// (or compiled) again, a warning says so, and the entry is rewritten, so
// the next run starts warm without a warning. Real binary, real guest,
// real cache directory (its own: the damage must not reach the cache the
// other tests share).
func TestRunColdCacheDamaged(t *testing.T) {
	t.Parallel()
	hello := testwasm.GoGuest(t, "hello")
	warm := t.TempDir()
	require.NoError(t, os.Chmod(warm, 0o700))
	_, stderr, code := runRunner(t, "hi\n", "run", "-v", hello, "--input", "-", "--data-dir", warm)
	require.Equal(t, 0, code, stderr)
	preparedDir := filepath.Join(warm, "cache", "stint-prepared")
	entry := filepath.Base(onlyFile(t, preparedDir))

	rewrite := func(f func(b []byte) []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, f(readFile(t, path)), 0o600))
		}
	}
	flip := func(at func(n int) int) func(t *testing.T, path string) {
		return rewrite(func(b []byte) []byte { b[at(len(b))] ^= 0x10; return b })
	}
	for _, c := range []struct {
		name    string
		wazero  bool // damage wazero's entry instead of Stint's
		damage  func(t *testing.T, path string)
		warning string
	}{
		{"truncated to half", false, rewrite(func(b []byte) []byte { return b[:len(b)/2] }), "prepared-module cache entry is damaged"},
		{"truncated to 10 bytes", false, rewrite(func(b []byte) []byte { return b[:10] }), "prepared-module cache entry is damaged"},
		{"empty", false, rewrite(func([]byte) []byte { return nil }), "prepared-module cache entry is damaged"},
		{"one more byte", false, rewrite(func(b []byte) []byte { return append(b, 0) }), "prepared-module cache entry is damaged"},
		{"byte flipped in the header's length", false, flip(func(int) int { return 50 }), "prepared-module cache entry is damaged"},
		{"byte flipped in the module", false, flip(func(int) int { return 200 }), "prepared-module cache entry is damaged"},
		{"byte flipped in the image", false, flip(func(n int) int { return n - 100 }), "prepared-module cache entry is damaged"},
		{"garbage", false, rewrite(func(b []byte) []byte {
			for i := range b {
				b[i] = byte(i * 7)
			}
			return b
		}), "prepared-module cache entry is damaged"},
		{"wazero's entry truncated", true, rewrite(func(b []byte) []byte { return b[:len(b)/2] }), "the compilation cache failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.Chmod(dir, 0o700))
			copyDir(t, filepath.Join(warm, "cache"), filepath.Join(dir, "cache"))
			path := filepath.Join(dir, "cache", "stint-prepared", entry)
			if c.wazero {
				ents, err := filepath.Glob(filepath.Join(dir, "cache", "wazero-*"))
				require.NoError(t, err)
				require.Len(t, ents, 1)
				path = onlyFile(t, ents[0])
			}
			c.damage(t, path)

			out, stderr, code := runRunner(t, "hello, stint\n", "run", "-v", hello, "--input", "-", "--data-dir", dir)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, "HELLO, STINT\n", out)
			require.Contains(t, stderr, c.warning)

			if c.wazero {
				return // wazero rewrites its entry when it can; that is its business
			}
			out, stderr, code = runRunner(t, "again\n", "run", "-v", hello, "--input", "-", "--data-dir", dir)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, "AGAIN\n", out)
			require.NotContains(t, stderr, "damaged", "the entry was rewritten")
		})
	}
}

// TestRunModuleFileErrors: a module path that is missing or a directory
// is a usage error (exit 2) before anything is built.
func TestRunModuleFileErrors(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	_, stderr, code := runRunner(t, "", "run", "-v", filepath.Join(dir, "missing.wasm"), "--data-dir", dir)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "no such file")
	_, stderr, code = runRunner(t, "", "run", "-v", dir, "--data-dir", dir)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "is a directory")
}

// TestRunModuleFromPipe: a module that is not a regular file (a pipe, as
// from <(curl ...)) is read once and runs, as before CompileFile.
func TestRunModuleFromPipe(t *testing.T) {
	t.Parallel()
	hello := testwasm.GoGuest(t, "hello")
	dir := dataDir(t)
	input := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(input, []byte("piped\n"), 0o600))
	out, stderr, code := runRunner(t, string(readFile(t, hello)), "run", "-v", "/dev/stdin", "--input", input, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "PIPED\n", out)
}
