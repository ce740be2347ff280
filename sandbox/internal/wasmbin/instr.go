package wasmbin

// The immediates of every instruction of the features wazero v1.12.0
// enables by default, for the decoders of the rewrite and the verifier.

// Imm says what follows an instruction's opcode.
type Imm uint8

const (
	ImmInvalid Imm = iota // not an instruction of the default features
	ImmNone
	ImmBlock    // a block type
	ImmIndex    // one u32 index
	ImmIndex2   // two u32 (call_indirect: type and table)
	ImmMemArg   // align and offset (two u32)
	ImmZeroByte // memory.size and memory.grow: a u32 that must be 0 in one byte
	ImmBranch   // br, br_if: a label
	ImmFunc     // call, ref.func: a function index
	ImmLocal    // local.get/set/tee: a local index, checked
	ImmBrTable
	ImmGlobal // global.get/set: a global index, checked
	ImmI32
	ImmI64
	ImmF32
	ImmF64
	ImmSelectT
	ImmRefNull
	ImmMisc
	ImmVec
	ImmLane // one lane byte (SIMD)
	ImmMemArgLane
	ImmV128 // 16 bytes (v128.const, i8x16.shuffle)
)

// OpImm is the immediate of each one-byte opcode.
var OpImm = func() (t [256]Imm) {
	set := func(lo, hi int, k Imm) {
		for op := lo; op <= hi; op++ {
			t[op] = k
		}
	}
	set(0x00, 0x01, ImmNone) // unreachable, nop
	set(0x02, 0x04, ImmBlock)
	t[OpElse], t[OpEnd] = ImmNone, ImmNone
	set(0x0c, 0x0d, ImmBranch) // br, br_if
	t[OpBrTable] = ImmBrTable
	t[OpReturn] = ImmNone        // return
	t[OpCall] = ImmFunc          // call
	t[0x11] = ImmIndex2          // call_indirect
	set(0x1a, 0x1b, ImmNone)     // drop, select
	t[0x1c] = ImmSelectT         // select t*
	set(0x20, 0x22, ImmLocal)    // local.get/set/tee
	set(0x23, 0x24, ImmGlobal)   // global.get/set
	set(0x25, 0x26, ImmIndex)    // table.get/set
	set(0x28, 0x3e, ImmMemArg)   // loads and stores
	set(0x3f, 0x40, ImmZeroByte) // memory.size, memory.grow
	t[OpI32Const], t[OpI64Const] = ImmI32, ImmI64
	t[OpF32Const], t[OpF64Const] = ImmF32, ImmF64
	set(0x45, 0xc4, ImmNone) // numeric, sign extension
	t[OpRefNull] = ImmRefNull
	t[0xd1] = ImmNone // ref.is_null
	t[OpRefFunc] = ImmFunc
	t[OpMiscPrefix] = ImmMisc
	t[OpVecPrefix] = ImmVec
	return t
}()

// MiscImm is the immediate of each 0xFC sub-opcode: 0-7 saturating
// truncation, 8-17 bulk memory and table operations.
var MiscImm = [18]Imm{
	0: ImmNone, 1: ImmNone, 2: ImmNone, 3: ImmNone, 4: ImmNone, 5: ImmNone, 6: ImmNone, 7: ImmNone,
	8:  ImmIndex2, // memory.init data, mem
	9:  ImmIndex,  // data.drop
	10: ImmIndex2, // memory.copy mem mem
	11: ImmIndex,  // memory.fill mem
	12: ImmIndex2, // table.init elem table
	13: ImmIndex,  // elem.drop
	14: ImmIndex2, // table.copy table table
	15: ImmIndex,  // table.grow
	16: ImmIndex,  // table.size
	17: ImmIndex,  // table.fill
}

// VecImm is the immediate of each 0xFD (SIMD) opcode, read as one byte.
var VecImm = func() (t [256]Imm) {
	for op := range t {
		t[op] = ImmNone
	}
	for op := 0x00; op <= 0x0b; op++ {
		t[op] = ImmMemArg // v128.load*, load splat, v128.store
	}
	t[0x0c], t[0x0d] = ImmV128, ImmV128 // v128.const, i8x16.shuffle
	for op := 0x15; op <= 0x22; op++ {
		t[op] = ImmLane // extract_lane, replace_lane
	}
	for op := 0x54; op <= 0x5b; op++ {
		t[op] = ImmMemArgLane // v128.load*_lane, v128.store*_lane
	}
	t[0x5c], t[0x5d] = ImmMemArg, ImmMemArg // v128.load32_zero, load64_zero
	// Opcodes the SIMD proposal leaves unassigned (wazero knows none of them).
	for _, op := range []int{154, 162, 165, 166, 175, 176, 178, 179, 180, 187, 194, 197, 198, 207, 208, 210, 211, 212, 226, 238} {
		t[op] = ImmInvalid
	}
	return t
}()
