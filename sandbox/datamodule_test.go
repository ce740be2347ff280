package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Helpers for the memory-image tests (memimage_test.go): modules made of
// data segments, and the memory they start with.

// moduleWithData builds a module with one memory of minPages, exported as
// "memory", and an active data segment for each of segs, in order.
func moduleWithData(minPages uint32, segs []dataSegment) []byte {
	sec := func(id byte, payload []byte) []byte {
		return append(binary.AppendUvarint([]byte{id}, uint64(len(payload))), payload...)
	}
	m := append([]byte{}, wasmbin.Magic...)
	m = append(m, 1, 0, 0, 0)
	m = append(m, sec(5, binary.AppendUvarint([]byte{1, 0}, uint64(minPages)))...)
	m = append(m, sec(7, append([]byte{1, 6}, append([]byte("memory"), 2, 0)...))...)
	data := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		data = append(append(append(data, 0x00, 0x41), sleb(int64(int32(s.offset)))...), 0x0b)
		data = append(binary.AppendUvarint(data, uint64(len(s.data))), s.data...)
	}
	return append(m, sec(11, data)...)
}

// initialMemory instantiates wasm (no start function) and returns a copy
// of its exported memory named name.
func initialMemory(t *testing.T, wasm []byte, name string) []byte {
	t.Helper()
	ctx := context.Background()
	// The interpreter: it applies data segments like the compiler does, and
	// makes a Go guest instantiable in a fraction of the time (no machine
	// code to generate, which matters under -race).
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer func() { require.NoError(t, r.Close(ctx)) }()
	require.NoError(t, hostImports(ctx, r)) // what the Go guests import
	cm, err := r.CompileModule(ctx, wasm)
	require.NoError(t, err)
	inst, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
	require.NoError(t, err)
	mem := inst.ExportedMemory(name)
	require.NotNil(t, mem)
	b, ok := mem.Read(0, mem.Size())
	require.True(t, ok)
	return bytes.Clone(b)
}
