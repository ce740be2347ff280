package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/cachenames"
)

// cacheFilesOf lists the regular files of the cache at dir outside
// cachenames.Dir, slash-separated and relative to dir.
func cacheFilesOf(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.Type().IsRegular() && !strings.HasPrefix(rel, cachenames.Dir+"/") {
			files = append(files, rel)
		}
		return nil
	}))
	slices.Sort(files)
	return files
}

// recordOf is the one record of the cache at dir for the module sha.
func recordOf(t *testing.T, dir, sha string) cachenames.Record {
	t.Helper()
	var found []cachenames.Record
	for _, r := range cachenames.Read(os.DirFS(dir)) {
		if r.SHA256 == sha {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "records of %s", sha)
	return found[0]
}

// TestCacheNames: a compilation with Config.CacheDir records which cache
// files hold the module, wazero's machine code included (its key computed
// as wazero computes it: if wazero changes it, this test fails, and the
// cache's listing would show its files without a name), in both interrupt
// modes; NameInCache puts the latest name first, once each, and writes
// nothing for the name already first; a record deleted is written again.
func TestCacheNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []InterruptMode{InterruptChecks, InterruptWazero} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			a, b := cachedImageGuest(), imageGuest(4096, 1, 2, 0, []int{0})
			rt, err := New(ctx, Config{CacheDir: dir, Interrupt: mode})
			require.NoError(t, err)
			defer func() { require.NoError(t, rt.Close(ctx)) }()
			modA, err := rt.Compile(ctx, a)
			require.NoError(t, err)
			modB, err := rt.Compile(ctx, b)
			require.NoError(t, err)

			files := cacheFilesOf(t, dir)
			require.Len(t, files, 4, "a prepared entry and wazero's file for each: %v", files)
			recA, recB := recordOf(t, dir, modA.SHA256), recordOf(t, dir, modB.SHA256)
			require.Len(t, recA.Entries, 2, "the prepared entry and wazero's: %v", recA.Entries)
			require.True(t, strings.HasPrefix(recA.Entries[0], preparedDir+"/"), recA.Entries[0])
			require.True(t, strings.HasPrefix(recA.Entries[1], "wazero-"), "wazero's file found: %v", recA.Entries)
			got := slices.Sorted(slices.Values(append(slices.Clone(recA.Entries), recB.Entries...)))
			require.Equal(t, files, got, "every cache file belongs to one module")
			require.Empty(t, recA.Names)
			fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(recA.File)))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

			require.NoError(t, rt.NameInCache(modA, "/tools/a.wasm"))
			require.NoError(t, rt.NameInCache(modA, "other"))
			require.NoError(t, rt.NameInCache(modA, "/tools/a.wasm"))
			require.Equal(t, []string{"/tools/a.wasm", "other"}, recordOf(t, dir, modA.SHA256).Names)
			require.Empty(t, recordOf(t, dir, modB.SHA256).Names, "one module's name is not another's")

			// The name already first: nothing written (a warm start).
			path := filepath.Join(dir, filepath.FromSlash(recA.File))
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			require.NoError(t, os.Chtimes(path, old, old))
			require.NoError(t, rt.NameInCache(modA, "/tools/a.wasm"))
			fi, err = os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, old, fi.ModTime(), "rewritten for the same name")

			// Another runtime (another process) finds the record as it is.
			rt2, err := New(ctx, Config{CacheDir: dir, Interrupt: mode})
			require.NoError(t, err)
			defer func() { require.NoError(t, rt2.Close(ctx)) }()
			_, err = rt2.Compile(ctx, a)
			require.NoError(t, err)
			require.Equal(t, recA.Entries, recordOf(t, dir, modA.SHA256).Entries)
			require.Equal(t, cacheFilesOf(t, dir), files, "nothing compiled again")

			// A record deleted (runner cache prune) is written again.
			require.NoError(t, os.Remove(path))
			require.NoError(t, rt.NameInCache(modA, "again"))
			rec := recordOf(t, dir, modA.SHA256)
			require.Equal(t, []string{"again"}, rec.Names)
			require.Equal(t, recA.Entries[:1], rec.Entries, "its prepared entry, at least")
		})
	}
}

// TestCacheNamesBounds: a few names are kept, the latest first, each cut
// at 1 KiB; no cache directory or no name records nothing; concurrent
// namers in two runtimes never leave a torn record.
func TestCacheNamesBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	wasm := imageGuest(4096, 1, 2, 0, []int{0})
	rt, err := New(ctx, Config{CacheDir: dir})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(ctx)) }()
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(t, err)
	for i := range 12 {
		require.NoError(t, rt.NameInCache(mod, fmt.Sprint("name-", i)))
	}
	require.NoError(t, rt.NameInCache(mod, ""))
	require.NoError(t, rt.NameInCache(mod, strings.Repeat("é", 600)))
	names := recordOf(t, dir, mod.SHA256).Names
	require.Len(t, names, cachenames.MaxNames)
	require.Len(t, names[0], 1024, "cut at 1 KiB, whole characters")
	require.Equal(t, "name-11", names[1])
	require.Equal(t, "name-5", names[7])

	rt2, err := New(ctx, Config{CacheDir: dir})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt2.Close(ctx)) }()
	mod2, err := rt2.Compile(ctx, wasm)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, m := rt, mod
			if i%2 == 1 {
				r, m = rt2, mod2
			}
			for j := range 20 {
				require.NoError(t, r.NameInCache(m, fmt.Sprintf("w%d-%d", i, j)))
			}
		}()
	}
	wg.Wait()
	rec := recordOf(t, dir, mod.SHA256)
	require.NotEmpty(t, rec.Names)
	require.Regexp(t, `^w\d-19$`, rec.Names[0], "a writer's last name")
	require.Len(t, rec.Entries, 2)

	noCache, err := New(ctx, Config{})
	require.NoError(t, err)
	defer func() { require.NoError(t, noCache.Close(ctx)) }()
	m, err := noCache.Compile(ctx, wasm)
	require.NoError(t, err)
	require.NoError(t, noCache.NameInCache(m, "x"))
	require.NoError(t, noCache.NameInCache(nil, "x"))
}
