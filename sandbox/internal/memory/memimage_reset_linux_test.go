//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package memory

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestSelectiveReset: after a task that read every page of the image,
// wrote some of them and wrote scattered bytes past the image, the reset
// gives back the pristine image and zeros past it, zeroing only the pages
// that are not zero (SelectiveReset) or all of them.
func TestSelectiveReset(t *testing.T) {
	const imgPages, pastPages = 40, 24
	image := make([]byte, imgPages*int(osPageSize))
	for i := range image {
		image[i] = byte(1 + i*7%251)
	}
	minPages := uint32((imgPages+pastPages)*int(osPageSize)/pageSize + 1)
	wasm := moduleWithData(minPages, []segment{{offset: 0, data: image}})
	_, img, ok := BuildImage(wasm, minPages, testBounds)
	require.True(t, ok)
	b, err := mapImage(img)
	require.NoError(t, err)
	require.NotNil(t, b)
	img.backing = b
	defer img.Release()
	size := uint64(minPages) * pageSize
	written := []int{0, 7, 8, 39}
	for _, selective := range []bool{true, false} {
		SelectiveReset.Store(selective)
		m := b.allocateMapped(&Budget{Limit: 1 << 30}, size).(*mappedMemory)
		s := m.Reallocate(size)
		r := m.r
		var sum byte
		for pg := range imgPages {
			sum += s[pg*int(osPageSize)+1] // read every page of the image
		}
		require.NotZero(t, sum)
		for _, pg := range written {
			s[pg*int(osPageSize)+3] ^= 0xff
		}
		past := s[imgPages*int(osPageSize):]
		past[5] = 1
		past[len(past)-1] = 2
		past[3*int(osPageSize)+100] = 3
		m.Free()
		require.True(t, m.r == nil && len(b.free) == 1 && b.free[0] == r, "pooled")

		s = unsafe.Slice((*byte)(r.base), size)
		require.True(t, bytes.Equal(image, s[:len(image)]), "selective %v: the pristine image", selective)
		require.True(t, isZero(s[len(image):]), "selective %v: zeros past it", selective)
	}
	SelectiveReset.Store(true)
}

// TestClearNonZero: every non-zero byte is cleared, whatever page it is in.
func TestClearNonZero(t *testing.T) {
	t.Parallel()
	p := make([]byte, 5*int(osPageSize))
	for _, i := range []int{0, int(osPageSize) - 1, 3*int(osPageSize) + 17, len(p) - 1} {
		p[i] = 0xaa
	}
	clearNonZero(p)
	require.True(t, isZero(p))
}
