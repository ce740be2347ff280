package memory

import (
	"bytes"
	"errors"
)

// The decoding the image code needs (BuildImage): copies of package
// sandbox's own (wasmparse.go, datasegments.go), kept here until the two
// are unified in one decoder.

var wasmMagic = []byte{0x00, 0x61, 0x73, 0x6d}

var errBadLEB = errors.New("bad LEB128 number")

// uleb reads an unsigned LEB128 number of at most 64 bits.
func uleb(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errBadLEB
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
