package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchSharesRunCache: with data_dir at its default, runner run and
// runner batch keep compiled modules in one cache, the user's: a module
// runner run compiled is not compiled again by runner batch in the same
// folder (no new cache entry), and batch makes no data_dir/cache of its
// own (issue 42, item 6).
func TestBatchSharesRunCache(t *testing.T) {
	t.Parallel()
	xdg, work := t.TempDir(), t.TempDir()
	in := filepath.Join(work, "in")
	require.NoError(t, os.Mkdir(in, 0o700))
	for _, n := range []string{"a.txt", "b.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(in, n), []byte("hi "+n), 0o600))
	}
	runIn := func(args ...string) string {
		cmd := exec.Command(runnerBin, args...)
		cmd.Dir, cmd.Env = work, append(os.Environ(), "XDG_CACHE_HOME="+xdg, "RUNNER_LOG_FORMAT=json")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		require.NoError(t, cmd.Run(), errb.String())
		return errb.String()
	}
	entries := func() []string {
		var out []string
		_ = filepath.WalkDir(filepath.Join(xdg, "stint"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	echo := fixture(t, "echo")
	runIn("run", "-v", echo, "--input", filepath.Join(in, "a.txt"))
	first := entries()
	require.NotEmpty(t, first, "runner run compiled into the user's cache")
	runIn("batch", echo, "--in", in, "--out", filepath.Join(work, "out"))
	require.Equal(t, first, entries(), "runner batch compiled the module again")
	require.DirExists(t, filepath.Join(work, "stint-data"), "batch's store")
	require.NoDirExists(t, filepath.Join(work, "stint-data", "cache"))
	got, err := os.ReadFile(filepath.Join(work, "out", "b.txt"))
	require.NoError(t, err)
	require.Equal(t, "hi b.txt", string(got))
}
