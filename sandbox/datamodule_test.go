package sandbox

import (
	"encoding/binary"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Helpers for the memory-image tests (memimage_test.go): modules made of
// data segments.

// moduleWithData builds a module with one memory of minPages, exported as
// "memory", and an active data segment for each of segs, in order.
func moduleWithData(minPages uint32, segs []dataSegment) []byte {
	sec := func(id byte, payload []byte) []byte {
		return append(binary.AppendUvarint([]byte{id}, uint64(len(payload))), payload...)
	}
	m := append([]byte{}, wasmbin.Magic...)
	m = append(m, 1, 0, 0, 0)
	m = append(m, sec(5, binary.AppendUvarint([]byte{1, 0}, uint64(minPages)))...)
	m = append(m, sec(7, append([]byte{1, 6}, append([]byte("memory"), 2, 0)...))...)
	data := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		data = append(append(append(data, 0x00, 0x41), sleb(int64(int32(s.offset)))...), 0x0b)
		data = append(binary.AppendUvarint(data, uint64(len(s.data))), s.data...)
	}
	return append(m, sec(11, data)...)
}
