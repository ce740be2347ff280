//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package memory

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// mmapMinImage is the image size from which instances map the image
// copy-on-write instead of copying it: below it a copy costs less than
// the page faults and the madvise that reset a mapping.
const mmapMinImage = 64 << 10

// memfdName starts the image files' names (in /proc/self/maps, as
// "/memfd:stint-memimage-ID (deleted)", ID from the module's sha256).
const memfdName = "stint-memimage"

// imageBacking is an image in a sealed memfd, and the pooled address
// ranges that map it.
type imageBacking struct {
	fd      int
	name    string       // the memfd's name
	mapped  atomic.Int64 // ranges mapped, pooled or in use
	fileLen uint64       // the file's size: the image's end, rounded up to the OS page

	mu      sync.Mutex
	free    []*reservation // reset, ready for the next instance
	maxFree int
	drained bool // pool no more: released ranges are unmapped
	closed  bool // fd closed
}

// reservation is one instance's address range: reserve bytes from base,
// PROT_NONE except the first rw bytes, of which the first fileLen map the
// image privately and the rest are anonymous.
type reservation struct {
	base    unsafe.Pointer
	reserve uint64
	rw      uint64
}

var osPageSize = uint64(os.Getpagesize())

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }

// newBacking puts img into a sealed memfd when it is worth mapping, and
// drops img.Data then (the file holds it). It returns nil to copy.
func newBacking(img *Image) (*imageBacking, error) {
	if img.Size < mmapMinImage {
		return nil, nil
	}
	return mapImage(img)
}

// mapImage puts img into a sealed memfd named memfdName-img.id.
func mapImage(img *Image) (*imageBacking, error) {
	name := memfdName + "-" + img.id
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	fileLen := roundUp(img.end(), osPageSize)
	if err := fillMemfd(fd, img, fileLen); err != nil {
		unix.Close(fd)
		return nil, err
	}
	img.Data = nil
	return &imageBacking{fd: fd, name: name, fileLen: fileLen, maxFree: max(2, 2*runtime.GOMAXPROCS(0))}, nil
}

func fillMemfd(fd int, img *Image, fileLen uint64) error {
	if err := unix.Ftruncate(fd, int64(fileLen)); err != nil {
		return fmt.Errorf("memfd ftruncate: %w", err)
	}
	for off := uint64(0); off < img.Size; {
		n, err := unix.Pwrite(fd, img.Data[off:], int64(img.Start+off))
		if err != nil {
			return fmt.Errorf("memfd write: %w", err)
		}
		off += uint64(n)
	}
	// Sealed: nothing can change the image under the mappings (a private
	// writable mapping is still allowed; its writes stay private).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
		unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return fmt.Errorf("memfd seal: %w", err)
	}
	return nil
}

// get returns a range of at least reserve bytes whose first rw bytes hold
// the image, pooled or new, or nil when none can be mapped.
func (b *imageBacking) get(reserve uint64) *reservation {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	for len(b.free) > 0 {
		r := b.free[len(b.free)-1]
		b.free = b.free[:len(b.free)-1]
		if r.reserve >= reserve {
			b.mu.Unlock()
			return r
		}
		b.unmap(r) // too small for this task's limit
	}
	b.mu.Unlock()
	return b.mapReservation(reserve)
}

// mapReservation reserves reserve bytes and maps the image at their start.
// Called with the fd open (the image is not released: package sandbox
// keeps its Module alive while an instance runs).
func (b *imageBacking) mapReservation(reserve uint64) *reservation {
	reserve = max(roundUp(reserve, osPageSize), b.fileLen)
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(reserve), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	if _, err := unix.MmapPtr(b.fd, 0, base, uintptr(b.fileLen), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
		_ = unix.MunmapPtr(base, uintptr(reserve))
		return nil
	}
	liveImageMappings.Add(1)
	b.mapped.Add(1)
	return &reservation{base: base, reserve: reserve, rw: b.fileLen}
}

func (b *imageBacking) unmap(r *reservation) {
	if err := unix.MunmapPtr(r.base, uintptr(r.reserve)); err != nil {
		panic(fmt.Sprintf("sandbox: munmap of a linear memory: %v", err)) // a bad address: a bug
	}
	liveImageMappings.Add(-1)
	b.mapped.Add(-1)
}

// grow makes the first size bytes of r accessible.
func (r *reservation) grow(size uint64) bool {
	if size <= r.rw {
		return true
	}
	if size > r.reserve {
		return false
	}
	n := roundUp(size, osPageSize)
	if err := unix.Mprotect(unsafe.Slice((*byte)(unsafe.Add(r.base, r.rw)), n-r.rw), unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return false
	}
	r.rw = n
	return true
}

// put resets r to the pristine image and pools it, or unmaps it.
// dirty is how many bytes from base the instance could have written.
func (b *imageBacking) put(r *reservation, dirty uint64) {
	b.mu.Lock()
	pool := !b.drained && len(b.free) < b.maxFree
	b.mu.Unlock()
	if pool && dirty > 0 {
		pool = b.reset(r, roundUp(dirty, osPageSize))
	}
	if pool {
		b.mu.Lock()
		if pool = !b.drained && len(b.free) < b.maxFree; pool {
			b.free = append(b.free, r)
		}
		b.mu.Unlock()
	}
	if !pool {
		b.unmap(r)
	}
}

// KeepResident (memimage.go) is how many bytes past the image a reset
// zeroes in place rather than dropping: a page dropped costs a page fault
// when the next task touches it again, which on a virtual machine costs
// more than zeroing it (wasmtime's linear_memory_keep_resident does the
// same). Its default, 16 MiB, keeps a Go guest's heap past its image
// resident (docs/design/memory-images.md).

// reset makes the first dirty bytes of r pristine again: on the private
// file mapping, MADV_DONTNEED drops the private copies (the image shows
// through again); past it, up to KeepResident bytes are zeroed (the pages
// that are not zero already: SelectiveReset) and the rest dropped (zeros
// again).
func (b *imageBacking) reset(r *reservation, dirty uint64) bool {
	dropFrom := min(dirty, b.fileLen)
	if keep := KeepResident.Load(); keep > 0 && dirty > b.fileLen {
		clearTo := min(dirty, b.fileLen+roundUp(keep, osPageSize))
		past := unsafe.Slice((*byte)(unsafe.Add(r.base, b.fileLen)), clearTo-b.fileLen)
		if SelectiveReset.Load() { // memimage_reset_linux.go
			clearNonZero(past)
		} else {
			clear(past)
		}
		dropFrom = clearTo
	}
	if err := unix.Madvise(unsafe.Slice((*byte)(r.base), b.fileLen), unix.MADV_DONTNEED); err != nil {
		return false
	}
	if dirty > dropFrom {
		if err := unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(r.base, dropFrom)), dirty-dropFrom), unix.MADV_DONTNEED); err != nil {
			return false
		}
	}
	return true
}

// drain unmaps the pooled ranges and stops pooling (Image.Drain).
func (b *imageBacking) drain() {
	b.mu.Lock()
	free := b.free
	b.free, b.drained = nil, true
	b.mu.Unlock()
	for _, r := range free {
		b.unmap(r)
	}
}

// close drains the pool and closes the file (the module is released;
// ranges still in use keep the file mapped until they are put back).
func (b *imageBacking) close() {
	b.drain()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		unix.Close(b.fd)
	}
}

// mappings is how many ranges map the image (0 for no backing).
func (b *imageBacking) mappings() int64 {
	if b == nil {
		return 0
	}
	return b.mapped.Load()
}

// fileName is the memfd's name ("" for no backing).
func (b *imageBacking) fileName() string {
	if b == nil {
		return ""
	}
	return b.name
}

// readAt copies the file's bytes at off into p (the fallback when no
// range can be mapped).
func (b *imageBacking) readAt(p []byte, off uint64) bool {
	for len(p) > 0 {
		n, err := unix.Pread(b.fd, p, int64(off))
		if err != nil || n == 0 {
			return false
		}
		p, off = p[n:], off+uint64(n)
	}
	return true
}

// mappedMemory is an instance's linear memory in a reservation.
type mappedMemory struct {
	budget  *Budget
	backing *imageBacking
	r       *reservation
	max     uint64 // the task's limit, clipped to the module's maximum
	dirty   uint64 // the largest size handed out
	freed   atomic.Bool
}

// allocateMapped returns a memory that starts as the image, or nil when
// none can be mapped (the caller copies instead).
func (b *imageBacking) allocateMapped(budget *Budget, max uint64) experimental.LinearMemory {
	r := b.get(max)
	if r == nil {
		return nil
	}
	return &mappedMemory{budget: budget, backing: b, r: r, max: max}
}

// Reallocate implements experimental.LinearMemory: the memory grows in
// place, so the base never moves.
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > m.max || m.r == nil || m.budget.over(size) {
		m.budget.hit.Store(true)
		return nil
	}
	if !m.r.grow(size) {
		return nil
	}
	m.dirty = max(m.dirty, size)
	m.budget.notePeak(size)
	return unsafe.Slice((*byte)(m.r.base), size)
}

// Free implements experimental.LinearMemory.
func (m *mappedMemory) Free() {
	// Two goroutines can free it at once: wazero's Close of the runtime,
	// and an abandoned call's guest worker discarding its instance. Only
	// the first gives the region back.
	if !m.freed.CompareAndSwap(false, true) || m.r == nil {
		return
	}
	r := m.r
	m.r = nil
	m.backing.put(r, m.dirty)
}
