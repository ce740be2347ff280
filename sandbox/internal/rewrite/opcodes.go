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

// imm says what follows an opcode.
type imm uint8

const (
	immInvalid imm = iota // not an instruction of the default features
	immNone
	immBlock    // a block type
	immIndex    // one u32 index
	immIndex2   // two u32 (call_indirect: type and table)
	immMemArg   // align and offset (two u32)
	immZeroByte // memory.size and memory.grow: a u32 that must be 0 in one byte
	immBranch   // br, br_if: a label
	immFunc     // call, ref.func: a function index
	immLocal    // local.get/set/tee: a local index, checked
	immBrTable
	immGlobal // global.get/set: a global index, checked
	immI32
	immI64
	immF32
	immF64
	immSelectT
	immRefNull
	immMisc
	immVec
	immLane // one lane byte (SIMD)
	immMemArgLane
	immV128 // 16 bytes (v128.const, i8x16.shuffle)
)

// opImm is the immediate of each one-byte opcode.
var opImm = func() (t [256]imm) {
	set := func(lo, hi int, k imm) {
		for op := lo; op <= hi; op++ {
			t[op] = k
		}
	}
	set(0x00, 0x01, immNone) // unreachable, nop
	set(0x02, 0x04, immBlock)
	t[opElse], t[opEnd] = immNone, immNone
	set(0x0c, 0x0d, immBranch) // br, br_if
	t[opBrTable] = immBrTable
	t[opReturn] = immNone        // return
	t[opCall] = immFunc          // call
	t[0x11] = immIndex2          // call_indirect
	set(0x1a, 0x1b, immNone)     // drop, select
	t[0x1c] = immSelectT         // select t*
	set(0x20, 0x22, immLocal)    // local.get/set/tee
	set(0x23, 0x24, immGlobal)   // global.get/set
	set(0x25, 0x26, immIndex)    // table.get/set
	set(0x28, 0x3e, immMemArg)   // loads and stores
	set(0x3f, 0x40, immZeroByte) // memory.size, memory.grow
	t[opI32Const], t[opI64Const] = immI32, immI64
	t[opF32Const], t[opF64Const] = immF32, immF64
	set(0x45, 0xc4, immNone) // numeric, sign extension
	t[opRefNull] = immRefNull
	t[0xd1] = immNone // ref.is_null
	t[opRefFunc] = immFunc
	t[opMiscPrefix] = immMisc
	t[opVecPrefix] = immVec
	return t
}()

// miscImm is the immediate of each 0xFC sub-opcode: 0-7 saturating
// truncation, 8-17 bulk memory and table operations.
var miscImm = [18]imm{
	0: immNone, 1: immNone, 2: immNone, 3: immNone, 4: immNone, 5: immNone, 6: immNone, 7: immNone,
	8:  immIndex2, // memory.init data, mem
	9:  immIndex,  // data.drop
	10: immIndex2, // memory.copy mem mem
	11: immIndex,  // memory.fill mem
	12: immIndex2, // table.init elem table
	13: immIndex,  // elem.drop
	14: immIndex2, // table.copy table table
	15: immIndex,  // table.grow
	16: immIndex,  // table.size
	17: immIndex,  // table.fill
}

// vecImm is the immediate of each 0xFD (SIMD) opcode, read as one byte.
var vecImm = func() (t [256]imm) {
	for op := range t {
		t[op] = immNone
	}
	for op := 0x00; op <= 0x0b; op++ {
		t[op] = immMemArg // v128.load*, load splat, v128.store
	}
	t[0x0c], t[0x0d] = immV128, immV128 // v128.const, i8x16.shuffle
	for op := 0x15; op <= 0x22; op++ {
		t[op] = immLane // extract_lane, replace_lane
	}
	for op := 0x54; op <= 0x5b; op++ {
		t[op] = immMemArgLane // v128.load*_lane, v128.store*_lane
	}
	t[0x5c], t[0x5d] = immMemArg, immMemArg // v128.load32_zero, load64_zero
	// Opcodes the SIMD proposal leaves unassigned (wazero knows none of them).
	for _, op := range []int{154, 162, 165, 166, 175, 176, 178, 179, 180, 187, 194, 197, 198, 207, 208, 210, 211, 212, 226, 238} {
		t[op] = immInvalid
	}
	return t
}()

// blockType reads a block type: empty, one value type, or a type index;
// and returns its numbers of parameters and results.
func (r *wreader) blockType(env *bodyEnv) (params, results uint32, err error) {
	v, err := r.s33()
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
