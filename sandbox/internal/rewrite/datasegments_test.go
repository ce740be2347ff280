package rewrite

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// moduleWithData is wasmtest.ModuleWithData of segs: a module with one
// memory of minPages, exported as "memory", and an active data segment
// for each of segs, in order.
func moduleWithData(minPages uint32, segs []dataSegment) []byte {
	ws := make([]wasmtest.Segment, len(segs))
	for i, s := range segs {
		ws[i] = wasmtest.Segment{Offset: s.offset, Data: s.data}
	}
	return wasmtest.ModuleWithData(minPages, ws...)
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

// TestMergeDataSegmentsRandom: random segments (overlapping, out of
// order, with zeros, some overwritten by zeros) give byte for byte the same
// initial memory once merged, in far fewer segments.
func TestMergeDataSegmentsRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		const pages = 2
		var segs []dataSegment
		for range mergeMinSegments + rng.IntN(400) {
			size := rng.IntN(40)
			off := rng.IntN(pages*wasmbin.PageSize - size + 1)
			data := make([]byte, size)
			for i := range data {
				if rng.IntN(3) > 0 { // a third zeros
					data[i] = byte(1 + rng.IntN(255))
				}
			}
			if rng.IntN(10) == 0 {
				clear(data) // a segment of zeros over earlier data
			}
			segs = append(segs, dataSegment{offset: uint32(off), data: data})
		}
		orig := moduleWithData(pages, segs)
		merged, ok := MergeDataSegments(orig, pages)
		require.True(t, ok, "round %d", round)
		got, ok := parseActiveData(dataPayload(t, merged))
		require.True(t, ok)
		require.Less(t, len(got), len(segs))
		require.Equal(t, initialMemory(t, orig, "memory"), initialMemory(t, merged, "memory"), "round %d", round)
	}
}

// dataPayload returns the data section's payload of wasm.
func dataPayload(t *testing.T, wasm []byte) []byte {
	t.Helper()
	secs, ok := wasmbin.Sections(wasm)
	require.True(t, ok)
	for _, s := range secs {
		if s.ID == 11 {
			return wasm[s.Start:s.End]
		}
	}
	t.Fatal("no data section")
	return nil
}

// TestMergeDataSegmentsLeavesAlone: what merging could change is compiled
// as it is.
func TestMergeDataSegmentsLeavesAlone(t *testing.T) {
	t.Parallel()
	many := make([]dataSegment, mergeMinSegments)
	for i := range many {
		many[i] = dataSegment{offset: uint32(i * 10), data: []byte{1, 2, 3}}
	}
	base := moduleWithData(1, many)
	_, ok := MergeDataSegments(base, 1)
	require.True(t, ok, "the base case merges")

	few := moduleWithData(1, many[:mergeMinSegments-1])
	_, ok = MergeDataSegments(few, 1)
	require.False(t, ok, "too few segments to bother")

	_, ok = MergeDataSegments(base, 0)
	require.False(t, ok, "a segment past the declared memory: instantiation must fail as it would")

	withDataCount := append(bytes.Clone(base[:8]), append([]byte{12, 1, byte(len(many))}, base[8:]...)...)
	_, ok = MergeDataSegments(withDataCount, 1)
	require.False(t, ok, "a DataCount section: memory.init may name segments")

	passive := bytes.Replace(base, []byte{0, 0x41, 0x0a, 0x0b}, []byte{1}, 1) // segment 1 (offset 10) made passive
	require.NotEqual(t, base, passive)
	_, ok = MergeDataSegments(passive, 1)
	require.False(t, ok, "a passive segment")

	globalOffset := bytes.Replace(base, []byte{0x41, 0x0a, 0x0b}, []byte{0x23, 0x00, 0x0b}, 1)
	require.NotEqual(t, base, globalOffset)
	_, ok = MergeDataSegments(globalOffset, 1)
	require.False(t, ok, "an offset from a global")

	emptyOutside := moduleWithData(1, append(slices.Clone(many), dataSegment{offset: wasmbin.PageSize + 1}))
	_, ok = MergeDataSegments(emptyOutside, 1)
	require.False(t, ok, "an empty segment past the memory still fails instantiation")

	sparse := moduleWithData(2000, append(slices.Clone(many), dataSegment{offset: 100 << 20, data: []byte{1}}))
	_, ok = MergeDataSegments(sparse, 2000)
	require.False(t, ok, "a 100 MiB image for 200 bytes of data is not built")

	for _, bad := range [][]byte{nil, []byte("not wasm"), base[:len(base)-3]} {
		_, ok = MergeDataSegments(bad, 1)
		require.False(t, ok)
	}
}

// TestMergeDataSegmentsGoGuest: the Go hello guest (tens of thousands of
// segments) starts with the same memory once merged.
func TestMergeDataSegmentsGoGuest(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(testwasm.GoGuest(t, "hello"))
	require.NoError(t, err)
	minPages, err := wasmbin.DeclaredMemoryMin(wasm)
	require.NoError(t, err)
	merged, ok := MergeDataSegments(wasm, minPages)
	require.True(t, ok)
	before, _ := parseActiveData(dataPayload(t, wasm))
	after, _ := parseActiveData(dataPayload(t, merged))
	t.Logf("hello: %d data segments merged into %d; %d bytes of wasm became %d", len(before), len(after), len(wasm), len(merged))
	require.Less(t, len(after)*100, len(before))
	require.Equal(t, initialMemory(t, wasm, "memory"), initialMemory(t, merged, "memory"))
}
