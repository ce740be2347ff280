package sandbox

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Memory images (issue 14).
//
// At compile, Stint builds a module's initial linear memory once, from its
// data segments applied in order (later ones overwrite earlier ones, as at
// instantiation), and removes those segments from the module wazero
// compiles: wazero then instantiates a memory of zeros, and the memory
// Stint hands it (memoryBudget.Allocate) already holds the image.
//
// How an instance gets the image depends on the platform and the image's
// size (memimage_linux.go, memimage_other.go). On 64-bit Linux, an image
// of at least mmapMinImage bytes lives in a sealed memfd, and each
// instance's memory is a reserved address range (the module's maximum)
// whose first pages are a private, copy-on-write mapping of that file:
// instantiation copies nothing, a page is copied only when the guest
// writes it, and a pooled range is reset for the next task with
// madvise(MADV_DONTNEED), which drops the task's private pages (the image
// shows through again, and the pages past it read as zeros). Growth makes
// more of the reserved range accessible in place, so the memory never
// moves. Elsewhere, and for small images, the image is copied into a
// pooled buffer at instantiation (one copy, instead of wazero evaluating
// and copying every segment).
//
// The image applies only where it cannot change behaviour: a memory the
// module defines (not imported, not shared, 32-bit), every active segment
// for memory 0 at an i32.const offset and inside the declared minimum (a
// segment out of bounds must fail instantiation, as it would), and the
// image within the limits data merging uses (mergeMaxImage and the
// sparsity rule). Passive segments stay, for memory.init: when the module
// has any, or a DataCount section (memory.init and data.drop name
// segments by index), each active segment is replaced by an empty one at
// offset 0, which keeps every index and does nothing at instantiation
// (an active segment is dropped once applied, so memory.init on it
// behaves the same either way). Anything else (an offset from a global,
// say) keeps wazero's own path, with merging (rewrite.MergeDataSegments).

// liveImageMappings counts the address ranges mapped for instances'
// memories (memimage_linux.go) that are not yet unmapped: pooled or in
// use. Tests check that it returns to zero.
var liveImageMappings atomic.Int64

// memImage is a module's initial linear memory.
type memImage struct {
	// The image is size bytes at offset start (its first and last bytes
	// are not zero); every other byte of the initial memory is zero.
	start, size uint64
	// data holds the image's bytes when instances copy them; nil when
	// backing holds them.
	data []byte
	// minBytes is the declared minimum memory, in bytes.
	minBytes uint64
	// backing is how instances get it on this platform (nil: copied).
	backing *imageBacking
	// id names it (the start of its module's sha256), for the memfd.
	id string
}

// end is the offset just past the image's last byte.
func (im *memImage) end() uint64 { return im.start + im.size }

// dataEntry is one segment of a data section, as buildMemImage sees it.
type dataEntry struct {
	passive bool
	seg     dataSegment // active: offset and bytes
	raw     []byte      // the entry's encoding (kept for passive ones)
}

// parseDataEntries reads a data section whose segments are active for
// memory 0 at i32.const offsets, or passive; anything else returns false.
func parseDataEntries(p []byte) ([]dataEntry, bool) {
	entries, ok := wasmbin.DataEntries(p)
	if !ok {
		return nil, false
	}
	out := make([]dataEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, dataEntry{passive: e.Passive, seg: dataSegment{offset: e.Offset, data: e.Data}, raw: e.Raw})
	}
	return out, true
}

// definedMemory reports whether the module defines exactly one plain
// memory (not shared, not 64-bit) and imports none.
func definedMemory(wasm []byte, secs []section) bool {
	found := false
	for _, s := range secs {
		switch s.id {
		case 2:
			if wasmbin.ImportsMemory(wasm[s.start:s.end]) {
				return false
			}
		case 5:
			p := wasm[s.start:s.end]
			count, n, err := wasmbin.U32(p)
			if err != nil || count != 1 || len(p) < n+1 || p[n] > 1 { // flags 0 or 1: min, or min and max
				return false
			}
			found = true
		}
	}
	return found
}

// buildMemImage returns wasm without the data segments the image holds,
// and the image, or false when the image does not apply (see above).
func buildMemImage(wasm []byte, minPages uint32) ([]byte, *memImage, bool) {
	secs, ok := sections(wasm)
	if !ok || !definedMemory(wasm, secs) {
		return wasm, nil, false
	}
	var data *section
	hasDataCount := false
	for i, s := range secs {
		switch s.id {
		case 12:
			hasDataCount = true
		case 11:
			data = &secs[i]
		}
	}
	if data == nil {
		return wasm, nil, false
	}
	entries, ok := parseDataEntries(wasm[data.start:data.end])
	if !ok {
		return wasm, nil, false
	}
	minBytes := uint64(minPages) * PageSize
	start, end, total := uint64(1)<<32, uint64(0), uint64(0)
	keepEntries := hasDataCount
	for _, e := range entries {
		if e.passive {
			keepEntries = true
			continue
		}
		if uint64(e.seg.offset)+uint64(len(e.seg.data)) > minBytes {
			return wasm, nil, false // out of bounds, even empty: instantiation must fail as it would have
		}
		if len(e.seg.data) == 0 {
			continue
		}
		start = min(start, uint64(e.seg.offset))
		end = max(end, uint64(e.seg.offset)+uint64(len(e.seg.data)))
		total += uint64(len(e.seg.data))
	}
	if end <= start {
		return wasm, nil, false // no data to image
	}
	if end-start > mergeMaxImage || end-start > mergeMaxSparsity*total+mergeImageAllowed {
		return wasm, nil, false
	}
	image := make([]byte, end-start)
	for _, e := range entries {
		if !e.passive && len(e.seg.data) > 0 {
			copy(image[uint64(e.seg.offset)-start:], e.seg.data)
		}
	}
	// Trim zeros at both ends: they are zero anyway.
	lo, hi := 0, len(image)
	for lo < hi && image[lo] == 0 {
		lo++
	}
	for hi > lo && image[hi-1] == 0 {
		hi--
	}
	if lo == hi {
		return wasm, nil, false // all zeros
	}
	img := &memImage{start: start + uint64(lo), size: uint64(hi - lo), data: image[lo:hi:hi], minBytes: minBytes}

	out := make([]byte, 0, len(wasm)-(data.end-data.header)+16)
	out = append(out, wasm[:data.header]...)
	if keepEntries {
		payload := binary.AppendUvarint(nil, uint64(len(entries)))
		for _, e := range entries {
			if e.passive {
				payload = append(payload, e.raw...)
			} else {
				payload = append(payload, 0x00, 0x41, 0x00, 0x0b, 0x00) // active, i32.const 0, no bytes
			}
		}
		out = append(out, 11)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	out = append(out, wasm[data.end:]...)
	return out, img, true
}

// isZero reports whether every byte of b is zero.
func isZero(b []byte) bool { return len(bytes.TrimLeft(b, "\x00")) == 0 }

// copyInto writes the image into buf, a zeroed buffer at least the
// image's end long; false if the image could not be read.
func (im *memImage) copyInto(buf []byte) bool {
	dst := buf[im.start:im.end()]
	if im.data != nil {
		copy(dst, im.data)
		return true
	}
	return im.backing != nil && im.backing.readAt(dst, im.start)
}
