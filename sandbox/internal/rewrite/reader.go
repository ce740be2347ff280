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

// wreader is wasmbin's Reader with the rewrite's own reads.
type wreader struct{ wasmbin.Reader }

// name reads a length-prefixed UTF-8 string.
func (r *wreader) name() (string, error) {
	n, err := r.U32()
	if err != nil {
		return "", err
	}
	b, err := r.Bytes(uint64(n))
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
	from := r.Pos
	for {
		op, err := r.Byte()
		if err != nil {
			return nil, err
		}
		switch op {
		case opEnd:
			if out != nil {
				out = append(out, r.B[from:r.Pos]...)
			}
			return out, nil
		case opI32Const:
			_, err = r.S32()
		case opI64Const:
			err = r.S64()
		case opF32Const:
			_, err = r.Bytes(4)
		case opF64Const:
			_, err = r.Bytes(8)
		case opGlobalGet:
			var g uint32
			if g, err = r.U32(); err == nil && g >= globals {
				err = fmt.Errorf("global.get %d in a constant expression; the module has %d globals", g, globals)
			}
		case opRefNull:
			var t byte
			if t, err = r.Byte(); err == nil && !isRefType(t) {
				err = fmt.Errorf("ref.null of unknown type 0x%02x", t)
			}
		case opRefFunc:
			var f uint32
			at := r.Pos
			if f, err = r.U32(); err == nil && f >= funcs {
				err = fmt.Errorf("ref.func %d in a constant expression; the module has %d functions", f, funcs)
			}
			if err == nil && out != nil && f >= importedFuncs {
				out = append(out, r.B[from:at]...)
				out = binary.AppendUvarint(out, uint64(f)+addedFuncs)
				from = r.Pos
			}
		case opVecPrefix:
			var sub byte
			if sub, err = r.Byte(); err == nil {
				if sub != 0x0c {
					err = fmt.Errorf("SIMD instruction %d in a constant expression", sub)
				} else {
					_, err = r.Bytes(16)
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
