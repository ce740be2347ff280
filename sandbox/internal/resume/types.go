package resume

import (
	"errors"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// The operand stack's types, instruction by instruction: what the
// transform needs to know of the values on the stack where it saves them
// or makes up stand-ins for them (body.go).

const (
	i32 = wasmbin.TypeI32
	i64 = wasmbin.TypeI64
	f32 = wasmbin.TypeF32
	f64 = wasmbin.TypeF64
)

var errSIMD = errors.New("it uses SIMD instructions, which resumable code does not support yet")

// errUnderflow: the module is not valid WebAssembly.
var errUnderflow = errors.New("operand stack underflow (the module is not valid)")

// stack is the operand stack of one function.
type stack []byte

func (s *stack) push(t ...byte) { *s = append(*s, t...) }

// pop removes n values, never below base.
func (s *stack) pop(n, base int) error {
	if len(*s)-n < base {
		return errUnderflow
	}
	*s = (*s)[:len(*s)-n]
	return nil
}

// top is the type of the value on top (0 if none above base).
func (s stack) top(base int) byte {
	if len(s) <= base {
		return 0
	}
	return s[len(s)-1]
}

// numeric gives the operand and result types of the one-byte numeric
// instructions 0x45-0xc4.
func numeric(op byte) (pops []byte, push byte, ok bool) {
	un := func(t byte) []byte { return []byte{t} }
	bin := func(t byte) []byte { return []byte{t, t} }
	switch {
	case op == 0x45:
		return un(i32), i32, true
	case op <= 0x4f:
		return bin(i32), i32, true
	case op == 0x50:
		return un(i64), i32, true
	case op <= 0x5a:
		return bin(i64), i32, true
	case op <= 0x60:
		return bin(f32), i32, true
	case op <= 0x66:
		return bin(f64), i32, true
	case op <= 0x69:
		return un(i32), i32, true
	case op <= 0x78:
		return bin(i32), i32, true
	case op <= 0x7b:
		return un(i64), i64, true
	case op <= 0x8a:
		return bin(i64), i64, true
	case op <= 0x91:
		return un(f32), f32, true
	case op <= 0x98:
		return bin(f32), f32, true
	case op <= 0x9f:
		return un(f64), f64, true
	case op <= 0xa6:
		return bin(f64), f64, true
	}
	conv := map[byte][2]byte{
		0xa7: {i64, i32}, 0xa8: {f32, i32}, 0xa9: {f32, i32}, 0xaa: {f64, i32}, 0xab: {f64, i32},
		0xac: {i32, i64}, 0xad: {i32, i64}, 0xae: {f32, i64}, 0xaf: {f32, i64}, 0xb0: {f64, i64}, 0xb1: {f64, i64},
		0xb2: {i32, f32}, 0xb3: {i32, f32}, 0xb4: {i64, f32}, 0xb5: {i64, f32}, 0xb6: {f64, f32},
		0xb7: {i32, f64}, 0xb8: {i32, f64}, 0xb9: {i64, f64}, 0xba: {i64, f64}, 0xbb: {f32, f64},
		0xbc: {f32, i32}, 0xbd: {f64, i64}, 0xbe: {i32, f32}, 0xbf: {i64, f64},
		0xc0: {i32, i32}, 0xc1: {i32, i32}, 0xc2: {i64, i64}, 0xc3: {i64, i64}, 0xc4: {i64, i64},
	}
	if c, ok := conv[op]; ok {
		return un(c[0]), c[1], true
	}
	return nil, 0, false
}

// memoryOp gives the operands and result of a load or store (0x28-0x3e).
func memoryOp(op byte) (pops []byte, push byte) {
	switch {
	case op == 0x28 || (op >= 0x2c && op <= 0x2f):
		return []byte{i32}, i32
	case op == 0x29 || (op >= 0x30 && op <= 0x35):
		return []byte{i32}, i64
	case op == 0x2a:
		return []byte{i32}, f32
	case op == 0x2b:
		return []byte{i32}, f64
	case op == 0x36 || op == 0x3a || op == 0x3b:
		return []byte{i32, i32}, 0
	case op == 0x37 || (op >= 0x3c && op <= 0x3e):
		return []byte{i32, i64}, 0
	case op == 0x38:
		return []byte{i32, f32}, 0
	default: // 0x39
		return []byte{i32, f64}, 0
	}
}

// step applies one instruction that is not a block, loop, if, else, end
// or a branch to the stack (base: the current construct's height) and
// reports whether it ends the construct's reachable code (unreachable,
// br, br_table, return).
func (f *function) step(in instr, s *stack, base int) (bool, error) {
	r := reader{wasmbin.Reader{B: f.code, Pos: in.imm}}
	op := in.op
	popPush := func(pops []byte, push ...byte) error {
		if err := s.pop(len(pops), base); err != nil {
			return err
		}
		s.push(push...)
		return nil
	}
	switch {
	case op == wasmbin.OpUnreachable:
		return true, nil
	case op == 0x01: // nop
	case op == 0x0c: // br
		return true, nil
	case op == wasmbin.OpBrIf:
		return false, s.pop(1, base)
	case op == wasmbin.OpBrTable, op == wasmbin.OpReturn:
		return true, nil
	case op == wasmbin.OpCall:
		idx, _ := r.U32()
		t, err := f.m.funcType(idx)
		if err != nil {
			return false, err
		}
		return false, popPush(t.params, t.results...)
	case op == wasmbin.OpCallIndirect:
		ti, _ := r.U32()
		if int(ti) >= len(f.m.types) {
			return false, fmt.Errorf("call_indirect of type %d", ti)
		}
		t := f.m.types[ti]
		if err := s.pop(1, base); err != nil {
			return false, err
		}
		return false, popPush(t.params, t.results...)
	case op == 0x1a: // drop
		return false, s.pop(1, base)
	case op == 0x1b || op == 0x1c: // select
		if err := s.pop(1, base); err != nil {
			return false, err
		}
		t := s.top(base)
		if op == 0x1c {
			n, _ := r.U32()
			if n == 1 {
				t, _ = r.Byte()
			}
		}
		return false, popPush([]byte{0, 0}, t)
	case op == wasmbin.OpLocalGet || op == wasmbin.OpLocalSet || op == wasmbin.OpLocalTee:
		idx, _ := r.U32()
		if int(idx) >= len(f.locals) {
			return false, fmt.Errorf("local %d of %d", idx, len(f.locals))
		}
		t := f.locals[idx]
		switch op {
		case wasmbin.OpLocalGet:
			s.push(t)
		case wasmbin.OpLocalSet:
			return false, s.pop(1, base)
		}
	case op == wasmbin.OpGlobalGet || op == wasmbin.OpGlobalSet:
		idx, _ := r.U32()
		if int(idx) >= len(f.m.globals) {
			return false, fmt.Errorf("global %d of %d", idx, len(f.m.globals))
		}
		if op == wasmbin.OpGlobalGet {
			s.push(f.m.globals[idx].typ)
		} else {
			return false, s.pop(1, base)
		}
	case op == 0x25: // table.get
		idx, _ := r.U32()
		return false, popPush([]byte{i32}, f.m.tableType(idx))
	case op == 0x26: // table.set
		return false, s.pop(2, base)
	case op >= 0x28 && op <= 0x3e:
		pops, push := memoryOp(op)
		if push == 0 {
			return false, s.pop(len(pops), base)
		}
		return false, popPush(pops, push)
	case op == 0x3f: // memory.size
		s.push(i32)
	case op == 0x40: // memory.grow
		return false, popPush([]byte{i32}, i32)
	case op == wasmbin.OpI32Const:
		s.push(i32)
	case op == wasmbin.OpI64Const:
		s.push(i64)
	case op == wasmbin.OpF32Const:
		s.push(f32)
	case op == wasmbin.OpF64Const:
		s.push(f64)
	case op >= 0x45 && op <= 0xc4:
		pops, push, ok := numeric(op)
		if !ok {
			return false, fmt.Errorf("instruction 0x%02x", op)
		}
		return false, popPush(pops, push)
	case op == wasmbin.OpRefNull:
		t, _ := r.Byte()
		s.push(t)
	case op == 0xd1: // ref.is_null
		return false, popPush([]byte{0}, i32)
	case op == wasmbin.OpRefFunc:
		s.push(wasmbin.TypeFuncref)
	case op == wasmbin.OpMiscPrefix:
		return false, f.misc(in, s, base)
	default:
		return false, fmt.Errorf("instruction 0x%02x", op)
	}
	return false, nil
}

// misc applies a 0xFC instruction.
func (f *function) misc(in instr, s *stack, base int) error {
	sat := [8][2]byte{{f32, i32}, {f32, i32}, {f64, i32}, {f64, i32}, {f32, i64}, {f32, i64}, {f64, i64}, {f64, i64}}
	switch {
	case in.sub < 8:
		if err := s.pop(1, base); err != nil {
			return err
		}
		s.push(sat[in.sub][1])
	case in.sub == 8, in.sub == 10, in.sub == 11, in.sub == 12, in.sub == 14, in.sub == 17:
		return s.pop(3, base)
	case in.sub == 9, in.sub == 13:
	case in.sub == 15: // table.grow
		if err := s.pop(2, base); err != nil {
			return err
		}
		s.push(i32)
	case in.sub == 16: // table.size
		s.push(i32)
	}
	return nil
}

// dummy appends a constant of type t: what a skipped instruction would
// have left on the stack while the guest rewinds (never used).
func dummy(out []byte, t byte) ([]byte, error) {
	switch t {
	case i32:
		return append(out, wasmbin.OpI32Const, 0), nil
	case i64:
		return append(out, wasmbin.OpI64Const, 0), nil
	case f32:
		return append(out, wasmbin.OpF32Const, 0, 0, 0, 0), nil
	case f64:
		return append(out, wasmbin.OpF64Const, 0, 0, 0, 0, 0, 0, 0, 0), nil
	case wasmbin.TypeFuncref, wasmbin.TypeExternref:
		return append(out, wasmbin.OpRefNull, t), nil
	}
	return nil, fmt.Errorf("a value of type 0x%02x", t)
}
