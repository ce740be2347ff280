package sandbox

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/stint-run/stint/internal/testwasm"
)

// imageMemory instantiates the module buildMemImage makes of wasm, with
// its memory from a budget holding the image (mapped when mapped is true
// and the platform maps images, copied otherwise), and returns a copy of
// its memory.
func imageMemory(t *testing.T, wasm []byte, minPages uint32, mapped bool) []byte {
	t.Helper()
	stripped, img, ok := buildMemImage(wasm, minPages)
	require.True(t, ok)
	if mapped {
		b, err := mapImage(img)
		require.NoError(t, err)
		img.backing = b
		defer img.release()
	}
	budget := &memoryBudget{limit: 1 << 32, pool: &bufferPool{}, image: img}
	ctx := experimental.WithMemoryAllocator(context.Background(), budget)
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer func() { require.NoError(t, r.Close(ctx)) }()
	require.NoError(t, hostImports(ctx, r))
	cm, err := r.CompileModule(ctx, stripped)
	require.NoError(t, err)
	inst, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
	require.NoError(t, err)
	mem := inst.ExportedMemory("memory")
	require.NotNil(t, mem)
	b, ok := mem.Read(0, mem.Size())
	require.True(t, ok)
	out := bytes.Clone(b)
	require.NoError(t, inst.Close(ctx))
	budget.release()
	return out
}

// randomSegments returns random active segments (overlapping, out of
// order, with zeros, some overwritten by zeros) within pages.
func randomSegments(rng *rand.Rand, pages int, n, maxSize int) []dataSegment {
	var segs []dataSegment
	for range n {
		size := rng.IntN(maxSize)
		off := rng.IntN(pages*PageSize - size + 1)
		data := make([]byte, size)
		for i := range data {
			if rng.IntN(3) > 0 {
				data[i] = byte(1 + rng.IntN(255))
			}
		}
		if rng.IntN(10) == 0 {
			clear(data)
		}
		segs = append(segs, dataSegment{offset: uint32(off), data: data})
	}
	return segs
}

// TestMemImageRandom: for random segment layouts, an instance's memory
// from the image (mapped and copied) is byte for byte wazero's own.
func TestMemImageRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 12 {
		pages := 1 + rng.IntN(4)
		maxSize := 40
		if round%3 == 0 {
			maxSize = 20000 // large segments: images past mmapMinImage
		}
		segs := randomSegments(rng, pages, 1+rng.IntN(300), maxSize)
		segs = append(segs, dataSegment{offset: uint32(rng.IntN(PageSize)), data: []byte{7}}) // never all zeros
		wasm := moduleWithData(uint32(pages), segs)
		want := initialMemory(t, wasm, "memory")
		for _, mapped := range []bool{false, true} {
			require.Equal(t, want, imageMemory(t, wasm, uint32(pages), mapped), "round %d mapped %v", round, mapped)
		}
	}
}

// TestMemImageGoGuest: the Go hello guest starts with wazero's own memory.
func TestMemImageGoGuest(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(testwasm.GoGuest(t, "hello"))
	require.NoError(t, err)
	minPages, err := declaredMemoryMin(wasm)
	require.NoError(t, err)
	stripped, img, ok := buildMemImage(wasm, minPages)
	require.True(t, ok)
	t.Logf("hello: image of %d bytes at %d; %d bytes of wasm became %d", img.size, img.start, len(wasm), len(stripped))
	want := initialMemory(t, wasm, "memory")
	require.Equal(t, want, imageMemory(t, wasm, minPages, true))
	require.Equal(t, want, imageMemory(t, wasm, minPages, false))
}

// TestMemImagePassiveSegments: passive segments and a DataCount section
// stay for memory.init (each active segment becomes an empty one, so
// indices hold); the memory.init of a passive segment still works and the
// initial memory is wazero's own.
func TestMemImagePassiveSegments(t *testing.T) {
	t.Parallel()
	// _start: memory.init of data segment 1 (passive, "XYZ") at 50, then
	// data.drop 0 (active: already dropped, a no-op).
	code := fbody(opI32Const, 50, opI32Const, 0, opI32Const, 3, opMiscPrefix, 8, 1, 0, opMiscPrefix, 9, 0, opEnd)
	data := vec(
		cat([]byte{0, opI32Const}, sleb(PageSize+5), []byte{opEnd}, leb(4), []byte{1, 2, 3, 4}),
		cat([]byte{1}, leb(3), []byte("XYZ")),
		cat([]byte{0, opI32Const}, sleb(9), []byte{opEnd}, leb(2), []byte{8, 9}),
	)
	wasm := module(
		sec(secType, vec(funcType(nil, nil))),
		sec(secFunction, vec(leb(0))),
		sec(secMemory, vec([]byte{0, 2})),
		sec(secExport, vec(cat(str("_start"), []byte{0, 0}), cat(str("memory"), []byte{2, 0}))),
		sec(secDataCount, leb(3)),
		sec(secCode, vec(code)),
		sec(secData, data),
	)
	stripped, img, ok := buildMemImage(wasm, 2)
	require.True(t, ok)
	require.Equal(t, uint64(9), img.start)
	require.Equal(t, initialMemory(t, wasm, "memory"), imageMemory(t, wasm, 2, true))

	rt, err := New(context.Background(), Config{})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(context.Background())) }()
	mod, err := rt.Compile(context.Background(), wasm)
	require.NoError(t, err)
	require.NotNil(t, mod.image)
	out, err := rt.Run(context.Background(), mod, Spec{})
	require.NoError(t, err)
	require.True(t, out.Success(), out.Message)
	require.NotContains(t, string(stripped), "\x01\x02\x03\x04", "the active segment's bytes left the module")
}

// TestMemImageLeavesAlone: what an image could change keeps wazero's path.
func TestMemImageLeavesAlone(t *testing.T) {
	t.Parallel()
	base := moduleWithData(1, []dataSegment{{offset: 10, data: []byte{1, 2, 3}}})
	_, _, ok := buildMemImage(base, 1)
	require.True(t, ok, "the base case")
	_, _, ok = buildMemImage(base, 0)
	require.False(t, ok, "a segment past the declared memory: instantiation must fail as it would")
	globalOffset := bytes.Replace(base, []byte{0x41, 0x0a, 0x0b}, []byte{0x23, 0x00, 0x0b}, 1)
	require.NotEqual(t, base, globalOffset)
	_, _, ok = buildMemImage(globalOffset, 1)
	require.False(t, ok, "an offset from a global")
	zeros := moduleWithData(1, []dataSegment{{offset: 10, data: []byte{0, 0}}})
	_, _, ok = buildMemImage(zeros, 1)
	require.False(t, ok, "nothing but zeros: nothing to image")
	shared := bytes.Replace(base, []byte{5, 3, 1, 0, 1}, []byte{5, 4, 1, 3, 1, 1}, 1) // limits flag 3: shared with max
	require.NotEqual(t, base, shared)
	_, _, ok = buildMemImage(shared, 1)
	require.False(t, ok, "a shared memory")
	for _, bad := range [][]byte{nil, []byte("not wasm"), base[:len(base)-3]} {
		_, _, ok = buildMemImage(bad, 1)
		require.False(t, ok)
	}
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
		code = cat(code, []byte{opI32Const}, sleb(int64(p)), []byte{0x2d, 0, 0, opI32Const}, sleb(int64(want)),
			[]byte{0x47, opIf, 0x40, opUnreachable, opEnd})
	}
	// memory.grow(grow) == minPages, else unreachable
	code = cat(code, []byte{opI32Const}, sleb(int64(grow)), []byte{0x40, 0, opI32Const}, sleb(int64(minPages)),
		[]byte{0x47, opIf, 0x40, opUnreachable, opEnd})
	grown := minPages * PageSize
	code = cat(code, []byte{opI32Const}, sleb(int64(grown)), []byte{0x28, 2, 0, opIf, 0x40, opUnreachable, opEnd})
	for _, p := range append(probes, grown) {
		code = cat(code, []byte{opI32Const}, sleb(int64(p)), []byte{opI32Const}, sleb(-1), []byte{0x36, 0, 0}) // i32.store8... as i32
	}
	code = append(code, opEnd)
	image := make([]byte, size)
	for i := range image {
		image[i] = imageByte(i)
	}
	return module(
		sec(secType, vec(funcType(nil, nil))),
		sec(secFunction, vec(leb(0))),
		sec(secMemory, vec(cat([]byte{1}, leb(uint64(minPages)), leb(uint64(maxPages))))),
		sec(secExport, vec(cat(str("_start"), []byte{0, 0}), cat(str("memory"), []byte{2, 0}))),
		sec(secCode, vec(fbody(code...))),
		sec(secData, vec(cat([]byte{0, opI32Const, 0, opEnd}, leb(uint64(size)), image))),
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
	mapsPlatform := mod.image.backing != nil
	for i := range 5 {
		out, err := rt.Run(ctx, mod, Spec{})
		require.NoError(t, err)
		require.True(t, out.Success(), "task %d: %s %s", i, out.Kind, out.Message)
		require.Equal(t, int64(minPages+3)*PageSize, out.PeakMemoryBytes)
	}
	var b *imageBacking
	if mapsPlatform {
		b = mod.image.backing
		require.Equal(t, int64(1), b.mapped.Load(), "one pooled memory, reused by every task")
		require.Equal(t, 1, imageMaps(t, b.name))
		m1 := b.allocateMapped(&memoryBudget{limit: 1 << 30}, 1<<30)
		m2 := b.allocateMapped(&memoryBudget{limit: 1 << 30}, 1<<30)
		s1, s2 := m1.Reallocate(minPages*PageSize), m2.Reallocate(minPages*PageSize)
		require.True(t, &s1[0] != &s2[0], "two live memories never share pages")
		s1[5] = 0
		require.Equal(t, imageByte(5), s2[5])
		m1.Free()
		m2.Free()
	}
	require.NoError(t, rt.Close(ctx))
	if mapsPlatform {
		require.Zero(t, b.mapped.Load(), "every memory unmapped")
		require.Zero(t, imageMaps(t, b.name))
	}
	runtime.KeepAlive(mod)
}

// TestMemImageLimit: the task's memory limit holds on a mapped memory:
// growing past it fails (memory.grow returns -1), within it works, and the
// base never moves.
func TestMemImageLimit(t *testing.T) {
	t.Parallel()
	wasm := moduleWithData(2, []dataSegment{{offset: 0, data: bytes.Repeat([]byte{9}, 100<<10)}})
	_, img, ok := buildMemImage(wasm, 2)
	require.True(t, ok)
	b, err := mapImage(img)
	require.NoError(t, err)
	if b == nil {
		t.Skip("this platform copies images")
	}
	img.backing = b
	defer img.release()
	budget := &memoryBudget{limit: 5 * PageSize}
	m := b.allocateMapped(budget, 5*PageSize)
	s := m.Reallocate(2 * PageSize)
	require.Equal(t, byte(9), s[100<<10-1])
	require.Equal(t, byte(0), s[100<<10])
	s5 := m.Reallocate(5 * PageSize)
	require.Len(t, s5, 5*PageSize)
	require.True(t, &s[0] == &s5[0], "grown in place")
	s5[5*PageSize-1] = 1
	require.True(t, m.Reallocate(6*PageSize) == nil)
	require.True(t, budget.hit.Load())
	require.Equal(t, uint64(5*PageSize), budget.peak.Load())
	m.Free()
	m.Free() // twice is harmless
}

// TestMemImageFailedStart: an instantiation that fails after its memory
// was allocated (a start function traps) gives the memory back.
func TestMemImageFailedStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wasm := module(
		sec(secType, vec(funcType(nil, nil))),
		sec(secFunction, vec(leb(0), leb(0))),
		sec(secMemory, vec([]byte{0, 4})),
		sec(secExport, vec(cat(str("_start"), []byte{0, 0}), cat(str("memory"), []byte{2, 0}))),
		sec(secStart, leb(1)),
		sec(secCode, vec(fbody(opEnd), fbody(opUnreachable, opEnd))),
		sec(secData, vec(cat([]byte{0, opI32Const, 0, opEnd}, leb(200<<10), bytes.Repeat([]byte{3}, 200<<10)))),
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
	b := mod.image.backing
	if b != nil {
		require.Equal(t, int64(1), b.mapped.Load(), "the memory went back to the pool each time")
	}
	require.NoError(t, rt.Close(ctx))
	if b != nil {
		require.Zero(t, b.mapped.Load())
		require.Zero(t, imageMaps(t, b.name))
	}
	runtime.KeepAlive(mod)
}
