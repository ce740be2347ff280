package sandbox

import (
	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// What a compiled module holds in the runner's memory, estimated from its
// shape, so that the registry of compiled modules (Config.MaxModuleBytes)
// is bounded in bytes, not only in count (Config.MaxModules): a 4 MB
// module of 1,000,000 empty functions holds about 230 MB once compiled, a
// Go guest of 2.6 MB about 10 MB.

// Bytes a compiled module holds per item of its shape, measured with
// wazero v1.12.0 on amd64 (runtime.MemStats.HeapAlloc after GC, and RSS
// for machine code, which wazero keeps outside the Go heap), rounded up.
const (
	costBase        = 64 << 10 // the module's own structures
	costPerType     = 160      // 135 measured
	costPerFunc     = 256      // 81 of Go heap and about 150 of machine code for an empty function
	costPerImport   = 128
	costPerGlobal   = 64 // 51
	costPerElemByte = 48 // 39 per item, and an item takes at least one byte
	costPerDataSeg  = 64 // 54, plus its bytes
	costPerCodeByte = 4  // machine code and wazero's tables per byte of function bodies
	costPerByte     = 1  // wazero keeps the decoded module, which refers to its bytes
)

// moduleShape is what moduleCost reads of a module: its section counts.
type moduleShape struct {
	size                           int
	types, funcs, imports, globals uint64
	elemBytes                      uint64 // the element section's size: at least one byte per item
	dataSegs, dataBytes            uint64
	codeBytes                      uint64
}

// readShape reads the counts of wasm's sections. It reads only each
// section's leading count, so it costs a few microseconds whatever the
// module; a malformed module (which wazero refuses) gives what it read.
func readShape(wasm []byte) moduleShape {
	s := moduleShape{size: len(wasm)}
	secs, _ := wasmbin.Sections(wasm)
	for _, sec := range secs {
		payload := wasm[sec.Start:sec.End]
		n32, _, err := wasmbin.U32(payload)
		if err != nil {
			n32 = 0
		}
		n := uint64(n32)
		switch sec.ID {
		case wasmbin.SecType:
			s.types = n
		case wasmbin.SecImport:
			s.imports = n
			s.funcs += n // at most: imports of tables, memories and globals are refused
		case wasmbin.SecFunction:
			s.funcs += n
		case wasmbin.SecGlobal:
			s.globals = n
		case wasmbin.SecElement:
			s.elemBytes = uint64(len(payload))
		case wasmbin.SecData:
			s.dataSegs, s.dataBytes = n, uint64(len(payload))
		case wasmbin.SecCode:
			s.codeBytes = uint64(len(payload))
		}
	}
	return s
}

// cost is the estimate, in bytes, of what the module holds once compiled,
// besides its memory image.
func (s moduleShape) cost() int64 {
	c := uint64(costBase) + uint64(s.size)*costPerByte +
		s.types*costPerType + s.funcs*costPerFunc + s.imports*costPerImport +
		s.globals*costPerGlobal + s.elemBytes*costPerElemByte +
		s.dataSegs*costPerDataSeg + s.dataBytes + s.codeBytes*costPerCodeByte
	return int64(min(c, 1<<62))
}

// moduleCost estimates what a compiled module holds in memory: what
// wazero keeps of wasm (the bytes it compiled) and its memory image.
func moduleCost(wasm []byte, image *memory.Image) int64 {
	c := readShape(wasm).cost()
	if image != nil {
		c += int64(image.Size)
	}
	return c
}
