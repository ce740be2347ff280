package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
)

// BenchmarkSandboxRunHello is one task of the Go hello guest (boots the Go
// runtime in wasm, upper-cases its stdin) through sandbox.Runtime.Run.
func BenchmarkSandboxRunHello(b *testing.B) {
	ctx := context.Background()
	wasm, err := os.ReadFile(testwasm.GoGuest(b, "hello"))
	require.NoError(b, err)
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: filepath.Join(testwasm.CompileCacheDir(b), "bench")})
	require.NoError(b, err)
	defer rt.Close(ctx)
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(b, err)
	input := []byte("hello, stint\n")
	b.ReportAllocs()
	for b.Loop() {
		out, err := rt.Run(ctx, mod, sandbox.Spec{Input: input})
		if err != nil || !out.Success() {
			b.Fatal(out, err)
		}
	}
}
