package sandbox

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// The memory image engine's own tests are in internal/memory; these run
// images through the Runtime.

// TestMemImagePassiveSegments: a module with passive segments and a
// DataCount section gets an image, and its memory.init of a passive
// segment still works (internal/memory's test of the same name checks the
// image and the module left).
func TestMemImagePassiveSegments(t *testing.T) {
	t.Parallel()
	wasm := wasmtest.PassiveDataModule()
	rt, err := New(context.Background(), Config{})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(context.Background())) }()
	mod, err := rt.Compile(context.Background(), wasm)
	require.NoError(t, err)
	require.NotNil(t, mod.image)
	require.Equal(t, uint64(9), mod.image.Start)
	out, err := rt.Run(context.Background(), mod, Spec{})
	require.NoError(t, err)
	require.True(t, out.Success(), out.Message)
}

// TestMemImageLeavesAlone: an offset from a global keeps wazero's path,
// with merging (internal/memory's test of the same name has the rest).
func TestMemImageLeavesAlone(t *testing.T) {
	t.Parallel()
	base := moduleWithData(1, []dataSegment{{offset: 10, data: []byte{1, 2, 3}}})
	globalOffset := bytes.Replace(base, []byte{0x41, 0x0a, 0x0b}, []byte{0x23, 0x00, 0x0b}, 1)
	require.NotEqual(t, base, globalOffset)
	_, img, how := splitData(base, 1, true)
	require.Equal(t, dataImaged, how)
	require.NotNil(t, img)
	_, img, how = splitData(globalOffset, 1, true)
	require.NotEqual(t, dataImaged, how)
	require.Nil(t, img)
	_, img, how = splitData(base, 1, false)
	require.NotEqual(t, dataImaged, how, "images off")
	require.Nil(t, img)
}

// imageGuest is a command whose memory (minPages, at most maxPages)
// starts with an image of size bytes at offset 0 (byte i is imageByte(i)).
// Its _start traps unless, at each of probes, memory holds the image, and
// unless memory.grow(grow) succeeds with the first grown byte zero; then
// it writes over every probe and the grown byte. A second task on the same
// runtime succeeds only if it starts from the pristine image again.
func imageGuest(size, minPages, maxPages, grow int, probes []int) []byte {
	var code []byte
	for _, p := range probes {
		want := byte(0)
		if p < size {
			want = imageByte(p)
		}
		// if (i32.load8_u p) != want unreachable
		code = wasmtest.Cat(code, []byte{wasmbin.OpI32Const}, wasmtest.SLEB(int64(p)), []byte{0x2d, 0, 0, wasmbin.OpI32Const}, wasmtest.SLEB(int64(want)),
			[]byte{0x47, wasmbin.OpIf, 0x40, wasmbin.OpUnreachable, wasmbin.OpEnd})
	}
	// memory.grow(grow) == minPages, else unreachable
	code = wasmtest.Cat(code, []byte{wasmbin.OpI32Const}, wasmtest.SLEB(int64(grow)), []byte{0x40, 0, wasmbin.OpI32Const}, wasmtest.SLEB(int64(minPages)),
		[]byte{0x47, wasmbin.OpIf, 0x40, wasmbin.OpUnreachable, wasmbin.OpEnd})
	grown := minPages * PageSize
	code = wasmtest.Cat(code, []byte{wasmbin.OpI32Const}, wasmtest.SLEB(int64(grown)), []byte{0x28, 2, 0, wasmbin.OpIf, 0x40, wasmbin.OpUnreachable, wasmbin.OpEnd})
	for _, p := range append(probes, grown) {
		code = wasmtest.Cat(code, []byte{wasmbin.OpI32Const}, wasmtest.SLEB(int64(p)), []byte{wasmbin.OpI32Const}, wasmtest.SLEB(-1), []byte{0x36, 0, 0}) // i32.store8... as i32
	}
	code = append(code, wasmbin.OpEnd)
	image := make([]byte, size)
	for i := range image {
		image[i] = imageByte(i)
	}
	return wasmtest.Module(
		wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))),
		wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))),
		wasmtest.Sec(wasmbin.SecMemory, wasmtest.Vec(wasmtest.Cat([]byte{1}, wasmtest.LEB(uint64(minPages)), wasmtest.LEB(uint64(maxPages))))),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0, 0}), wasmtest.Cat(wasmtest.Str("memory"), []byte{2, 0}))),
		wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(code...))),
		wasmtest.Sec(wasmbin.SecData, wasmtest.Vec(wasmtest.Cat([]byte{0, wasmbin.OpI32Const, 0, wasmbin.OpEnd}, wasmtest.LEB(uint64(size)), image))),
	)
}

func imageByte(i int) byte { return byte(1 + i*7%251) }

// imageMaps counts this process's mappings of the image file name.
func imageMaps(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	return strings.Count(string(b), "memfd:"+name+" ")
}

// TestMemImageReset: a guest that writes its memory and grows it, then a
// fresh task in the same pooled memory, sees the pristine image (and zeros
// past it); tasks running at the same time never share memory; nothing
// stays mapped once the runtime is closed.
func TestMemImageReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const size, minPages = 300 << 10, 8
	probes := []int{0, 1, 4095, 4096, 70000, size - 1, size + 10, minPages*PageSize - 4}
	wasm := imageGuest(size, minPages, 64, 3, probes)
	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(t, err)
	require.NotNil(t, mod.image)
	mapsPlatform := mod.image.FileName() != ""
	for i := range 5 {
		out, err := rt.Run(ctx, mod, Spec{})
		require.NoError(t, err)
		require.True(t, out.Success(), "task %d: %s %s", i, out.Kind, out.Message)
		require.Equal(t, int64(minPages+3)*PageSize, out.PeakMemoryBytes)
	}
	if mapsPlatform {
		require.Equal(t, int64(1), mod.image.Mappings(), "one pooled memory, reused by every task")
		require.Equal(t, 1, imageMaps(t, mod.image.FileName()))
	}
	require.NoError(t, rt.Close(ctx))
	if mapsPlatform {
		require.Zero(t, mod.image.Mappings(), "every memory unmapped")
		require.Zero(t, imageMaps(t, mod.image.FileName()))
	}
	runtime.KeepAlive(mod)
}

// TestMemImageFailedStart: an instantiation that fails after its memory
// was allocated (a start function traps) gives the memory back.
func TestMemImageFailedStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wasm := wasmtest.Module(
		wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))),
		wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))),
		wasmtest.Sec(wasmbin.SecMemory, wasmtest.Vec([]byte{0, 4})),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0, 0}), wasmtest.Cat(wasmtest.Str("memory"), []byte{2, 0}))),
		wasmtest.Sec(wasmbin.SecStart, wasmtest.LEB(1)),
		wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd), wasmtest.FBody(wasmbin.OpUnreachable, wasmbin.OpEnd))),
		wasmtest.Sec(wasmbin.SecData, wasmtest.Vec(wasmtest.Cat([]byte{0, wasmbin.OpI32Const, 0, wasmbin.OpEnd}, wasmtest.LEB(200<<10), bytes.Repeat([]byte{3}, 200<<10)))),
	)
	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(t, err)
	for range 3 {
		out, err := rt.Run(ctx, mod, Spec{})
		require.NoError(t, err)
		require.False(t, out.Success())
	}
	if name := mod.image.FileName(); name != "" {
		require.Equal(t, int64(1), mod.image.Mappings(), "the memory went back to the pool each time")
		require.NoError(t, rt.Close(ctx))
		require.Zero(t, mod.image.Mappings())
		require.Zero(t, imageMaps(t, name))
	} else {
		require.NoError(t, rt.Close(ctx))
	}
	runtime.KeepAlive(mod)
}
