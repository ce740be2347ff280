package rewrite

import (
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Import is one function a module imports, with its signature as the
// binary format's value type bytes (wazero's api.ValueType values).
type Import struct {
	Module, Name    string
	Params, Results []byte
	Memory          bool // an imported memory, not a function
}

// Imports reads, in one pass over the section headers and the type,
// import and memory sections (no function body is decoded), what decides
// whether Stint can run a module at all: the WebAssembly features it
// uses that Stint does not run (exception handling, threads' shared
// memory, 64-bit memory, the GC proposal's types), each refused with an
// *Error naming the feature, and the functions it imports, for the
// sandbox to check against its host modules. It runs before the
// module limits and the rewrite, so that such a module gets its real
// answer in milliseconds whatever its size. A module it cannot read is
// not refused here: Prepare's validation says what is malformed.
func Imports(wasm []byte) ([]Import, error) {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return nil, nil
	}
	var types [][2][]byte
	var out []Import
	for _, s := range secs {
		p := wreader{wasmbin.Reader{B: wasm[s.Start:s.End]}}
		switch s.ID {
		case 13:
			return nil, unsupported("exception handling (a tag section)")
		case secType:
			var err error
			if types, err = readSignatures(&p); err != nil {
				return nil, err
			}
		case secImport:
			n, err := p.U32()
			for i := uint32(0); i < n && err == nil; i++ {
				var imp Import
				var kind byte
				if imp.Module, err = p.name(); err != nil {
					break
				}
				if imp.Name, err = p.name(); err != nil {
					break
				}
				if kind, err = p.Byte(); err != nil {
					break
				}
				switch kind {
				case 0:
					var t uint32
					if t, err = p.U32(); err == nil && uint64(t) < uint64(len(types)) {
						imp.Params, imp.Results = types[t][0], types[t][1]
						out = append(out, imp)
					}
				case 1: // a table: its element type, then its limits
					if _, err = p.Byte(); err == nil {
						err = memoryFeatures(&p)
					}
				case 2:
					if err = memoryFeatures(&p); err == nil {
						imp.Memory = true
						out = append(out, imp)
					}
				case 3: // a global: its type and mutability
					_, err = p.Bytes(2)
				default:
					return nil, nil // malformed: Prepare says so
				}
			}
			if err != nil {
				return nil, err
			}
		case secMemory:
			n, err := p.U32()
			for i := uint32(0); i < n && err == nil; i++ {
				err = memoryFeatures(&p)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// unsupported is the error for a module that uses a WebAssembly feature
// Stint does not run.
func unsupported(feature string) error {
	return &Error{Message: fmt.Sprintf("module uses %s, a WebAssembly feature Stint does not run "+
		"(it runs WebAssembly 2.0: SIMD, bulk memory, reference types, multi-value; docs/sandbox.md)", feature)}
}

// memoryFeatures reads a memory's (or table's) limits, refusing the
// shared (threads) and 64-bit forms by name. A malformed one returns an
// error only for a feature; the rest is Prepare's to report.
func memoryFeatures(p *wreader) error {
	flag, err := p.Byte()
	if err != nil {
		return nil
	}
	switch {
	case flag&0x02 != 0:
		return unsupported("threads (a shared memory)")
	case flag&0x04 != 0:
		return unsupported("64-bit memory (memory64)")
	}
	if _, err := p.U32(); err == nil && flag&1 != 0 {
		_, _ = p.U32()
	}
	return nil
}

// readSignatures reads the type section's function types, refusing the GC
// proposal's types (recursive groups, subtypes, structs and arrays).
func readSignatures(p *wreader) ([][2][]byte, error) {
	n, err := p.U32()
	if err != nil || uint64(n) > uint64(len(p.B)) {
		return nil, nil
	}
	out := make([][2][]byte, 0, n)
	for range n {
		form, err := p.Byte()
		if err != nil {
			return out, nil
		}
		switch form {
		case 0x60:
		case 0x4e, 0x4f, 0x50, 0x5e, 0x5f:
			return nil, unsupported("garbage-collected types (the GC proposal's struct, array or recursive types)")
		default:
			return out, nil
		}
		var sig [2][]byte
		for j := range 2 {
			k, err := p.U32()
			if err != nil {
				return out, nil
			}
			if sig[j], err = p.Bytes(uint64(k)); err != nil {
				return out, nil
			}
		}
		out = append(out, sig)
	}
	return out, nil
}
