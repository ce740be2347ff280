package sandbox

import (
	"bytes"
	"encoding/binary"
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
	// mergeMaxImage caps the memory image built to merge (from the first
	// byte a segment writes to the last); sparser or larger data is left
	// as it is. The image is also at most mergeMaxSparsity times the bytes
	// the segments hold (plus a MiB), so that a small module cannot make
	// the runner allocate much to compile it.
	mergeMaxImage     = 64 << 20
	mergeMaxSparsity  = 16
	mergeImageAllowed = 1 << 20
)

// section is one section of a module: its id and the payload's bounds.
type section struct {
	id         byte
	start, end int // payload, within the module's bytes
	header     int // where the section (its id byte) starts
}

// sections splits a module into its sections, or returns false if it is
// malformed (wazero reports that properly when it compiles).
func sections(wasm []byte) ([]section, bool) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], wasmMagic) {
		return nil, false
	}
	var out []section
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n, err := uleb(wasm[i+1:])
		if err != nil {
			return nil, false
		}
		start := i + 1 + n
		end := start + int(size)
		if size > uint64(len(wasm)) || end > len(wasm) {
			return nil, false
		}
		out = append(out, section{id: id, start: start, end: end, header: i})
		i = end
	}
	return out, true
}

// dataSegment is one active segment: its offset in memory 0 and its bytes.
type dataSegment struct {
	offset uint32
	data   []byte
}

// parseActiveData reads a data section made only of active segments for
// memory 0 at i32.const offsets, or returns false.
func parseActiveData(p []byte) ([]dataSegment, bool) {
	count, n, err := uleb(p)
	if err != nil || count > uint64(len(p)) {
		return nil, false
	}
	p = p[n:]
	segs := make([]dataSegment, 0, count)
	for range count {
		flag, n, err := uleb(p)
		if err != nil || flag != 0 || len(p) < n+1 || p[n] != 0x41 { // active, memory 0, i32.const
			return nil, false
		}
		p = p[n+1:]
		off, n, err := sleb32(p)
		if err != nil || len(p) < n+1 || p[n] != 0x0b { // end
			return nil, false
		}
		p = p[n+1:]
		size, n, err := uleb(p)
		if err != nil || size > uint64(len(p)-n) {
			return nil, false
		}
		segs = append(segs, dataSegment{offset: uint32(off), data: p[n : n+int(size)]})
		p = p[n+int(size):]
	}
	return segs, len(p) == 0
}

// mergeDataSegments returns wasm with its data section rewritten into fewer
// segments that give the same initial memory, or wasm itself and false when
// the rewrite does not apply or would not help.
func mergeDataSegments(wasm []byte, minPages uint32) ([]byte, bool) {
	secs, ok := sections(wasm)
	if !ok {
		return wasm, false
	}
	var data *section
	for i, s := range secs {
		switch s.id {
		case 12: // DataCount: memory.init and data.drop may name segments
			return wasm, false
		case 2: // imports: an imported memory may be shared; leave it be
			if importsMemory(wasm[s.start:s.end]) {
				return wasm, false
			}
		case 11:
			data = &secs[i]
		}
	}
	if data == nil {
		return wasm, false
	}
	segs, ok := parseActiveData(wasm[data.start:data.end])
	if !ok || len(segs) < mergeMinSegments {
		return wasm, false
	}
	start, end, total := uint64(1)<<32, uint64(0), uint64(0)
	for _, s := range segs {
		if uint64(s.offset)+uint64(len(s.data)) > uint64(minPages)*PageSize {
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
	case end-start > mergeMaxImage || end-start > mergeMaxSparsity*total+mergeImageAllowed:
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
	out := make([]byte, 0, len(wasm)-(data.end-data.header)+len(payload)+6)
	out = append(out, wasm[:data.header]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	out = append(out, payload...)
	out = append(out, wasm[data.end:]...)
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

// importsMemory reports whether an import section imports a memory (or is
// malformed, to be safe).
func importsMemory(p []byte) bool {
	count, n, err := uleb(p)
	if err != nil {
		return true
	}
	p = p[n:]
	for range count {
		for range 2 { // module and field names
			l, n, err := uleb(p)
			if err != nil || l > uint64(len(p)-n) {
				return true
			}
			p = p[n+int(l):]
		}
		if len(p) < 1 {
			return true
		}
		kind := p[0]
		p = p[1:]
		switch kind {
		case 0: // function: type index
			_, n, err := uleb(p)
			if err != nil {
				return true
			}
			p = p[n:]
		case 1: // table: reftype, limits
			if len(p) < 1 {
				return true
			}
			var ok bool
			if p, ok = skipLimits(p[1:]); !ok {
				return true
			}
		case 2: // memory
			return true
		case 3: // global: valtype, mutability
			if len(p) < 2 {
				return true
			}
			p = p[2:]
		default:
			return true
		}
	}
	return false
}

// skipLimits skips a limits encoding (flag, min, optional max).
func skipLimits(p []byte) ([]byte, bool) {
	if len(p) < 1 {
		return nil, false
	}
	flag := p[0]
	p = p[1:]
	fields := 1
	if flag&1 != 0 {
		fields = 2
	}
	for range fields {
		_, n, err := uleb(p)
		if err != nil {
			return nil, false
		}
		p = p[n:]
	}
	return p, true
}

// sleb32 reads a signed LEB128 number of at most 32 bits.
func sleb32(b []byte) (int32, int, error) {
	var v int64
	var shift uint
	for i := 0; i < len(b) && i < 5; i++ {
		v |= int64(b[i]&0x7f) << shift
		shift += 7
		if b[i]&0x80 == 0 {
			if shift < 64 && b[i]&0x40 != 0 {
				v |= -1 << shift
			}
			return int32(v), i + 1, nil
		}
	}
	return 0, 0, errBadLEB
}

// appendSleb32 appends v as a signed LEB128 number.
func appendSleb32(b []byte, v int32) []byte { return appendSleb64(b, int64(v)) }

// appendSleb64 appends v as a signed LEB128 (an i64.const's immediate).
func appendSleb64(b []byte, x int64) []byte {
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
