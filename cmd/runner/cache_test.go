package main

import (
	"os"
	"path/filepath"
	"strings"
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

// TestCacheDirChoice: one compilation cache for every command:
// sandbox.cache_dir when set, else data_dir/cache when data_dir is set,
// else the user's; runner cache list shows which, and its entries.
func TestCacheDirChoice(t *testing.T) {
	t.Parallel()
	user, err := os.UserCacheDir() // the tests' temporary one (TestMain)
	require.NoError(t, err)
	own := filepath.Join(t.TempDir(), "own-cache")
	data := t.TempDir()
	out, stderr, code := runInProcess(t, "cache", "list", "--sandbox-cache-dir", own)
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(out, own+": 0 entries, 0 B of 2.0 GiB"), out)
	fi, err := os.Stat(own)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	out, stderr, code = runInProcess(t, "cache", "list", "--data-dir", data)
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(out, filepath.Join(data, "cache")+": "), out)

	out, stderr, code = runInProcess(t, "cache", "list", "--sandbox-user-cache", "on")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(out, filepath.Join(user, userCacheName)+": "), out)

	// A run with data_dir set compiles into data_dir/cache, which lists it.
	_, stderr, code = runInProcess(t, "run", fixture(t, "noop"), "--data-dir", data)
	require.Equal(t, 0, code, stderr)
	out, _, _ = runInProcess(t, "cache", "list", "--data-dir", data)
	require.Contains(t, out, "prepared")
	require.Contains(t, out, "compiled")
}

// TestCachePrune: runner cache prune trims the cache to --max-bytes (or
// sandbox.cache_max_bytes), least recently used first, --all to nothing
// but what was written in the last minute; bad sizes and both flags are
// usage errors.
func TestCachePrune(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, make([]byte, 1000), 0o600))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
		return p
	}
	old := write("stint-prepared/old", 3*time.Hour)
	recent := write("wazero-x/recent", time.Hour)
	fresh := write("wazero-x/fresh", 0)
	out, stderr, code := runInProcess(t, "cache", "prune", "--sandbox-cache-dir", dir, "--max-bytes", "2500")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "1 file deleted (1000 B); 2.0 KiB left")
	require.NoFileExists(t, old)
	require.FileExists(t, recent)
	out, stderr, code = runInProcess(t, "cache", "prune", "--sandbox-cache-dir", dir, "--all")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "1 file deleted")
	require.NoFileExists(t, recent)
	require.FileExists(t, fresh, "written in the last minute: maybe being written")
	for _, args := range [][]string{{"--all", "--max-bytes", "1MiB"}, {"--max-bytes", "lots"}, {"--max-bytes", "0"}} {
		_, stderr, code = runInProcess(t, append([]string{"cache", "prune", "--sandbox-cache-dir", dir}, args...)...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
	}
}

// TestSweepCacheNames: a record of names (cachenames.Dir) goes once
// none of its entries is left, not while one is, nor in the minute after
// it was written; a temporary file of a record write that never ended
// goes after that minute; a record's entries never lead outside the
// cache. Records are not entries: neither counted nor pruned as such.
func TestSweepCacheNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	write := func(name, text string, at time.Time) string {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		require.NoError(t, os.Chtimes(p, at, at))
		return p
	}
	outside := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(outside, []byte("x"), 0o600))
	kept := write("stint-prepared/kept", "entry", old)
	gone := write("stint-names/gone", `{"sha256":"a","entries":["stint-prepared/gone","wazero-x/gone"],"names":["/a.wasm"]}`, old)
	fresh := write("stint-names/fresh", `{"sha256":"b","entries":["stint-prepared/none"]}`, now)
	alive := write("stint-names/alive", `{"sha256":"c","entries":["stint-prepared/kept","wazero-x/gone"]}`, old)
	escape := write("stint-names/escape", `{"sha256":"d","entries":["../`+filepath.Base(filepath.Dir(outside))+`/precious"]}`, old)
	staleTmp := write("stint-names/.alive.tmp0123", "{", old)
	freshTmp := write("stint-names/.alive.tmp4567", "{", now)

	files, total := cacheFilesIn(dir)
	require.Len(t, files, 1, "records are not entries")
	require.Equal(t, int64(len("entry")), total)

	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	require.Equal(t, 3, sweepCacheNames(root, now, zap.NewNop()))
	for _, p := range []string{gone, escape, staleTmp} {
		require.NoFileExists(t, p)
	}
	for _, p := range []string{fresh, alive, freshTmp, kept, outside} {
		require.FileExists(t, p)
	}

	// pruneCache sweeps what it leaves without entries.
	freed, n := pruneCache(dir, 1, zap.NewNop())
	require.Equal(t, 1, n)
	require.Equal(t, int64(len("entry")), freed)
	require.NoFileExists(t, alive)
	require.FileExists(t, fresh, "written in the last minute")
}
