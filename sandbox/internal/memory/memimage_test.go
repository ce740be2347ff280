package memory

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// imageMemory instantiates the module BuildImage makes of wasm, with its
// memory from a budget holding the image (mapped when mapped is true and
// the platform maps images, copied otherwise), and returns a copy of its
// memory.
func imageMemory(t *testing.T, wasm []byte, minPages uint32, mapped bool) []byte {
	t.Helper()
	stripped, img, ok := BuildImage(wasm, minPages, testBounds)
	require.True(t, ok)
	if mapped {
		b, err := mapImage(img)
		require.NoError(t, err)
		img.backing = b
		defer img.Release()
	}
	budget := &Budget{Limit: 1 << 32, Pool: &Pool{}, Image: img}
	out := instanceMemory(t, experimental.WithMemoryAllocator(context.Background(), budget), stripped)
	budget.Release()
	return out
}

// randomSegments returns random active segments (overlapping, out of
// order, with zeros, some overwritten by zeros) within pages.
func randomSegments(rng *rand.Rand, pages int, n, maxSize int) []segment {
	var segs []segment
	for range n {
		size := rng.IntN(maxSize)
		off := rng.IntN(pages*pageSize - size + 1)
		data := make([]byte, size)
		for i := range data {
			if rng.IntN(3) > 0 {
				data[i] = byte(1 + rng.IntN(255))
			}
		}
		if rng.IntN(10) == 0 {
			clear(data)
		}
		segs = append(segs, segment{offset: uint32(off), data: data})
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
		segs = append(segs, segment{offset: uint32(rng.IntN(pageSize)), data: []byte{7}}) // never all zeros
		wasm := moduleWithData(uint32(pages), segs)
		want := initialMemory(t, wasm)
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
	minPages := declaredMin(t, wasm)
	stripped, img, ok := BuildImage(wasm, minPages, testBounds)
	require.True(t, ok)
	t.Logf("hello: image of %d bytes at %d; %d bytes of wasm became %d", img.Size, img.Start, len(wasm), len(stripped))
	want := initialMemory(t, wasm)
	require.Equal(t, want, imageMemory(t, wasm, minPages, true))
	require.Equal(t, want, imageMemory(t, wasm, minPages, false))
}

// TestMemImagePassiveSegments: passive segments and a DataCount section
// stay for memory.init (each active segment becomes an empty one, so
// indices hold), and the initial memory is wazero's own.
func TestMemImagePassiveSegments(t *testing.T) {
	t.Parallel()
	wasm := wasmtest.PassiveDataModule()
	stripped, img, ok := BuildImage(wasm, 2, testBounds)
	require.True(t, ok)
	require.Equal(t, uint64(9), img.Start)
	require.Equal(t, initialMemory(t, wasm), imageMemory(t, wasm, 2, true))
	require.NotContains(t, string(stripped), "\x01\x02\x03\x04", "the active segment's bytes left the module")
	require.Contains(t, string(stripped), "XYZ", "the passive segment stays")
}

// TestMemImageLeavesAlone: what an image could change keeps wazero's path.
func TestMemImageLeavesAlone(t *testing.T) {
	t.Parallel()
	base := moduleWithData(1, []segment{{offset: 10, data: []byte{1, 2, 3}}})
	_, _, ok := BuildImage(base, 1, testBounds)
	require.True(t, ok, "the base case")
	_, _, ok = BuildImage(base, 0, testBounds)
	require.False(t, ok, "a segment past the declared memory: instantiation must fail as it would")
	globalOffset := bytes.Replace(base, []byte{0x41, 0x0a, 0x0b}, []byte{0x23, 0x00, 0x0b}, 1)
	require.NotEqual(t, base, globalOffset)
	_, _, ok = BuildImage(globalOffset, 1, testBounds)
	require.False(t, ok, "an offset from a global")
	zeros := moduleWithData(1, []segment{{offset: 10, data: []byte{0, 0}}})
	_, _, ok = BuildImage(zeros, 1, testBounds)
	require.False(t, ok, "nothing but zeros: nothing to image")
	shared := bytes.Replace(base, []byte{5, 3, 1, 0, 1}, []byte{5, 4, 1, 3, 1, 1}, 1) // limits flag 3: shared with max
	require.NotEqual(t, base, shared)
	_, _, ok = BuildImage(shared, 1, testBounds)
	require.False(t, ok, "a shared memory")
	for _, bad := range [][]byte{nil, []byte("not wasm"), base[:len(base)-3]} {
		_, _, ok = BuildImage(bad, 1, testBounds)
		require.False(t, ok)
	}
	sparse := moduleWithData(1024, []segment{{offset: 0, data: []byte{1}}, {offset: 1<<20 + 100, data: []byte{2}}})
	_, _, ok = BuildImage(sparse, 1024, testBounds)
	require.False(t, ok, "sparser than the bounds allow")
	_, _, ok = BuildImage(sparse, 1024, ImageBounds{Max: 2 << 20, Sparsity: 16, Slack: 2 << 20})
	require.True(t, ok, "within looser bounds")
}

// mappedImage is an image of size bytes of 9 at offset 0 in a module of
// minPages, mapped; it skips the test where the platform copies images.
func mappedImage(t *testing.T, size int, minPages uint32) *Image {
	t.Helper()
	wasm := moduleWithData(minPages, []segment{{offset: 0, data: bytes.Repeat([]byte{9}, size)}})
	_, img, ok := BuildImage(wasm, minPages, testBounds)
	require.True(t, ok)
	b, err := mapImage(img)
	require.NoError(t, err)
	if b == nil {
		t.Skip("this platform copies images")
	}
	img.backing = b
	t.Cleanup(img.Release)
	return img
}

// TestMemImageLimit: the task's memory limit holds on a mapped memory:
// growing past it fails (memory.grow returns -1), within it works, and the
// base never moves.
func TestMemImageLimit(t *testing.T) {
	t.Parallel()
	img := mappedImage(t, 100<<10, 2)
	budget := &Budget{Limit: 5 * pageSize}
	m := img.backing.allocateMapped(budget, 5*pageSize)
	s := m.Reallocate(2 * pageSize)
	require.Equal(t, byte(9), s[100<<10-1])
	require.Equal(t, byte(0), s[100<<10])
	s5 := m.Reallocate(5 * pageSize)
	require.Len(t, s5, 5*pageSize)
	require.True(t, &s[0] == &s5[0], "grown in place")
	s5[5*pageSize-1] = 1
	require.True(t, m.Reallocate(6*pageSize) == nil)
	require.True(t, budget.Hit())
	require.Equal(t, uint64(5*pageSize), budget.Peak())
	m.Free()
	m.Free() // twice is harmless
}

// TestMemImageApart: two live memories of one image never share pages,
// and each range goes back to the pool, then is unmapped at Release.
func TestMemImageApart(t *testing.T) {
	t.Parallel()
	const minPages = 8
	img := mappedImage(t, 300<<10, minPages)
	m1 := img.backing.allocateMapped(&Budget{Limit: 1 << 30}, 1<<30)
	m2 := img.backing.allocateMapped(&Budget{Limit: 1 << 30}, 1<<30)
	s1, s2 := m1.Reallocate(minPages*pageSize), m2.Reallocate(minPages*pageSize)
	require.True(t, &s1[0] != &s2[0], "two live memories never share pages")
	s1[5] = 0
	require.Equal(t, byte(9), s2[5])
	require.Equal(t, int64(2), img.Mappings())
	m1.Free()
	m2.Free()
	require.Equal(t, int64(2), img.Mappings(), "both pooled")
	img.Release()
	require.Zero(t, img.Mappings())
	img.Release() // twice is harmless
}
