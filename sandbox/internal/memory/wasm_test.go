package memory

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Helpers to write modules byte by byte (package sandbox's tests have the
// same, and more: wasmbuild_test.go).

// The opcodes and section ids the tests use.
const (
	opUnreachable = 0x00
	opEnd         = 0x0b
	opI32Const    = 0x41
	opMiscPrefix  = 0xfc

	secType      = 1
	secFunction  = 3
	secMemory    = 5
	secExport    = 7
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// testBounds are package sandbox's merge limits (datasegments.go).
var testBounds = ImageBounds{Max: 64 << 20, Sparsity: 16, Slack: 1 << 20}

func leb(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// vec is a vector: its length, then the items.
func vec(items ...[]byte) []byte { return cat(leb(uint64(len(items))), cat(items...)) }

// sec is a section with its header.
func sec(id byte, payload ...[]byte) []byte {
	p := cat(payload...)
	return cat([]byte{id}, leb(uint64(len(p))), p)
}

// str is a name.
func str(s string) []byte { return cat(leb(uint64(len(s))), []byte(s)) }

// module is the header and the sections.
func module(secs ...[]byte) []byte { return cat([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, cat(secs...)) }

// fbody is a function body with no locals (code must end with end).
func fbody(code ...byte) []byte {
	b := cat(leb(0), code)
	return cat(leb(uint64(len(b))), b)
}

// funcType is a function type.
func funcType(params, results []byte) []byte {
	return cat([]byte{0x60}, leb(uint64(len(params))), params, leb(uint64(len(results))), results)
}

// segment is an active data segment for memory 0.
type segment struct {
	offset uint32
	data   []byte
}

// moduleWithData builds a module with one memory of minPages, exported as
// "memory", and an active data segment for each of segs, in order.
func moduleWithData(minPages uint32, segs []segment) []byte {
	var items [][]byte
	for _, s := range segs {
		items = append(items, cat([]byte{0, opI32Const}, sleb(int64(int32(s.offset))), []byte{opEnd}, leb(uint64(len(s.data))), s.data))
	}
	return module(
		sec(secMemory, vec(cat([]byte{0}, leb(uint64(minPages))))),
		sec(secExport, vec(cat(str("memory"), []byte{2, 0}))),
		sec(secData, vec(items...)),
	)
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
