package memory

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// testBounds are package sandbox's merge limits (datasegments.go).
var testBounds = ImageBounds{Max: 64 << 20, Sparsity: 16, Slack: 1 << 20}

// segment is an active data segment for memory 0.
type segment struct {
	offset uint32
	data   []byte
}

// moduleWithData is wasmtest.ModuleWithData of segs: a module with one
// memory of minPages, exported as "memory", and an active data segment
// for each of segs, in order.
func moduleWithData(minPages uint32, segs []segment) []byte {
	ws := make([]wasmtest.Segment, len(segs))
	for i, s := range segs {
		ws[i] = wasmtest.Segment{Offset: s.offset, Data: s.data}
	}
	return wasmtest.ModuleWithData(minPages, ws...)
}

// newRuntime is an interpreter runtime (it applies data segments like the
// compiler does, with no machine code to generate) with WASI, what the Go
// guests import. The caller closes it.
func newRuntime(t *testing.T, ctx context.Context) wazero.Runtime {
	t.Helper()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	_, err := wasi_snapshot_preview1.Instantiate(ctx, r)
	require.NoError(t, err)
	return r
}

// initialMemory instantiates wasm (no start function) with wazero's own
// memory and returns a copy of its memory exported as "memory".
func initialMemory(t *testing.T, wasm []byte) []byte {
	t.Helper()
	return instanceMemory(t, context.Background(), wasm)
}

// instanceMemory instantiates wasm under ctx (no start function) and
// returns a copy of its memory exported as "memory".
func instanceMemory(t *testing.T, ctx context.Context, wasm []byte) []byte {
	t.Helper()
	r := newRuntime(t, ctx)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	cm, err := r.CompileModule(ctx, wasm)
	require.NoError(t, err)
	inst, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
	require.NoError(t, err)
	mem := inst.ExportedMemory("memory")
	require.NotNil(t, mem)
	b, ok := mem.Read(0, mem.Size())
	require.True(t, ok)
	out := bytes.Clone(b)
	require.NoError(t, inst.Close(ctx))
	return out
}

// declaredMin is the memory minimum wasm declares, in pages.
func declaredMin(t *testing.T, wasm []byte) uint32 {
	t.Helper()
	ctx := context.Background()
	r := newRuntime(t, ctx)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	cm, err := r.CompileModule(ctx, wasm)
	require.NoError(t, err)
	mem := cm.ExportedMemories()["memory"]
	require.NotNil(t, mem)
	return mem.Min()
}
