package rewrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// A decoder for the parts of a WebAssembly module Stint checks and rewrites
// before wazero sees them: LEB128 numbers, function bodies (every
// instruction of the features wazero v1.12.0 enables by default: MVP,
// sign extension, saturating truncation, bulk memory, reference types,
// multi-value and SIMD) and constant expressions.
//
// It mirrors wazero's own decoder byte for byte: the same LEB128 rules
// (wazero's leb128 package), the same immediates, and a SIMD opcode read as
// one byte, as wazero reads it. Anything wazero accepts is therefore cut
// into the same instructions here, so that a check inserted at an
// instruction boundary is at one for wazero too. Anything outside those
// features (threads, tail calls, exceptions, typed function references,
// GC, extended constant expressions) is refused: wazero's defaults refuse
// it as well, and a byte this decoder does not understand is never let
// through. It never panics and never reads past its input.

// errEOF: the input ended inside an item.
var errEOF = wasmbin.ErrEOF

// wreader reads a byte slice from pos.
type wreader struct {
	b   []byte
	pos int
}

func (r *wreader) eof() bool { return r.pos >= len(r.b) }

func (r *wreader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errEOF
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

// bytes returns the next n bytes.
func (r *wreader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, errEOF
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

// rest is what is left to read.
func (r *wreader) rest() []byte { return r.b[min(r.pos, len(r.b)):] }

// u32 reads an unsigned LEB128 number of at most 32 bits (wasmbin.U32).
func (r *wreader) u32() (uint32, error) {
	v, n, err := wasmbin.U32(r.rest())
	r.pos += n
	return v, err
}

// s32 reads a signed LEB128 number of at most 32 bits (wasmbin.S32).
func (r *wreader) s32() (int32, error) {
	v, n, err := wasmbin.S32(r.rest())
	r.pos += n
	return v, err
}

// s33 reads a signed LEB128 number of at most 33 bits, as a block type is
// encoded (wasmbin.S33).
func (r *wreader) s33() (int64, error) {
	v, n, err := wasmbin.S33(r.rest())
	r.pos += n
	return v, err
}

// s64 reads a signed LEB128 number of at most 64 bits (wasmbin.S64).
func (r *wreader) s64() error {
	n, err := wasmbin.S64(r.rest())
	r.pos += n
	return err
}

// name reads a length-prefixed UTF-8 string.
func (r *wreader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(uint64(n))
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", errors.New("name is not valid UTF-8")
	}
	return string(b), nil
}

// constExpr reads a constant expression up to its end, checking that a
// global.get names one of the module's own globals (never the global the
// rewrite adds after them) and a ref.func one of its functions. With out
// non-nil, it appends the expression to it, function indices moved up
// past the added import, and returns it.
func (r *wreader) constExpr(globals, funcs, importedFuncs uint32, out []byte) ([]byte, error) {
	from := r.pos
	for {
		op, err := r.byte()
		if err != nil {
			return nil, err
		}
		switch op {
		case opEnd:
			if out != nil {
				out = append(out, r.b[from:r.pos]...)
			}
			return out, nil
		case opI32Const:
			_, err = r.s32()
		case opI64Const:
			err = r.s64()
		case opF32Const:
			_, err = r.bytes(4)
		case opF64Const:
			_, err = r.bytes(8)
		case opGlobalGet:
			var g uint32
			if g, err = r.u32(); err == nil && g >= globals {
				err = fmt.Errorf("global.get %d in a constant expression; the module has %d globals", g, globals)
			}
		case opRefNull:
			var t byte
			if t, err = r.byte(); err == nil && !isRefType(t) {
				err = fmt.Errorf("ref.null of unknown type 0x%02x", t)
			}
		case opRefFunc:
			var f uint32
			at := r.pos
			if f, err = r.u32(); err == nil && f >= funcs {
				err = fmt.Errorf("ref.func %d in a constant expression; the module has %d functions", f, funcs)
			}
			if err == nil && out != nil && f >= importedFuncs {
				out = append(out, r.b[from:at]...)
				out = binary.AppendUvarint(out, uint64(f)+addedFuncs)
				from = r.pos
			}
		case opVecPrefix:
			var sub byte
			if sub, err = r.byte(); err == nil {
				if sub != 0x0c {
					err = fmt.Errorf("SIMD instruction %d in a constant expression", sub)
				} else {
					_, err = r.bytes(16)
				}
			}
		default:
			return nil, fmt.Errorf("instruction 0x%02x in a constant expression", op)
		}
		if err != nil {
			return nil, err
		}
	}
}
