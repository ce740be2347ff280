package memory

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
// Stint hands it (Budget.Allocate) already holds the image.
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
// image within the bounds data merging uses (ImageBounds: package sandbox
// passes its merge limits). Passive segments stay, for memory.init: when
// the module has any, or a DataCount section (memory.init and data.drop
// name segments by index), each active segment is replaced by an empty
// one at offset 0, which keeps every index and does nothing at
// instantiation (an active segment is dropped once applied, so
// memory.init on it behaves the same either way). Anything else (an offset from a global,
// say) keeps wazero's own path, with merging (package sandbox's
// rewrite.MergeDataSegments).
//
// The image code reads the data section through wasmbin.DataEntries.

// liveImageMappings counts the address ranges mapped for instances'
// memories (memimage_linux.go) that are not yet unmapped: pooled or in
// use.
var liveImageMappings atomic.Int64

// Image is a module's initial linear memory: Size bytes at offset Start
// (its first and last bytes are not zero); every other byte of the initial
// memory is zero. BuildImage makes one; Back gives it its platform
// backing; Release closes that once the module is released.
type Image struct {
	// Start and Size place the image in memory.
	Start, Size uint64
	// Data holds the image's bytes when instances copy them; nil when the
	// backing holds them (Back moved them there).
	Data []byte
	// MinBytes is the declared minimum memory, in bytes.
	MinBytes uint64
	// backing is how instances get it on this platform (nil: copied).
	backing *imageBacking
	// id names it (the start of its module's sha256), for the memfd.
	id string
}

// end is the offset just past the image's last byte.
func (im *Image) end() uint64 { return im.Start + im.Size }

// ImageBounds bounds the image BuildImage builds: from the first byte a
// segment writes to the last, at most Max bytes, and at most Sparsity
// times the bytes the segments hold plus Slack.
type ImageBounds struct {
	Max, Sparsity, Slack uint64
}

// KeepResident is how many bytes past the image a reset zeroes in place
// rather than dropping, where images are mapped (memimage_linux.go);
// benchmarks change it to compare.
var KeepResident = func() *atomic.Uint64 { k := new(atomic.Uint64); k.Store(16 << 20); return k }()

// SelectiveReset makes a reset zero a page past the image only if it is
// not all zeros (memimage_reset_linux.go; the default); benchmarks turn it
// off to compare.
var SelectiveReset = func() *atomic.Bool { b := new(atomic.Bool); b.Store(true); return b }()

// definedMemory reports whether the module defines exactly one plain
// memory (not shared, not 64-bit) and imports none.
func definedMemory(wasm []byte, secs []wasmbin.Section) bool {
	found := false
	for _, s := range secs {
		switch s.ID {
		case wasmbin.SecImport:
			if wasmbin.ImportsMemory(wasm[s.Start:s.End]) {
				return false
			}
		case wasmbin.SecMemory:
			p := wasm[s.Start:s.End]
			count, n, err := wasmbin.U32(p)
			if err != nil || count != 1 || len(p) < n+1 || p[n] > 1 { // flags 0 or 1: min, or min and max
				return false
			}
			found = true
		}
	}
	return found
}

// BuildImage returns wasm without the data segments the image holds, and
// the image, or false when the image does not apply (the comment at the
// top of this file says when). minPages is the memory minimum wasm
// declares.
func BuildImage(wasm []byte, minPages uint32, bounds ImageBounds) ([]byte, *Image, bool) {
	secs, ok := wasmbin.Sections(wasm)
	if !ok || !definedMemory(wasm, secs) {
		return wasm, nil, false
	}
	var data *wasmbin.Section
	hasDataCount := false
	for i, s := range secs {
		switch s.ID {
		case wasmbin.SecDataCount:
			hasDataCount = true
		case wasmbin.SecData:
			data = &secs[i]
		}
	}
	if data == nil {
		return wasm, nil, false
	}
	entries, ok := wasmbin.DataEntries(wasm[data.Start:data.End])
	if !ok {
		return wasm, nil, false
	}
	minBytes := uint64(minPages) * pageSize
	start, end, total := uint64(1)<<32, uint64(0), uint64(0)
	keepEntries := hasDataCount
	for _, e := range entries {
		if e.Passive {
			keepEntries = true
			continue
		}
		if uint64(e.Offset)+uint64(len(e.Data)) > minBytes {
			return wasm, nil, false // out of bounds, even empty: instantiation must fail as it would have
		}
		if len(e.Data) == 0 {
			continue
		}
		start = min(start, uint64(e.Offset))
		end = max(end, uint64(e.Offset)+uint64(len(e.Data)))
		total += uint64(len(e.Data))
	}
	if end <= start {
		return wasm, nil, false // no data to image
	}
	if end-start > bounds.Max || end-start > bounds.Sparsity*total+bounds.Slack {
		return wasm, nil, false
	}
	image := make([]byte, end-start)
	for _, e := range entries {
		if !e.Passive && len(e.Data) > 0 {
			copy(image[uint64(e.Offset)-start:], e.Data)
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
	img := &Image{Start: start + uint64(lo), Size: uint64(hi - lo), Data: image[lo:hi:hi], MinBytes: minBytes}

	out := make([]byte, 0, len(wasm)-(data.End-data.Header)+16)
	out = append(out, wasm[:data.Header]...)
	if keepEntries {
		payload := binary.AppendUvarint(nil, uint64(len(entries)))
		for _, e := range entries {
			if e.Passive {
				payload = append(payload, e.Raw...)
			} else {
				payload = append(payload, 0x00, 0x41, 0x00, 0x0b, 0x00) // active, i32.const 0, no bytes
			}
		}
		out = append(out, 11)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	out = append(out, wasm[data.End:]...)
	return out, img, true
}

// isZero reports whether every byte of b is zero.
func isZero(b []byte) bool { return len(bytes.TrimLeft(b, "\x00")) == 0 }

// copyInto writes the image into buf, a zeroed buffer at least the
// image's end long; false if the image could not be read.
func (im *Image) copyInto(buf []byte) bool {
	dst := buf[im.Start:im.end()]
	if im.Data != nil {
		copy(dst, im.Data)
		return true
	}
	return im.backing != nil && im.backing.readAt(dst, im.Start)
}

// Back gives a compiled module's image its platform backing, if it is
// worth mapping: a sealed memfd (id names it) that holds the bytes from
// then on (Data is nil). On an error, and for a small image or where the
// platform maps none, instances copy the image.
func (im *Image) Back(id string) error {
	im.id = id
	b, err := newBacking(im)
	if err != nil {
		return err
	}
	im.backing = b
	return nil
}

// Release closes the image's backing (its module was released). A nil
// image is fine.
func (im *Image) Release() {
	if im != nil && im.backing != nil {
		im.backing.close()
	}
}

// Drain unmaps the image's pooled memories and stops pooling (the runtime
// is closing); memories in use are unmapped when their instance frees
// them. A nil image is fine.
func (im *Image) Drain() {
	if im != nil && im.backing != nil {
		im.backing.drain()
	}
}

// Mappings is how many address ranges map the image now, pooled or in
// use (0 when instances copy it).
func (im *Image) Mappings() int64 { return im.backing.mappings() }

// FileName is the name of the file instances map the image from (in
// /proc/self/maps as "/memfd:NAME (deleted)"); "" when they copy it.
func (im *Image) FileName() string { return im.backing.fileName() }
