//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package memory

import "bytes"

// Zeroing past the image only where the task wrote.
//
// Of the pages past its image that a Go hello task has in use (its heap),
// few hold anything but zeros at its end, so a reset that zeroed all of
// them would write mostly zeros over zeros. Unless SelectiveReset
// (memimage.go) is off, a reset zeroes a page past the image (up to
// KeepResident) only if it is not all zeros already: checking reads the
// page, zeroing writes every cache line of it.
//
// (Tried and dropped: on the image itself, reading /proc/self/pagemap to
// drop only the task's private copies and keep the pages it only read
// mapped. File-backed faults map several pages at a time, so little was
// saved, and reading pagemap for a large image cost more than the madvise
// it narrowed. docs/design/memory-images.md, "The reset: only the pages a
// task dirtied".)

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
