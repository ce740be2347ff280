//go:build wasip1

package main

import (
	"bytes"
	"unsafe"
)

//go:wasmimport env kv_get
func kvGet(keyPtr unsafe.Pointer, keyLen uint32, bufPtr unsafe.Pointer, bufLen uint32) int32

//go:wasmimport stint_plugin config_get
func configGet(keyPtr unsafe.Pointer, keyLen uint32, bufPtr unsafe.Pointer, bufLen uint32) int32

var (
	input  []byte // the current call's input, written by the host into what alloc returned
	output []byte // the last call's output, kept alive until the next call
	calls  int    // calls this instance served: its warm state
	buf    [4096]byte
)

//go:wasmexport alloc
func alloc(n uint32) unsafe.Pointer {
	if uint32(cap(input)) < n {
		input = make([]byte, n)
	}
	input = input[:n]
	return unsafe.Pointer(unsafe.SliceData(input))
}

// in returns the input the host wrote at ptr (always input's buffer).
func in(n uint32) []byte { return input[:n] }

// out keeps b alive and packs where it is.
func out(b []byte) uint64 {
	output = b
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

func get(f func(unsafe.Pointer, uint32, unsafe.Pointer, uint32) int32, key []byte) ([]byte, bool) {
	if len(key) == 0 {
		return nil, false
	}
	n := f(unsafe.Pointer(unsafe.SliceData(key)), uint32(len(key)), unsafe.Pointer(&buf[0]), uint32(len(buf)))
	if n < 0 || int(n) > len(buf) {
		return nil, false
	}
	return bytes.Clone(buf[:n]), true
}

//go:wasmexport greet
func greet(_ unsafe.Pointer, n uint32) uint64 {
	calls++
	greeting, ok := get(configGet, []byte("greeting"))
	if !ok {
		greeting = []byte("hello")
	}
	b := append(greeting, ", "...)
	b = append(b, in(n)...)
	b = append(b, " (call "...)
	b = appendInt(b, calls)
	return out(append(b, ')'))
}

//go:wasmexport lookup
func lookup(_ unsafe.Pointer, n uint32) uint64 {
	key := bytes.Clone(in(n))
	v, ok := get(kvGet, key)
	if !ok {
		return out(append([]byte("no such key: "), key...))
	}
	return out(v)
}

//go:wasmexport upper
func upper(_ unsafe.Pointer, n uint32) uint64 {
	return out(bytes.ToUpper(in(n)))
}

//go:wasmexport noop
func noop() {}

var sink int

//go:wasmexport spin
func spin() {
	for i := 0; ; i++ {
		sink += i
	}
}

func appendInt(b []byte, v int) []byte {
	if v >= 10 {
		b = appendInt(b, v/10)
	}
	return append(b, byte('0'+v%10))
}

func main() {}
