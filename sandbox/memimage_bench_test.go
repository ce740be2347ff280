package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

// benchModules compiles wasm twice, with memory images and without (data
// merging alone, the path before images), each in a runtime of its own.
func benchModules(b *testing.B, wasm []byte) (with, without func(*testing.B)) {
	ctx := context.Background()
	mk := func(images bool) func(*testing.B) {
		memImages.Store(images)
		defer memImages.Store(true)
		rt, err := New(ctx, Config{CacheDir: filepath.Join(testwasm.CompileCacheDir(b), "memimage-bench")})
		require.NoError(b, err)
		b.Cleanup(func() { _ = rt.Close(ctx) })
		mod, err := rt.Compile(ctx, wasm)
		require.NoError(b, err)
		require.Equal(b, images, mod.image != nil)
		input := []byte("hello, stint\n")
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := rt.Run(ctx, mod, Spec{Input: input})
				if err != nil || !out.Success() {
					b.Fatal(out, err)
				}
			}
		}
	}
	return mk(true), mk(false)
}

// BenchmarkMemImage compares a task with and without memory images, for the
// Go hello guest and a guest with 8 MiB of initialized data (it reads one
// byte in 64 KiB pages of it, writes a few and grows its memory). Run it
// with -count N: the variants alternate, so they are interleaved.
func BenchmarkMemImage(b *testing.B) {
	hello, err := os.ReadFile(testwasm.GoGuest(b, "hello"))
	require.NoError(b, err)
	const size = 8 << 20
	var probes []int
	for p := 0; p < size; p += 1 << 16 {
		probes = append(probes, p+7)
	}
	data8m := imageGuest(size, size/PageSize+1, size/PageSize+64, 2, probes)
	for _, g := range []struct {
		name string
		wasm []byte
	}{{"hello", hello}, {"data8m", data8m}} {
		with, without := benchModules(b, g.wasm)
		b.Run(g.name+"/images", with)
		b.Run(g.name+"/merged", without)
	}
}

// BenchmarkColdStartFromCache is a Go guest's first task in a fresh
// runtime whose compilation cache already holds the module: New, Compile
// (validation and rewrite, the image, wazero loading the machine code),
// Run, Close. The same is a module's first use after eviction, plus New.
func BenchmarkColdStartFromCache(b *testing.B) {
	ctx := context.Background()
	hello, err := os.ReadFile(testwasm.GoGuest(b, "hello"))
	require.NoError(b, err)
	cfg := Config{CacheDir: filepath.Join(testwasm.CompileCacheDir(b), "memimage-bench")}
	first := func() {
		rt, err := New(ctx, cfg)
		require.NoError(b, err)
		mod, err := rt.Compile(ctx, hello)
		require.NoError(b, err)
		out, err := rt.Run(ctx, mod, Spec{Input: []byte("hi\n")})
		require.NoError(b, err)
		require.True(b, out.Success())
		require.NoError(b, rt.Close(ctx))
	}
	first() // fills the cache
	for b.Loop() {
		first()
	}
}
