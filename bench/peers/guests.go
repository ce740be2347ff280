package main

import (
	"encoding/binary"
	"fmt"
)

// The guests beyond noop and hello, run by the WebAssembly engines that
// can run them (engineSpec.Guests): Stint, bare wazero and wasmtime-go.
//
//   - primes: the Go wasm-examples/primes guest counting the primes below
//     primesN (it imports the stint host module: the peers get stubs, see
//     stubs.go; with EVERY over N it never checkpoints).
//   - data8m: a generated module (data8mGuest) with 8 MiB of initialized
//     data, like the sandbox's imageGuest: a C or Rust program's tables
//     and strings. Its _start checks one byte in every 64 KiB of the data,
//     grows its memory by 2 pages, and writes over every byte it checked,
//     so that a reused instance memory that was not reset fails the next
//     task.

// primesInput is the primes guest's stdin: N, then a checkpoint interval
// larger than N (no checkpoint is ever saved).
const primesInput = "10000 1000000\n"

// primesWant is the primes guest's stdout for primesInput.
const primesWant = "primes below 10000: 1229\n"

// data8mSize is the data8m guest's initialized data, in bytes.
const data8mSize = 8 << 20

// wasmPage is a WebAssembly page.
const wasmPage = 64 << 10

// data8mByte is byte i of the data8m guest's data (never zero).
func data8mByte(i int) byte { return byte(1 + i*7%251) }

// data8mGuest builds the data8m module: memory of data8mSize/wasmPage+1
// pages (64 more at most), one active data segment of data8mSize bytes at
// offset 0, and a _start as described above (a trap if a check fails).
func data8mGuest() []byte {
	minPages := data8mSize/wasmPage + 1
	var code []byte
	i32 := func(v int) []byte { return append([]byte{0x41}, sleb(int64(v))...) }
	trapIfNe := []byte{0x47, 0x04, 0x40, 0x00, 0x0b} // i32.ne; if; unreachable; end
	var probes []int
	for p := 0; p < data8mSize; p += wasmPage {
		probes = append(probes, p+p/wasmPage%wasmPage) // a different offset in each page
	}
	for _, p := range probes {
		code = append(append(append(append(code, i32(p)...), 0x2d, 0, 0), i32(int(data8mByte(p)))...), trapIfNe...) // i32.load8_u
	}
	code = append(append(append(append(code, i32(2)...), 0x40, 0), i32(minPages)...), trapIfNe...) // memory.grow 2 == old size
	for _, p := range append(probes, minPages*wasmPage) {
		code = append(append(append(code, i32(p)...), i32(0)...), 0x3a, 0, 0) // i32.store8 0
	}
	code = append(code, 0x0b)
	body := append(uleb(0), code...) // no locals
	data := make([]byte, data8mSize)
	for i := range data {
		data[i] = data8mByte(i)
	}
	mod := []byte("\x00asm\x01\x00\x00\x00")
	mod = appendSection(mod, 1, vec([]byte{0x60, 0, 0}))                                                 // type () -> ()
	mod = appendSection(mod, 3, vec([]byte{0}))                                                          // one function of type 0
	mod = appendSection(mod, 5, vec(append(append([]byte{1}, uleb(minPages)...), uleb(minPages+64)...))) // memory min max
	mod = appendSection(mod, 7, vec(append(name("_start"), 0, 0), append(name("memory"), 2, 0)))
	mod = appendSection(mod, 10, vec(append(uleb(len(body)), body...)))
	mod = appendSection(mod, 11, vec(append(append([]byte{0, 0x41, 0, 0x0b}, uleb(len(data))...), data...)))
	return mod
}

func uleb(v int) []byte { return binary.AppendUvarint(nil, uint64(v)) }

func sleb(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func name(s string) []byte { return append(uleb(len(s)), s...) }

// vec is a vector of already encoded items.
func vec(items ...[]byte) []byte {
	out := uleb(len(items))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func appendSection(mod []byte, id byte, payload []byte) []byte {
	return append(append(append(mod, id), uleb(len(payload))...), payload...)
}

// inputFor is the stdin of a task of guest.
func (g *guests) inputFor(guest string) []byte {
	switch guest {
	case "primes":
		return []byte(primesInput)
	case "data8m":
		return nil
	}
	return g.input
}

// module returns the guest's bytes.
func (g *guests) module(guest string) ([]byte, error) {
	switch guest {
	case "noop":
		return g.noop, nil
	case "hello":
		return g.hello, nil
	case "primes":
		return g.primes, nil
	case "data8m":
		return g.data8m, nil
	}
	return nil, fmt.Errorf("unknown guest %q", guest)
}
