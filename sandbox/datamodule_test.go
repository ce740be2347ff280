package sandbox

import "github.com/stint-run/stint/sandbox/internal/wasmtest"

// Helpers for the memory-image tests (memimage_test.go): modules made of
// data segments.

// moduleWithData is wasmtest.ModuleWithData of segs: a module with one
// memory of minPages, exported as "memory", and an active data segment
// for each of segs, in order.
func moduleWithData(minPages uint32, segs []dataSegment) []byte {
	ws := make([]wasmtest.Segment, len(segs))
	for i, s := range segs {
		ws[i] = wasmtest.Segment{Offset: s.offset, Data: s.data}
	}
	return wasmtest.ModuleWithData(minPages, ws...)
}
