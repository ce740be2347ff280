package resume

import (
	"encoding/binary"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// A small decoder: LEB128 numbers, names, block types, constant
// expressions and one instruction at a time, never reading past its input.

// reader is wasmbin's Reader with resume's own reads.
type reader struct{ wasmbin.Reader }

func (r *reader) skipS32() error {
	_, err := r.S32()
	return err
}

// name skips a length-prefixed name.
func (r *reader) name() error {
	n, err := r.U32()
	if err != nil {
		return err
	}
	_, err = r.Bytes(uint64(n))
	return err
}

// constExpr appends the constant expression at r to out, a ref.func's
// function moved by shift.
func (r *reader) constExpr(out []byte, shift func(uint32) uint32) ([]byte, error) {
	from := r.Pos
	for {
		op, err := r.Byte()
		if err != nil {
			return nil, err
		}
		switch op {
		case wasmbin.OpEnd:
			return append(out, r.B[from:r.Pos]...), nil
		case wasmbin.OpI32Const:
			err = r.skipS32()
		case wasmbin.OpI64Const:
			err = r.S64()
		case wasmbin.OpF32Const:
			_, err = r.Bytes(4)
		case wasmbin.OpF64Const:
			_, err = r.Bytes(8)
		case wasmbin.OpGlobalGet:
			_, err = r.U32()
		case wasmbin.OpRefNull:
			_, err = r.Byte()
		case wasmbin.OpRefFunc:
			at := r.Pos
			var f uint32
			if f, err = r.U32(); err == nil {
				out = append(out, r.B[from:at]...)
				out = binary.AppendUvarint(out, uint64(shift(f)))
				from = r.Pos
			}
		case wasmbin.OpVecPrefix:
			_, err = r.Bytes(17)
		default:
			return nil, fmt.Errorf("instruction 0x%02x in a constant expression", op)
		}
		if err != nil {
			return nil, err
		}
	}
}

// instr is one decoded instruction: its opcode (sub for the 0xFC
// prefix), where its immediates start and where it ends.
type instr struct {
	op       byte
	sub      uint32
	pos, imm int
	end      int
}

// next decodes the instruction at r (which it moves past it). It reads
// every immediate but the ones the caller re-reads (indices, labels,
// block types) only to skip them.
func (r *reader) next() (instr, error) {
	in := instr{pos: r.Pos}
	op, err := r.Byte()
	if err != nil {
		return in, err
	}
	in.op = op
	kind := wasmbin.OpImm[op]
	if op == wasmbin.OpMiscPrefix {
		if in.sub, err = r.U32(); err != nil {
			return in, err
		}
		if in.sub >= uint32(len(wasmbin.MiscImm)) {
			return in, fmt.Errorf("unknown instruction 0xfc %d", in.sub)
		}
		kind = wasmbin.MiscImm[in.sub]
	}
	in.imm = r.Pos
	switch kind {
	case wasmbin.ImmInvalid:
		return in, fmt.Errorf("unknown instruction 0x%02x", op)
	case wasmbin.ImmVec:
		return in, errSIMD
	case wasmbin.ImmNone:
	case wasmbin.ImmBlock:
		_, err = r.S33()
	case wasmbin.ImmIndex, wasmbin.ImmBranch, wasmbin.ImmFunc, wasmbin.ImmLocal, wasmbin.ImmGlobal:
		_, err = r.U32()
	case wasmbin.ImmIndex2, wasmbin.ImmMemArg:
		if _, err = r.U32(); err == nil {
			_, err = r.U32()
		}
	case wasmbin.ImmZeroByte:
		_, err = r.Byte()
	case wasmbin.ImmBrTable:
		var n uint32
		if n, err = r.U32(); err == nil {
			for i := uint32(0); i <= n && err == nil; i++ {
				_, err = r.U32()
			}
		}
	case wasmbin.ImmI32:
		err = r.skipS32()
	case wasmbin.ImmI64:
		err = r.S64()
	case wasmbin.ImmF32:
		_, err = r.Bytes(4)
	case wasmbin.ImmF64:
		_, err = r.Bytes(8)
	case wasmbin.ImmSelectT:
		var n uint32
		if n, err = r.U32(); err == nil {
			_, err = r.Bytes(uint64(n))
		}
	case wasmbin.ImmRefNull:
		_, err = r.Byte()
	default:
		return in, fmt.Errorf("instruction 0x%02x: unexpected immediate", op)
	}
	in.end = r.Pos
	return in, err
}

// str reads a length-prefixed name.
func (r *reader) str() (string, error) {
	n, err := r.U32()
	if err != nil {
		return "", err
	}
	b, err := r.Bytes(uint64(n))
	return string(b), err
}
