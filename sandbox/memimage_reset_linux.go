//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package sandbox

import (
	"bytes"
	"sync/atomic"
)

// Zeroing past the image only where the task wrote.
//
// Of the 426 pages past its image that a Go hello task had in use (its
// heap), 77 held anything but zeros at its end; a reset that zeroed all
// of them wrote 1.7 MB of zeros, mostly over zeros. Unless selectiveReset
// is off, a reset zeroes a page past the image (up to keepResident) only
// if it is not all zeros already: checking reads the page, zeroing writes
// every cache line of it.
//
// (Tried and dropped: on the image itself, reading /proc/self/pagemap to
// drop only the task's private copies and keep the pages it only read
// mapped. A hello task reads 285 of its image's pages and writes 3, but
// file-backed faults map 16 pages at a time, so little was saved, and
// reading pagemap for an 8 MiB image cost more than the madvise it
// narrowed: 1.2-1.3x the CPU of the data8m task. docs/benchmarks.md,
// section 9.)

// selectiveReset turns the above on (the default); benchmarks turn it off
// to compare.
var selectiveReset = func() *atomic.Bool { b := new(atomic.Bool); b.Store(true); return b }()

// zeroPage is a page of zeros to compare with.
var zeroPage = make([]byte, 64<<10)

// clearNonZero zeroes the pages of p (whole pages) that are not zero.
func clearNonZero(p []byte) {
	step := min(int(osPageSize), len(zeroPage))
	for len(p) > 0 {
		pg := p[:min(step, len(p))]
		if !bytes.Equal(pg, zeroPage[:len(pg)]) {
			clear(pg)
		}
		p = p[len(pg):]
	}
}
