package memory

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// pageSize is a WebAssembly page: 64 KiB.
const pageSize = 65536

// Budget is the per-instance memory allocator: it refuses to grow a
// guest's linear memory past the task's limit (memory.grow then returns -1)
// and records the peak. Buffers come from, and go back to, a pool of
// power-of-two size classes; a buffer is zeroed before it goes back, so no
// task ever sees another's bytes, and it is never shared between live tasks
// (wazero frees it only after the guest stopped running).
//
// A module with a memory image (memimage.go) gets memory that already
// holds it: a copy-on-write mapping of the image where the platform has
// one, else a pooled buffer the image is copied into.
//
// Set Limit, Pool and Image, hand it to wazero
// (experimental.WithMemoryAllocator), and Release it once the instance is
// closed.
type Budget struct {
	// Limit is the most bytes the instance may hold.
	Limit uint64
	// Pool is where its buffers come from and go back to.
	Pool *Pool
	// Image is the module's initial memory; nil: the module has none
	// (wazero applies its data).
	Image *Image

	peak atomic.Uint64
	hit  atomic.Bool
	mem  experimental.LinearMemory // the one allocated, if any
	// extra is memory the instance holds outside its linear memory, under
	// the same limit: an Extism plugin's kernel memory (AddExtra).
	extra atomic.Uint64
}

// Peak is the largest linear memory the instance had, in bytes.
func (b *Budget) Peak() uint64 { return b.peak.Load() }

// Hit reports whether the instance was refused memory over its limit.
func (b *Budget) Hit() bool { return b.hit.Load() }

// SetHit records that the instance was refused memory over its limit
// outside its linear memory (an Extism plugin's kernel memory).
func (b *Budget) SetHit() { b.hit.Store(true) }

// AddExtra adds delta to the bytes the instance holds outside its linear
// memory, under the same limit (a subtraction wraps, as with
// atomic.Uint64.Add).
func (b *Budget) AddExtra(delta uint64) { b.extra.Add(delta) }

// over reports whether a linear memory of size bytes, with what else the
// instance holds, is over the limit.
func (b *Budget) over(size uint64) bool {
	return size > b.Limit || b.extra.Load() > b.Limit-size
}

// Allocate implements experimental.MemoryAllocator.
func (b *Budget) Allocate(_, max uint64) experimental.LinearMemory {
	limit := min(max, b.Limit)
	var m experimental.LinearMemory
	if b.Image != nil && b.Image.backing != nil {
		m = b.Image.backing.allocateMapped(b, limit)
	}
	if m == nil {
		m = &linearMemory{budget: b, max: limit, image: b.Image}
	}
	b.mem = m
	return m
}

// Release frees the memory if wazero did not (it does not when an
// instantiation fails after allocating it, say in a start function).
// Called once the instance is closed.
func (b *Budget) Release() {
	if b.mem != nil {
		b.mem.Free() // idempotent
		b.mem = nil
	}
}

// notePeak records size as the peak if it is one.
func (b *Budget) notePeak(size uint64) {
	if size > b.peak.Load() {
		b.peak.Store(size)
	}
}

type linearMemory struct {
	budget *Budget
	max    uint64
	buf    []byte
	used   uint64 // high-water length: what must be zeroed before reuse
	image  *Image // copied in at the first allocation; nil: none
	freed  atomic.Bool
}

// Reallocate implements experimental.LinearMemory.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.max || m.budget.over(size) {
		m.budget.hit.Store(true)
		return nil
	}
	if size > uint64(cap(m.buf)) {
		nb := m.budget.Pool.get(size, m.max)
		switch {
		case m.buf != nil:
			copy(nb, m.buf[:m.used])
			m.budget.Pool.put(m.buf, m.used)
		case m.image != nil: // the first allocation: at least the declared minimum, which holds the image
			if !m.image.copyInto(nb) {
				m.budget.Pool.put(nb, size)
				return nil
			}
		}
		m.buf = nb
	}
	m.used = max(m.used, size)
	m.budget.notePeak(size)
	m.buf = m.buf[:size]
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() {
	// Two goroutines can free it at once (see mappedMemory.Free): only the
	// first puts the buffer back, so no two instances ever share it.
	if !m.freed.CompareAndSwap(false, true) {
		return
	}
	m.budget.Pool.put(m.buf, m.used)
	m.buf, m.used = nil, 0
}

// Pool keeps zeroed linear-memory buffers by power-of-two capacity
// (64 KiB to 4 GiB) so tasks reuse them instead of leaving them to the GC.
// Its zero value is ready; one serves every instance of a runtime.
type Pool struct {
	classes [17]sync.Pool // 2^16 .. 2^32
}

func sizeClass(n uint64) int {
	if n <= pageSize {
		return 0
	}
	return bits.Len64(n-1) - 16
}

// get returns a zeroed buffer of at least size bytes (capacity clipped to
// limit), length size.
func (p *Pool) get(size, limit uint64) []byte {
	c := sizeClass(size)
	if c < len(p.classes) {
		if v := p.classes[c].Get(); v != nil {
			buf := *(v.(*[]byte))
			if uint64(cap(buf)) >= size {
				return buf[:size]
			}
		}
	}
	capacity := max(min(uint64(1)<<(c+16), limit), size)
	return make([]byte, size, capacity)
}

// put zeroes the first used bytes of buf and keeps it for reuse.
func (p *Pool) put(buf []byte, used uint64) {
	if cap(buf) == 0 {
		return
	}
	c := sizeClass(uint64(cap(buf)))
	if c >= len(p.classes) || uint64(1)<<(c+16) != uint64(cap(buf)) {
		return // odd capacity (clipped to a max): leave it to the GC
	}
	clear(buf[:used])
	buf = buf[:0]
	p.classes[c].Put(&buf)
}
