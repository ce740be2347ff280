//go:build linux

package memory

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms Stint
// maps images on.
const hugePage = 2 << 20

// TransientBuffer returns a buffer of n bytes for reading a large file
// that is needed only for a moment (a prepared-module cache entry), and
// the function that frees it; the buffer must not be used after. Past a
// megabyte it is an anonymous mapping advised MADV_HUGEPAGE (outside the
// Go heap, aligned to a huge page): where transparent huge pages are
// allowed on request (the "madvise" setting, a common default), reading
// into it takes one page fault per 2 MB instead of one per 4 KiB page,
// and on a virtual machine a fresh page is dear (docs/design/cold-start.md,
// "Less fresh memory, and wazero built aside"). Where huge pages
// are off, the advice is ignored and it is an ordinary mapping.
func TransientBuffer(n int) ([]byte, func()) {
	if n < 1<<20 {
		return make([]byte, n), func() {}
	}
	size := (n+hugePage-1)/hugePage*hugePage + hugePage // room to align
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]byte, n), func() {}
	}
	addr := uintptr(unsafe.Pointer(&m[0]))
	off := int((addr+hugePage-1)&^(hugePage-1) - addr)
	_ = unix.Madvise(m[off:], unix.MADV_HUGEPAGE) // advice only: EINVAL without THP
	return m[off : off+n : off+n], func() { _ = unix.Munmap(m) }
}
