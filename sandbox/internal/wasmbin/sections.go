package wasmbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic starts every module.
var Magic = []byte{0x00, 0x61, 0x73, 0x6d}

// Section ids.
const (
	SecCustom    = 0
	SecType      = 1
	SecImport    = 2
	SecFunction  = 3
	SecTable     = 4
	SecMemory    = 5
	SecGlobal    = 6
	SecExport    = 7
	SecStart     = 8
	SecElement   = 9
	SecCode      = 10
	SecData      = 11
	SecDataCount = 12
)

// Section is one section of a module: its id and the payload's bounds.
type Section struct {
	ID         byte
	Start, End int // payload, within the module's bytes
	Header     int // where the section (its id byte) starts
}

// Sections splits a module into its sections, or returns false if it is
// malformed (wazero reports that properly when it compiles).
func Sections(wasm []byte) ([]Section, bool) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], Magic) {
		return nil, false
	}
	var out []Section
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n, err := U32(wasm[i+1:])
		if err != nil {
			return nil, false
		}
		start := i + 1 + n
		end := start + int(size)
		if uint64(size) > uint64(len(wasm)) || end > len(wasm) {
			return nil, false
		}
		out = append(out, Section{ID: id, Start: start, End: end, Header: i})
		i = end
	}
	return out, true
}

// DeclaredMemoryMin reads the minimum of the module's own memory (section
// 5) without compiling it, so a module that needs more than a task's
// limit gets a clear outcome instead of a failed allocation. Modules with
// no memory return 0. Malformed input returns an error; full validation
// is wazero's.
func DeclaredMemoryMin(wasm []byte) (uint32, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], Magic) {
		return 0, errors.New("not a WebAssembly module (bad magic number)")
	}
	p := wasm[8:]
	for len(p) > 0 {
		id := p[0]
		size, n, err := U32(p[1:])
		if err != nil {
			return 0, fmt.Errorf("malformed section header: %w", err)
		}
		p = p[1+n:]
		if uint64(len(p)) < uint64(size) {
			return 0, errors.New("malformed module: section runs past the end (truncated file?)")
		}
		if id == SecMemory {
			sec := p[:size]
			count, n, err := U32(sec)
			if err != nil || count == 0 {
				return 0, nil
			}
			sec = sec[n:]
			if len(sec) < 1 {
				return 0, errors.New("malformed memory section")
			}
			minPages, _, err := U32(sec[1:])
			if err != nil {
				return 0, errors.New("malformed memory section")
			}
			return minPages, nil
		}
		p = p[size:]
	}
	return 0, nil
}

// ImportsMemory reports whether an import section's payload imports a
// memory (or is malformed, to be safe).
func ImportsMemory(p []byte) bool {
	count, n, err := U32(p)
	if err != nil {
		return true
	}
	p = p[n:]
	for range count {
		for range 2 { // module and field names
			l, n, err := U32(p)
			if err != nil || uint64(l) > uint64(len(p)-n) {
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
			_, n, err := U32(p)
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
		_, n, err := U32(p)
		if err != nil {
			return nil, false
		}
		p = p[n:]
	}
	return p, true
}

// PageSize is the size of a page of linear memory.
const PageSize = 65536

// AppendSection appends a section: its id, its payload's size and the
// payload.
func AppendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	return append(out, payload...)
}

// AppendName appends a length-prefixed name.
func AppendName(out []byte, s string) []byte {
	out = binary.AppendUvarint(out, uint64(len(s)))
	return append(out, s...)
}
