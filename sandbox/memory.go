package sandbox

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryBudget is the per-instance memory allocator: it refuses to grow a
// guest's linear memory past the task's limit (memory.grow then returns -1)
// and records the peak. Buffers come from, and go back to, a pool of
// power-of-two size classes; a buffer is zeroed before it goes back, so no
// task ever sees another's bytes, and it is never shared between live tasks
// (wazero frees it only after the guest stopped running).
type memoryBudget struct {
	limit uint64 // bytes
	pool  *bufferPool
	peak  atomic.Uint64
	hit   atomic.Bool
}

// Allocate implements experimental.MemoryAllocator.
func (b *memoryBudget) Allocate(_, max uint64) experimental.LinearMemory {
	return &linearMemory{budget: b, max: min(max, b.limit)}
}

type linearMemory struct {
	budget *memoryBudget
	max    uint64
	buf    []byte
	used   uint64 // high-water length: what must be zeroed before reuse
}

// Reallocate implements experimental.LinearMemory.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		m.budget.hit.Store(true)
		return nil
	}
	if size > uint64(cap(m.buf)) {
		nb := m.budget.pool.get(size, m.max)
		copy(nb, m.buf[:m.used])
		m.budget.pool.put(m.buf, m.used)
		m.buf = nb
	}
	m.used = max(m.used, size)
	if size > m.budget.peak.Load() {
		m.budget.peak.Store(size)
	}
	m.buf = m.buf[:size]
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() {
	m.budget.pool.put(m.buf, m.used)
	m.buf, m.used = nil, 0
}

// bufferPool keeps zeroed linear-memory buffers by power-of-two capacity
// (64 KiB to 4 GiB) so tasks reuse them instead of leaving them to the GC.
type bufferPool struct {
	classes [17]sync.Pool // 2^16 .. 2^32
}

func sizeClass(n uint64) int {
	if n <= PageSize {
		return 0
	}
	return bits.Len64(n-1) - 16
}

// get returns a zeroed buffer of at least size bytes (capacity clipped to
// limit), length size.
func (p *bufferPool) get(size, limit uint64) []byte {
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
func (p *bufferPool) put(buf []byte, used uint64) {
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
