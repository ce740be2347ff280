package sandbox

import (
	"bytes"
	"errors"
	"fmt"
)

var wasmMagic = []byte{0x00, 0x61, 0x73, 0x6d}

var errBadLEB = errors.New("bad LEB128 number")

// declaredMemoryMin reads the minimum of the module's own memory (section 5)
// without compiling it, so a module that needs more than a task's limit gets
// a clear outcome instead of a failed allocation. Modules with no memory
// return 0. Malformed input returns an error; full validation is wazero's.
func declaredMemoryMin(wasm []byte) (uint32, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], wasmMagic) {
		return 0, errors.New("not a WebAssembly module (bad magic number)")
	}
	p := wasm[8:]
	for len(p) > 0 {
		id := p[0]
		size, n, err := uleb(p[1:])
		if err != nil {
			return 0, fmt.Errorf("malformed section header: %w", err)
		}
		p = p[1+n:]
		if uint64(len(p)) < size {
			return 0, errors.New("malformed module: section runs past the end (truncated file?)")
		}
		if id == 5 {
			sec := p[:size]
			count, n, err := uleb(sec)
			if err != nil || count == 0 {
				return 0, nil
			}
			sec = sec[n:]
			if len(sec) < 1 {
				return 0, errors.New("malformed memory section")
			}
			minPages, _, err := uleb(sec[1:])
			if err != nil {
				return 0, errors.New("malformed memory section")
			}
			if minPages > 1<<32-1 {
				return 0, errors.New("memory minimum overflows")
			}
			return uint32(minPages), nil
		}
		p = p[size:]
	}
	return 0, nil
}

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
