package rewrite

import (
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Value and reference types of the default features.
const (
	typeI32       = wasmbin.TypeI32
	typeI64       = wasmbin.TypeI64
	typeF32       = wasmbin.TypeF32
	typeF64       = wasmbin.TypeF64
	typeV128      = wasmbin.TypeV128
	typeFuncref   = wasmbin.TypeFuncref
	typeExternref = wasmbin.TypeExternref
)

func isValType(b byte) bool {
	switch b {
	case typeI32, typeI64, typeF32, typeF64, typeV128, typeFuncref, typeExternref:
		return true
	}
	return false
}

func isRefType(b byte) bool { return b == typeFuncref || b == typeExternref }

// Instruction opcodes the decoder treats specially.
const (
	opUnreachable  = wasmbin.OpUnreachable
	opBlock        = wasmbin.OpBlock
	opLoop         = wasmbin.OpLoop
	opIf           = wasmbin.OpIf
	opElse         = wasmbin.OpElse
	opEnd          = wasmbin.OpEnd
	opBrIf         = wasmbin.OpBrIf
	opBrTable      = wasmbin.OpBrTable
	opReturn       = wasmbin.OpReturn
	opCall         = wasmbin.OpCall
	opCallIndirect = wasmbin.OpCallIndirect
	opLocalGet     = wasmbin.OpLocalGet
	opLocalSet     = wasmbin.OpLocalSet
	opLocalTee     = wasmbin.OpLocalTee
	opGlobalGet    = wasmbin.OpGlobalGet
	opGlobalSet    = wasmbin.OpGlobalSet
	opI32Const     = wasmbin.OpI32Const
	opI64Const     = wasmbin.OpI64Const
	opF32Const     = wasmbin.OpF32Const
	opF64Const     = wasmbin.OpF64Const
	opRefNull      = wasmbin.OpRefNull
	opRefFunc      = wasmbin.OpRefFunc
	opMiscPrefix   = wasmbin.OpMiscPrefix
	opVecPrefix    = wasmbin.OpVecPrefix
)

const (
	immInvalid    = wasmbin.ImmInvalid
	immNone       = wasmbin.ImmNone
	immBlock      = wasmbin.ImmBlock
	immIndex2     = wasmbin.ImmIndex2
	immIndex      = wasmbin.ImmIndex
	immMemArgLane = wasmbin.ImmMemArgLane
	immMemArg     = wasmbin.ImmMemArg
	immZeroByte   = wasmbin.ImmZeroByte
	immBranch     = wasmbin.ImmBranch
	immFunc       = wasmbin.ImmFunc
	immLocal      = wasmbin.ImmLocal
	immBrTable    = wasmbin.ImmBrTable
	immGlobal     = wasmbin.ImmGlobal
	immI32        = wasmbin.ImmI32
	immI64        = wasmbin.ImmI64
	immF32        = wasmbin.ImmF32
	immF64        = wasmbin.ImmF64
	immSelectT    = wasmbin.ImmSelectT
	immRefNull    = wasmbin.ImmRefNull
	immMisc       = wasmbin.ImmMisc
	immVec        = wasmbin.ImmVec
	immLane       = wasmbin.ImmLane
	immV128       = wasmbin.ImmV128
)

// The immediates of each opcode (wasmbin's tables).
var (
	opImm   = &wasmbin.OpImm
	miscImm = &wasmbin.MiscImm
	vecImm  = &wasmbin.VecImm
)

// blockType reads a block type: empty, one value type, or a type index;
// and returns its numbers of parameters and results.
func (r *wreader) blockType(env *bodyEnv) (params, results uint32, err error) {
	v, err := r.S33()
	if err != nil {
		return 0, 0, err
	}
	switch v {
	case -64: // empty
		return 0, 0, nil
	case -1, -2, -3, -4, -5, -16, -17: // i32, i64, f32, f64, v128, funcref, externref
		return 0, 1, nil
	}
	if v < 0 || v >= int64(env.numTypes) {
		return 0, 0, fmt.Errorf("block type %d is neither a value type nor a type index", v)
	}
	return env.typeParams[v], env.typeResults[v], nil
}

// stackNet is the net change to the operand stack height of each
// one-byte opcode that is not a control instruction, call or prefix:
// pushes minus pops. It serves an upper bound of the height (for the
// call-stack limit's estimate of a frame), so where unsure it errs up.
var stackNet = func() (t [256]int8) {
	set := func(lo, hi int, n int8) {
		for op := lo; op <= hi; op++ {
			t[op] = n
		}
	}
	t[0x0d] = -1        // br_if
	t[0x1a] = -1        // drop
	set(0x1b, 0x1c, -2) // select
	t[opLocalGet] = 1   //
	t[opLocalSet] = -1  //
	t[opGlobalGet] = 1  //
	t[opGlobalSet] = -1 //
	t[0x26] = -2        // table.set
	set(0x36, 0x3e, -2) // stores
	t[0x3f] = 1         // memory.size
	set(0x41, 0x44, 1)  // constants
	set(0x46, 0x4f, -1) // i32 comparisons
	set(0x51, 0x66, -1) // i64, f32, f64 comparisons
	set(0x6a, 0x78, -1) // i32 binary
	set(0x7c, 0x8a, -1) // i64 binary
	set(0x92, 0x98, -1) // f32 binary
	set(0xa0, 0xa6, -1) // f64 binary
	t[opRefNull] = 1    //
	t[opRefFunc] = 1    //
	return t            // the rest (loads, unary, conversions, tee): 0
}()

// miscNet is stackNet for the 0xFC opcodes.
var miscNet = [18]int8{8: -3, 10: -3, 11: -3, 12: -3, 14: -3, 15: -1, 16: 1, 17: -3}

// vecNet is stackNet for the SIMD opcodes: v128.const pushes, stores pop
// two, binary and ternary operations pop; the rest (mostly unary, lane
// and shift operations, some binary) count 0, erring up.
var vecNet = func() (t [256]int8) {
	t[0x0c] = 1               // v128.const
	t[0x0b] = -2              // v128.store
	t[0x0d], t[0x0e] = -1, -1 // shuffle, swizzle
	for _, op := range []int{0x17, 0x1a, 0x1c, 0x1e, 0x20, 0x22} {
		t[op] = -1 // replace_lane
	}
	for op := 0x23; op <= 0x4c; op++ {
		t[op] = -1 // comparisons
	}
	for op := 0x4e; op <= 0x51; op++ {
		t[op] = -1 // and, andnot, or, xor
	}
	t[0x52] = -2 // bitselect
	for op := 0x54; op <= 0x57; op++ {
		t[op] = -1 // load lane
	}
	for op := 0x58; op <= 0x5b; op++ {
		t[op] = -2 // store lane
	}
	return t
}()
