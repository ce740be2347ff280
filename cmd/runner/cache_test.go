package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// TestPruneCache: the least recently used files go first (the later of
// access and modification time), stale temporary files before them, until
// the cache fits; a file written in the last minute is never deleted; no
// cap or a cache under it deletes nothing.
func TestPruneCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, size int, age time.Duration) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, make([]byte, size), 0o600))
		at := now.Add(-age)
		require.NoError(t, os.Chtimes(p, at, at))
		return p
	}
	oldest := write("wazero/a", 100, 3*time.Hour)
	used := write("wazero/b", 100, 4*time.Hour)
	require.NoError(t, os.Chtimes(used, now.Add(-time.Hour), now.Add(-4*time.Hour))) // read an hour ago
	middle := write("stint-prepared/c", 100, 2*time.Hour)
	tmp := write("wazero/d.123.tmp", 100, 2*time.Hour)
	fresh := write("wazero/e", 100, 10*time.Second) // maybe being written

	freed, n := pruneCache(dir, 0, zap.NewNop())
	require.Zero(t, n, "no cap")
	require.Zero(t, freed)
	_, n = pruneCache(dir, 500, zap.NewNop())
	require.Zero(t, n, "under the cap")

	freed, n = pruneCache(dir, 250, zap.NewNop())
	require.Equal(t, 3, n)
	require.Equal(t, int64(300), freed)
	for _, p := range []string{tmp, oldest, middle} {
		require.NoFileExists(t, p)
	}
	require.FileExists(t, used, "read recently: kept")
	require.FileExists(t, fresh)

	_, n = pruneCache(dir, 1, zap.NewNop())
	require.Equal(t, 1, n)
	require.NoFileExists(t, used)
	require.FileExists(t, fresh, "never a file written in the last minute")
	require.DirExists(t, filepath.Join(dir, "wazero"), "directories stay")

	// A link in the cache to a file outside it: neither counted nor deleted,
	// nor is its target.
	outside := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(outside, make([]byte, 1000), 0o600))
	old := now.Add(-24 * time.Hour)
	require.NoError(t, os.Chtimes(outside, old, old))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "wazero", "link")))
	_, n = pruneCache(dir, 1, zap.NewNop())
	require.Zero(t, n)
	require.FileExists(t, outside)
}
