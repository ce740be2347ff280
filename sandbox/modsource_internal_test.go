package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/memory"
)

// TestCompileFile: a module compiled from its file is the module Compile
// gives (same sha256 and size, same registry entry), runs, and hits the
// prepared-module cache on a new runtime; a missing file is an
// *fs.PathError and is not remembered.
func TestCompileFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wasm := cachedImageGuest()
	path := filepath.Join(t.TempDir(), "m.wasm")
	require.NoError(t, os.WriteFile(path, wasm, 0o600))
	dir := t.TempDir()
	for round := range 2 {
		rt, err := New(ctx, Config{CacheDir: dir})
		require.NoError(t, err)
		mod, err := rt.CompileFile(ctx, path)
		require.NoError(t, err)
		require.Equal(t, SHA256(wasm), mod.SHA256)
		require.Equal(t, len(wasm), mod.Size)
		same, err := rt.Compile(ctx, wasm)
		require.NoError(t, err)
		require.Same(t, mod, same, "one registry entry for both")
		out, err := rt.Run(ctx, mod, Spec{})
		require.NoError(t, err)
		require.True(t, out.Success(), out.String())
		require.EqualValues(t, round, rt.Stats().PreparedCacheHits)
		require.NoError(t, rt.Close(ctx))
	}

	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	defer func() { _ = rt.Close(ctx) }()
	_, err = rt.CompileFile(ctx, filepath.Join(t.TempDir(), "missing.wasm"))
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Zero(t, rt.moduleCount())
}

// TestCompileFileChangedUnderIt: when the file no longer holds the bytes
// it was hashed from when they are read (it changed between the two
// reads), the compilation fails with errSourceChanged, not as the module's
// fault, and the registry forgets it: the next call compiles afresh.
func TestCompileFileChangedUnderIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := cachedImageGuest(), imageGuest(4096, 1, 2, 1, []int{0})
	path := filepath.Join(t.TempDir(), "m.wasm")
	require.NoError(t, os.WriteFile(path, b, 0o600)) // the file now holds b
	for _, cfg := range []Config{{}, {CacheDir: t.TempDir()}} {
		rt, err := New(ctx, cfg)
		require.NoError(t, err)
		// As if the file held a when it was hashed.
		_, err = rt.compileSource(ctx, moduleSource{sha: SHA256(a), size: int64(len(a)), path: path})
		require.ErrorIs(t, err, errSourceChanged)
		var me *ModuleError
		require.False(t, errors.As(err, &me))
		require.Zero(t, rt.moduleCount(), "not remembered")
		require.NoError(t, os.WriteFile(path, a, 0o600))
		mod, err := rt.compileSource(ctx, moduleSource{sha: SHA256(a), size: int64(len(a)), path: path})
		require.NoError(t, err)
		require.Equal(t, SHA256(a), mod.SHA256)
		require.NoError(t, os.WriteFile(path, b, 0o600))
		require.NoError(t, rt.Close(ctx))
	}
}

// TestPreparedCacheLargeEntry: an entry past a megabyte (read into a
// transient buffer, huge pages on Linux) loads, and its image runs, on
// a new runtime, twice.
func TestPreparedCacheLargeEntry(t *testing.T) {
	t.Parallel()
	const size = 3 << 20
	wasm := imageGuest(size, size/PageSize+1, size/PageSize+8, 1, []int{0, 1, size / 2, size - 1})
	dir := t.TempDir()
	st := runTwice(t, Config{CacheDir: dir}, wasm)
	require.Zero(t, st.PreparedCacheHits)
	st = runTwice(t, Config{CacheDir: dir}, wasm)
	require.EqualValues(t, 1, st.PreparedCacheHits)
}

// TestCompileInputDone: an image left in a load's transient buffer (not
// moved into a memfd) gets a copy of its own before the buffer is freed;
// done is idempotent.
func TestCompileInputDone(t *testing.T) {
	t.Parallel()
	buf, free := memory.TransientBuffer(2 << 20)
	for i := range buf {
		buf[i] = byte(i)
	}
	want := bytes.Clone(buf[100:200])
	freed := 0
	in := compileInput{image: &memory.Image{Data: buf[100:200], Size: 100}, release: func() { freed++; free() }}
	in.done()
	in.done()
	require.Equal(t, 1, freed)
	require.Equal(t, want, in.image.Data)
}

// TestCompileFileOverSizeLimit: a regular file over max_module_size is
// refused by its size, and a file whose size says nothing (a device that
// never ends) once that much has been read: KindInvalidModule naming the
// limit, and nothing remembered. On the code before, /dev/zero was read
// until memory ran out.
func TestCompileFileOverSizeLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, err := New(ctx, Config{ModuleLimits: ModuleLimits{MaxModuleSize: 1 << 20}})
	require.NoError(t, err)
	defer func() { _ = rt.Close(ctx) }()
	big := filepath.Join(t.TempDir(), "big.wasm")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(2<<20)) // sparse
	require.NoError(t, f.Close())
	for path, want := range map[string]string{
		big:         "module of 2097152 bytes, over the limit of 1048576 (sandbox module limit max_module_size)",
		"/dev/zero": "module of 1048577 bytes or more, over the limit of 1048576 (sandbox module limit max_module_size)",
	} {
		_, err := rt.CompileFile(ctx, path)
		var me *ModuleError
		require.ErrorAs(t, err, &me, path)
		require.Equal(t, KindInvalidModule, me.Kind)
		require.Equal(t, want, me.Message)
	}
	require.Zero(t, rt.moduleCount())
}
