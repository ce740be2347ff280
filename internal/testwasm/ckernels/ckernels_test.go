package ckernels_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
)

// want is each kernel's output at its default size.
var want = map[string]string{
	"sha256": "7974191283d321758e3dbd7133d003e368d762a29503941c0911730d8678029c",
	"qsort":  "1883225110",
	"matmul": "2247776181302328640",
	"saxpy":  "30378804",
	"interp": "1229482753",
	"sieve":  "283146",
	"fib":    "2178309",
}

// TestKernels builds every kernel and runs it on bare wazero at its default
// size: it prints the expected checksum and exits 0.
func TestKernels(t *testing.T) {
	ctx := context.Background()
	r := kernelRuntime(t)
	require.Len(t, want, len(ckernels.Kernels))
	for _, k := range ckernels.Kernels {
		wasm, err := ckernels.Build(testwasm.CacheDir(t), k.Name)
		require.NoError(t, err)
		cm, err := r.CompileModule(ctx, wasm)
		require.NoError(t, err)
		for i, stdin := range []string{"", ""} { // a second run: warm
			var out bytes.Buffer
			start := time.Now()
			_, err = r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").
				WithStdin(strings.NewReader(stdin)).WithStdout(&out))
			d := time.Since(start)
			var exit *sys.ExitError
			if errors.As(err, &exit) && exit.ExitCode() == 0 {
				err = nil
			}
			require.NoError(t, err, k.Name)
			require.Equal(t, want[k.Name]+"\n", out.String(), k.Name)
			if i == 1 {
				t.Logf("%-7s %6.1f ms  %s", k.Name, float64(d.Microseconds())/1000, k.Label)
			}
		}
	}
}

func TestBuildUnknown(t *testing.T) {
	if err := ckernels.Available(); err != nil {
		t.Skip(err)
	}
	_, err := ckernels.Build(t.TempDir(), "no_such_kernel")
	require.ErrorContains(t, err, "no_such_kernel")
}

// TestChaseOracle: chase.c's output is ChaseOutput's, at two sizes.
func TestChaseOracle(t *testing.T) {
	ctx := context.Background()
	r := kernelRuntime(t)
	wasm, err := ckernels.Build(testwasm.CacheDir(t), "chase")
	require.NoError(t, err)
	for _, size := range [][2]int{{3, 1}, {2, 5}} {
		var out bytes.Buffer
		cfg := wazero.NewModuleConfig().WithStdout(&out).WithStdin(bytes.NewReader(ckernels.ChaseInput(size[0], size[1])))
		_, err := r.InstantiateWithConfig(ctx, wasm, cfg)
		require.NoError(t, err)
		require.Equal(t, ckernels.ChaseOutput(size[0], size[1]), out.String())
	}
}

// kernelRuntime skips t where the kernels cannot be built
// (ckernels.Available), and otherwise is a bare wazero runtime with WASI,
// closed when the test ends.
func kernelRuntime(t *testing.T) wazero.Runtime {
	t.Helper()
	if err := ckernels.Available(); err != nil {
		require.ErrorIs(t, err, ckernels.ErrUnavailable)
		t.Skip(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig())
	t.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	return r
}
