package sandbox

import "github.com/stint-run/stint/sandbox/internal/wasmbin"

// The decoding itself is sandbox/internal/wasmbin's; these forward to it
// under the names the memory-image code (memimage.go) and its tests use.

// declaredMemoryMin is wasmbin.DeclaredMemoryMin.
func declaredMemoryMin(wasm []byte) (uint32, error) { return wasmbin.DeclaredMemoryMin(wasm) }

// section is one section of a module: its id and the payload's bounds.
type section struct {
	id         byte
	start, end int // payload, within the module's bytes
	header     int // where the section (its id byte) starts
}

// sections splits a module into its sections (wasmbin.Sections), or
// returns false if it is malformed.
func sections(wasm []byte) ([]section, bool) {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return nil, false
	}
	out := make([]section, len(secs))
	for i, s := range secs {
		out[i] = section{id: s.ID, start: s.Start, end: s.End, header: s.Header}
	}
	return out, true
}
