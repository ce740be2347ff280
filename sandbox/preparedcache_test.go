package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// preparedEntries lists the prepared-module cache's files in cacheDir.
func preparedEntries(t *testing.T, cacheDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cacheDir, preparedDir, "*"))
	require.NoError(t, err)
	return files
}

// cachedImageGuest is a guest with a memory image (256 KiB: mapped on
// Linux) that checks it and dirties it, so that a second task on the same
// runtime checks the reset too.
func cachedImageGuest() []byte {
	const size = 256 << 10
	return imageGuest(size, size/PageSize+1, size/PageSize+8, 1, []int{0, 1, size / 2, size - 1})
}

// runTwice compiles wasm on a new runtime with cfg and runs it twice; it
// returns the runtime's stats, the runtime closed.
func runTwice(t *testing.T, cfg Config, wasm []byte) Stats {
	t.Helper()
	ctx := context.Background()
	rt, err := New(ctx, cfg)
	require.NoError(t, err)
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(t, err)
	for range 2 {
		out, err := rt.Run(ctx, mod, Spec{})
		require.NoError(t, err)
		require.True(t, out.Success(), out.String())
	}
	st := rt.Stats()
	require.NoError(t, rt.Close(ctx))
	return st
}

// TestPreparedCacheHit: the first runtime prepares the module and stores
// it (one 0600 file); the next loads it instead of preparing (a hit),
// gets byte for byte what preparing gives, and its tasks run the same.
func TestPreparedCacheHit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := cachedImageGuest()
	cfg := Config{CacheDir: dir}

	st := runTwice(t, cfg, wasm)
	require.Zero(t, st.PreparedCacheHits, "an empty cache")
	files := preparedEntries(t, dir)
	require.Len(t, files, 1)
	fi, err := os.Stat(files[0])
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Join(dir, preparedDir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	st = runTwice(t, cfg, wasm)
	require.EqualValues(t, 1, st.PreparedCacheHits)
	require.Zero(t, st.PreparedCacheDamaged)
	require.Len(t, preparedEntries(t, dir), 1)

	// What the cache gives is what preparing gives.
	cfg = cfg.WithDefaults()
	want, how, err := prepareInput(wasm, &cfg.ModuleLimits, cfg.Interrupt.loopChecks(), true, false)
	require.NoError(t, err)
	require.Equal(t, dataImaged, how)
	p, err := openPreparedCache(dir)
	require.NoError(t, err)
	got, err := p.load(preparedKey(SHA256(wasm), &cfg.ModuleLimits, cfg.Interrupt.loopChecks(), true, false))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want.wasm, got.wasm))
	require.Equal(t, want.minPages, got.minPages)
	require.Equal(t, *want.image, *got.image)
}

// TestPreparedCacheKey: whatever changes preparation's output or verdict
// changes the key: other limits, another interrupt mode, images on or
// off, another module. A module cached under generous limits is refused
// under strict ones, and a stored entry is never found under another key.
func TestPreparedCacheKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := cachedImageGuest()
	runTwice(t, Config{CacheDir: dir}, wasm)
	require.Len(t, preparedEntries(t, dir), 1)

	st := runTwice(t, Config{CacheDir: dir, ModuleLimits: ModuleLimits{MaxFunctions: 12345}}, wasm)
	require.Zero(t, st.PreparedCacheHits, "other limits, another key")
	require.Len(t, preparedEntries(t, dir), 2)

	mode := InterruptChecks
	if (Config{}).WithDefaults().Interrupt == InterruptChecks {
		mode = InterruptWazero
	}
	st = runTwice(t, Config{CacheDir: dir, Interrupt: mode}, wasm)
	require.Zero(t, st.PreparedCacheHits, "another interrupt mode, another key")
	require.Len(t, preparedEntries(t, dir), 3)

	rt, err := New(context.Background(), Config{CacheDir: dir, ModuleLimits: ModuleLimits{MaxExports: 1}})
	require.NoError(t, err)
	_, err = rt.Compile(context.Background(), wasm)
	require.ErrorContains(t, err, "max_exports", "cached under other limits, refused under these")
	require.Zero(t, rt.Stats().PreparedCacheHits)
	require.NoError(t, rt.Close(context.Background()))
	require.Len(t, preparedEntries(t, dir), 3, "a refused module is not stored")

	// Every field of ModuleLimits is in the key, and so are the mode, the
	// images switch and the module.
	def := (Config{}).WithDefaults().ModuleLimits
	base := preparedKey("m", &def, true, true, false)
	require.Equal(t, base, preparedKey("m", &def, true, true, false), "the key is deterministic")
	require.NotEqual(t, base, preparedKey("n", &def, true, true, false))
	require.NotEqual(t, base, preparedKey("m", &def, false, true, false))
	require.NotEqual(t, base, preparedKey("m", &def, true, false, false))
	v := reflect.ValueOf(&def).Elem()
	for i := range v.NumField() {
		lim := def
		f := reflect.ValueOf(&lim).Elem().Field(i)
		require.True(t, f.CanInt() || f.CanUint(), "ModuleLimits.%s: a numeric field", v.Type().Field(i).Name)
		if f.CanInt() {
			f.SetInt(f.Int() + 1)
		} else {
			f.SetUint(f.Uint() + 1)
		}
		require.NotEqual(t, base, preparedKey("m", &lim, true, true, false), "ModuleLimits.%s is not in the key", v.Type().Field(i).Name)
	}
}

// TestPreparedCacheDamaged: an entry that is truncated, has a byte
// flipped, or is another key's entry under this key's name is detected;
// the module is prepared again (the task runs), a warning says so, and
// the entry is rewritten, so the next runtime hits.
func TestPreparedCacheDamaged(t *testing.T) {
	t.Parallel()
	other := imageGuest(4096, 1, 2, 1, []int{0})
	for name, damage := range map[string]func(t *testing.T, path, dir string){
		"truncated": func(t *testing.T, path, _ string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b[:len(b)/2], 0o600))
		},
		"byte flipped": func(t *testing.T, path, _ string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b[len(b)-100] ^= 0x40 // inside the image
			require.NoError(t, os.WriteFile(path, b, 0o600))
		},
		"another key's entry": func(t *testing.T, path, dir string) {
			runTwice(t, Config{CacheDir: dir}, other)
			var otherPath string
			for _, f := range preparedEntries(t, dir) {
				if f != path {
					otherPath = f
				}
			}
			require.NotEmpty(t, otherPath)
			require.NoError(t, os.Rename(otherPath, path))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			wasm := cachedImageGuest()
			runTwice(t, Config{CacheDir: dir}, wasm)
			files := preparedEntries(t, dir)
			require.Len(t, files, 1)
			damage(t, files[0], dir)

			core, logs := observer.New(zapcore.WarnLevel)
			st := runTwice(t, Config{CacheDir: dir, Logger: zap.New(core)}, wasm)
			require.Zero(t, st.PreparedCacheHits)
			require.EqualValues(t, 1, st.PreparedCacheDamaged)
			require.Equal(t, 1, logs.FilterMessageSnippet("prepared-module cache entry is damaged").Len())

			st = runTwice(t, Config{CacheDir: dir}, wasm)
			require.EqualValues(t, 1, st.PreparedCacheHits, "the entry was rewritten")
		})
	}
}

// TestDecodePreparedRejectsEveryDamage: every truncation of an entry, and
// every single-bit flip in it, is an error from decodePrepared, never a
// panic or a wrong module.
func TestDecodePreparedRejectsEveryDamage(t *testing.T) {
	t.Parallel()
	lim := (Config{}).WithDefaults().ModuleLimits
	in, _, err := prepareInput(imageGuest(300, 1, 2, 1, []int{0}), &lim, true, true, false)
	require.NoError(t, err)
	require.NotNil(t, in.image)
	key := preparedKey("x", &lim, true, true, false)
	b := encodePrepared(key, in)
	got, err := decodePrepared(b, key)
	require.NoError(t, err)
	require.Equal(t, in.wasm, got.wasm)
	require.Equal(t, in.image.Data, got.image.Data)
	for n := range len(b) {
		_, err := decodePrepared(b[:n], key)
		require.Error(t, err, "truncated to %d of %d bytes", n, len(b))
	}
	for i := range len(b) {
		for bit := range 8 {
			c := bytes.Clone(b)
			c[i] ^= 1 << bit
			_, err := decodePrepared(c, key)
			require.Error(t, err, "bit %d of byte %d flipped", bit, i)
		}
	}
	other := key
	other[0] ^= 1
	_, err = decodePrepared(b, other)
	require.ErrorContains(t, err, "another key")
}

// TestRewriteProbeUpToDate: rewriteprobe.wasm is what wat2wasm makes of
// rewriteprobe.wat, and prepareModule accepts and rewrites it.
func TestRewriteProbeUpToDate(t *testing.T) {
	t.Parallel()
	lim := (Config{}).WithDefaults().ModuleLimits
	for _, loops := range []bool{false, true} {
		in, how, err := prepareInput(rewriteProbe, &lim, loops, true, false)
		require.NoError(t, err)
		require.NotEqual(t, dataKept, how, "the probe's data segments go through splitData")
		require.NotEqual(t, rewriteProbe, in.wasm)
	}
	bin, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not on PATH")
	}
	out := filepath.Join(t.TempDir(), "probe.wasm")
	msg, err := exec.Command(bin, "--debug-names", "rewriteprobe.wat", "-o", out).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, rewriteProbe), "rewriteprobe.wasm is stale: rebuild it (see rewriteprobe.wat)")
}
