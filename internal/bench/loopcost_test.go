package bench

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// TestLoopCostWorkloads runs LoopCost's top-tested loops
// (bench_toploops.wat) and C kernels through bare wazero and
// sandbox.Runtime in both interrupt modes: each succeeds, the loops
// compute the right sums (the module traps otherwise) and every kernel
// prints the same checksum, rewritten or not. Without clang-14 or
// wasi-libc the kernels are left out.
func TestLoopCostWorkloads(t *testing.T) {
	ctx := context.Background()
	type work struct {
		name  string
		wasm  []byte
		stdin []byte
	}
	var works []work
	for i, sh := range topLoopShapes {
		works = append(works, work{sh.key, wat.MustLoad("bench_toploops"), []byte{byte('0' + i)}})
	}
	for _, k := range ckernels.Kernels {
		w, err := ckernels.Build(testwasm.CacheDir(t), k.Name)
		if errors.Is(err, ckernels.ErrUnavailable) {
			t.Logf("C kernels left out: %v", err)
			break
		}
		require.NoError(t, err)
		works = append(works, work{k.Name, w, nil})
	}
	bare, err := NewBare(ctx, false, "")
	require.NoError(t, err)
	defer func() { require.NoError(t, bare.Close(ctx)) }()
	require.NoError(t, stubStintModule(ctx, bare.rt))
	want := map[string][]byte{}
	for _, w := range works {
		cm, err := bare.Compile(ctx, w.wasm)
		require.NoError(t, err)
		want[w.name], err = bare.Run(ctx, cm, w.stdin)
		require.NoError(t, err, w.name)
	}
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(ctx, sandbox.Config{Interrupt: mode, CacheDir: testwasm.CompileCacheDir(t)})
		require.NoError(t, err)
		for _, w := range works {
			m, err := rt.Compile(ctx, w.wasm)
			require.NoError(t, err)
			out, err := rt.Run(ctx, m, sandbox.Spec{Stdin: bytes.NewReader(w.stdin)})
			require.NoError(t, err)
			require.Equal(t, sandbox.KindSucceeded, out.Kind, "%s in %s mode: %s", w.name, mode, out)
			require.Equal(t, string(want[w.name]), string(out.Stdout), "%s in %s mode", w.name, mode)
		}
		require.NoError(t, rt.Close(ctx))
	}
}
