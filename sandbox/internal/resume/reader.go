package resume

import (
	"encoding/binary"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// A small decoder: LEB128 numbers, names, block types, constant
// expressions and one instruction at a time, never reading past its input.

type reader struct {
	b   []byte
	pos int
}

func (r *reader) eof() bool { return r.pos >= len(r.b) }

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, wasmbin.ErrEOF
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, wasmbin.ErrEOF
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

func (r *reader) u32() (uint32, error) {
	v, n, err := wasmbin.U32(r.b[min(r.pos, len(r.b)):])
	r.pos += n
	return v, err
}

func (r *reader) s33() (int64, error) {
	v, n, err := wasmbin.S33(r.b[min(r.pos, len(r.b)):])
	r.pos += n
	return v, err
}

func (r *reader) skipS32() error {
	_, n, err := wasmbin.S32(r.b[min(r.pos, len(r.b)):])
	r.pos += n
	return err
}

func (r *reader) skipS64() error {
	n, err := wasmbin.S64(r.b[min(r.pos, len(r.b)):])
	r.pos += n
	return err
}

// name skips a length-prefixed name.
func (r *reader) name() error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	_, err = r.bytes(uint64(n))
	return err
}

// constExpr appends the constant expression at r to out, a ref.func's
// function moved by shift.
func (r *reader) constExpr(out []byte, shift func(uint32) uint32) ([]byte, error) {
	from := r.pos
	for {
		op, err := r.byte()
		if err != nil {
			return nil, err
		}
		switch op {
		case wasmbin.OpEnd:
			return append(out, r.b[from:r.pos]...), nil
		case wasmbin.OpI32Const:
			err = r.skipS32()
		case wasmbin.OpI64Const:
			err = r.skipS64()
		case wasmbin.OpF32Const:
			_, err = r.bytes(4)
		case wasmbin.OpF64Const:
			_, err = r.bytes(8)
		case wasmbin.OpGlobalGet:
			_, err = r.u32()
		case wasmbin.OpRefNull:
			_, err = r.byte()
		case wasmbin.OpRefFunc:
			at := r.pos
			var f uint32
			if f, err = r.u32(); err == nil {
				out = append(out, r.b[from:at]...)
				out = binary.AppendUvarint(out, uint64(shift(f)))
				from = r.pos
			}
		case wasmbin.OpVecPrefix:
			_, err = r.bytes(17)
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
	in := instr{pos: r.pos}
	op, err := r.byte()
	if err != nil {
		return in, err
	}
	in.op = op
	kind := wasmbin.OpImm[op]
	if op == wasmbin.OpMiscPrefix {
		if in.sub, err = r.u32(); err != nil {
			return in, err
		}
		if in.sub >= uint32(len(wasmbin.MiscImm)) {
			return in, fmt.Errorf("unknown instruction 0xfc %d", in.sub)
		}
		kind = wasmbin.MiscImm[in.sub]
	}
	in.imm = r.pos
	switch kind {
	case wasmbin.ImmInvalid:
		return in, fmt.Errorf("unknown instruction 0x%02x", op)
	case wasmbin.ImmVec:
		return in, errSIMD
	case wasmbin.ImmNone:
	case wasmbin.ImmBlock:
		_, err = r.s33()
	case wasmbin.ImmIndex, wasmbin.ImmBranch, wasmbin.ImmFunc, wasmbin.ImmLocal, wasmbin.ImmGlobal:
		_, err = r.u32()
	case wasmbin.ImmIndex2, wasmbin.ImmMemArg:
		if _, err = r.u32(); err == nil {
			_, err = r.u32()
		}
	case wasmbin.ImmZeroByte:
		_, err = r.byte()
	case wasmbin.ImmBrTable:
		var n uint32
		if n, err = r.u32(); err == nil {
			for i := uint32(0); i <= n && err == nil; i++ {
				_, err = r.u32()
			}
		}
	case wasmbin.ImmI32:
		err = r.skipS32()
	case wasmbin.ImmI64:
		err = r.skipS64()
	case wasmbin.ImmF32:
		_, err = r.bytes(4)
	case wasmbin.ImmF64:
		_, err = r.bytes(8)
	case wasmbin.ImmSelectT:
		var n uint32
		if n, err = r.u32(); err == nil {
			_, err = r.bytes(uint64(n))
		}
	case wasmbin.ImmRefNull:
		_, err = r.byte()
	default:
		return in, fmt.Errorf("instruction 0x%02x: unexpected immediate", op)
	}
	in.end = r.pos
	return in, err
}

// str reads a length-prefixed name.
func (r *reader) str() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(uint64(n))
	return string(b), err
}
