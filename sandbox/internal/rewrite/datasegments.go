package rewrite

import (
	"encoding/binary"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Data segment merging.
//
// wazero evaluates every active data segment's offset expression at each
// instantiation, allocating as it goes. Go's linker emits one segment per
// run of non-zero bytes: the hello guest has 30,671 of them, and applying
// them was two thirds of its per-task cost. Before compiling, Stint rewrites
// such a module's data section into the few segments that give the same
// initial memory: it applies the segments in order to an image of memory
// (later ones overwrite earlier ones, as at instantiation), then emits its
// non-zero runs, joining runs less than mergeGap bytes apart. Fresh linear
// memory is all zeros (pooled buffers are zeroed before reuse), so the
// zero bytes left out are there anyway.
//
// The rewrite applies only where it cannot change behaviour: every segment
// active, for memory 0, at an i32.const offset, within the declared minimum
// memory; no DataCount section (so no memory.init or data.drop can refer to
// segments by index); no imported memory. Anything else is compiled as is.

const (
	// mergeMinSegments is the segment count from which merging is tried.
	mergeMinSegments = 64
	// mergeGap joins non-zero runs fewer than this many zero bytes apart:
	// copying a few zeros costs less than one more segment to evaluate.
	mergeGap = 64
	// MergeMaxImage caps the memory image built to merge (from the first
	// byte a segment writes to the last); sparser or larger data is left
	// as it is. The image is also at most MergeMaxSparsity times the bytes
	// the segments hold (plus a MiB), so that a small module cannot make
	// the runner allocate much to compile it.
	MergeMaxImage     = 64 << 20
	MergeMaxSparsity  = 16
	MergeImageAllowed = 1 << 20
)

// dataSegment is one active segment: its offset in memory 0 and its bytes.
type dataSegment struct {
	offset uint32
	data   []byte
}

// parseActiveData reads a data section made only of active segments for
// memory 0 at i32.const offsets (wasmbin.DataEntries), or returns false.
func parseActiveData(p []byte) ([]dataSegment, bool) {
	entries, ok := wasmbin.DataEntries(p)
	if !ok {
		return nil, false
	}
	segs := make([]dataSegment, 0, len(entries))
	for _, e := range entries {
		if e.Passive {
			return nil, false
		}
		segs = append(segs, dataSegment{offset: e.Offset, data: e.Data})
	}
	return segs, true
}

// MergeDataSegments returns wasm with its data section rewritten into fewer
// segments that give the same initial memory, or wasm itself and false when
// the rewrite does not apply or would not help.
func MergeDataSegments(wasm []byte, minPages uint32) ([]byte, bool) {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return wasm, false
	}
	var data *wasmbin.Section
	for i, s := range secs {
		switch s.ID {
		case 12: // DataCount: memory.init and data.drop may name segments
			return wasm, false
		case 2: // imports: an imported memory may be shared; leave it be
			if wasmbin.ImportsMemory(wasm[s.Start:s.End]) {
				return wasm, false
			}
		case 11:
			data = &secs[i]
		}
	}
	if data == nil {
		return wasm, false
	}
	segs, ok := parseActiveData(wasm[data.Start:data.End])
	if !ok || len(segs) < mergeMinSegments {
		return wasm, false
	}
	start, end, total := uint64(1)<<32, uint64(0), uint64(0)
	for _, s := range segs {
		if uint64(s.offset)+uint64(len(s.data)) > uint64(minPages)*wasmbin.PageSize {
			return wasm, false // out of bounds, even empty: instantiation must fail as it would have
		}
		if len(s.data) == 0 {
			continue
		}
		start = min(start, uint64(s.offset))
		end = max(end, uint64(s.offset)+uint64(len(s.data)))
		total += uint64(len(s.data))
	}
	switch {
	case end <= start: // only empty segments
		start, end = 0, 0
	case end-start > MergeMaxImage || end-start > MergeMaxSparsity*total+MergeImageAllowed:
		return wasm, false // too sparse or too large to image
	}
	image := make([]byte, end-start)
	for _, s := range segs {
		if len(s.data) > 0 {
			copy(image[uint64(s.offset)-start:], s.data)
		}
	}
	merged := nonZeroRuns(image, mergeGap)
	for i := range merged {
		merged[i].offset += uint32(start)
	}
	if len(merged) >= len(segs) {
		return wasm, false
	}

	payload := encodeActiveData(merged)
	out := make([]byte, 0, len(wasm)-(data.End-data.Header)+len(payload)+6)
	out = append(out, wasm[:data.Header]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	out = append(out, payload...)
	out = append(out, wasm[data.End:]...)
	return out, true
}

// encodeActiveData encodes segs as a data section's payload: active
// segments for memory 0 at i32.const offsets, in order.
func encodeActiveData(segs []dataSegment) []byte {
	payload := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		payload = append(payload, 0x00, 0x41)
		payload = appendSleb32(payload, int32(s.offset))
		payload = append(payload, 0x0b)
		payload = binary.AppendUvarint(payload, uint64(len(s.data)))
		payload = append(payload, s.data...)
	}
	return payload
}

// nonZeroRuns returns the runs of non-zero bytes of image as segments,
// joining runs fewer than gap zero bytes apart.
func nonZeroRuns(image []byte, gap int) []dataSegment {
	var out []dataSegment
	i := 0
	for {
		for i < len(image) && image[i] == 0 {
			i++
		}
		if i == len(image) {
			return out
		}
		start, lastNonZero := i, i
		for i < len(image) && i-lastNonZero <= gap {
			if image[i] != 0 {
				lastNonZero = i
			}
			i++
		}
		out = append(out, dataSegment{offset: uint32(start), data: image[start : lastNonZero+1]})
		i = lastNonZero + 1
	}
}

// appendSleb32 appends v as a signed LEB128 number.
func appendSleb32(b []byte, v int32) []byte { return wasmbin.AppendSLEB(b, int64(v)) }
