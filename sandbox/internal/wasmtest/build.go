package wasmtest

import (
	"bytes"
	"encoding/binary"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// LEB is v as an unsigned LEB128 number.
func LEB(v uint64) []byte { return binary.AppendUvarint(nil, v) }

// SLEB is v as a signed LEB128 number.
func SLEB(v int64) []byte { return wasmbin.AppendSLEB(nil, v) }

// Cat concatenates parts.
func Cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Vec is a vector: its count, then its items.
func Vec(items ...[]byte) []byte { return Cat(LEB(uint64(len(items))), Cat(items...)) }

// Sec is a section with its header.
func Sec(id byte, payload ...[]byte) []byte {
	p := Cat(payload...)
	return Cat([]byte{id}, LEB(uint64(len(p))), p)
}

// Str is a name.
func Str(s string) []byte { return Cat(LEB(uint64(len(s))), []byte(s)) }

// Module is the header and the sections.
func Module(secs ...[]byte) []byte { return Cat([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, Cat(secs...)) }

// FBody is a function body: no locals, then code (which must end with end).
func FBody(code ...byte) []byte { return FBodyLocals(nil, code...) }

// FBodyLocals is a function body with local groups (count, type).
func FBodyLocals(locals [][2]uint64, code ...byte) []byte {
	var groups [][]byte
	for _, l := range locals {
		groups = append(groups, Cat(LEB(l[0]), []byte{byte(l[1])}))
	}
	b := Cat(Vec(groups...), code)
	return Cat(LEB(uint64(len(b))), b)
}

// FuncType is a function type.
func FuncType(params, results []byte) []byte {
	return Cat([]byte{0x60}, LEB(uint64(len(params))), params, LEB(uint64(len(results))), results)
}

// Opcodes and section ids the modules below use (wasmbin's).
const (
	opBlock, opEnd, opBrTable, opI32Const, opMiscPrefix = 0x02, 0x0b, 0x0e, 0x41, 0xfc
	secMemory, secData, secDataCount                    = 5, 11, 12
)

// BrTableBomb is a command (Command) whose function holds a br_table of n
// targets, all to label 0.
func BrTableBomb(n int) []byte {
	code := []byte{opBlock, 0x40, opI32Const, 0, opBrTable}
	code = append(code, LEB(uint64(n))...)
	code = append(code, make([]byte, n+1)...)
	return Command(append(code, opEnd, opEnd), nil, nil)
}

// NestedBomb is a command (Command) whose function holds n nested blocks.
func NestedBomb(n int) []byte {
	code := bytes.Repeat([]byte{opBlock, 0x40}, n)
	code = append(code, bytes.Repeat([]byte{opEnd}, n+1)...)
	return Command(code, nil, nil)
}

// PassiveDataModule has one memory of 2 pages, exported as "memory"; an
// active data segment past its first page, a passive segment ("XYZ") and
// another active segment at 9, with a DataCount section; its _start does
// memory.init of the passive segment at 50, then data.drop of segment 0
// (active: already dropped, a no-op). The memory images' tests (package
// sandbox's and internal/memory's) run it.
func PassiveDataModule() []byte {
	code := FBody(opI32Const, 50, opI32Const, 0, opI32Const, 3, opMiscPrefix, 8, 1, 0, opMiscPrefix, 9, 0, opEnd)
	data := Vec(
		Cat([]byte{0, opI32Const}, SLEB(65536+5), []byte{opEnd}, LEB(4), []byte{1, 2, 3, 4}),
		Cat([]byte{1}, LEB(3), []byte("XYZ")),
		Cat([]byte{0, opI32Const}, SLEB(9), []byte{opEnd}, LEB(2), []byte{8, 9}),
	)
	return Module(
		Sec(secType, Vec(FuncType(nil, nil))),
		Sec(secFunction, Vec(LEB(0))),
		Sec(secMemory, Vec([]byte{0, 2})),
		Sec(secExport, Vec(Cat(Str("_start"), []byte{0, 0}), Cat(Str("memory"), []byte{2, 0}))),
		Sec(secDataCount, LEB(3)),
		Sec(secCode, Vec(code)),
		Sec(secData, data),
	)
}

// Segment is an active data segment of memory 0: its offset and bytes.
type Segment struct {
	Offset uint32
	Data   []byte
}

// ModuleWithData is a module with one memory of minPages, exported as
// "memory", and an active data segment for each of segs, in order.
func ModuleWithData(minPages uint32, segs ...Segment) []byte {
	var items [][]byte
	for _, s := range segs {
		items = append(items, Cat([]byte{0, opI32Const}, SLEB(int64(int32(s.Offset))), []byte{opEnd}, LEB(uint64(len(s.Data))), s.Data))
	}
	return Module(
		Sec(secMemory, Vec(Cat([]byte{0}, LEB(uint64(minPages))))),
		Sec(secExport, Vec(Cat(Str("memory"), []byte{2, 0}))),
		Sec(secData, Vec(items...)),
	)
}
