package wasmbin

// Value and reference types of the features wazero enables by default.
const (
	TypeI32       = 0x7f
	TypeI64       = 0x7e
	TypeF32       = 0x7d
	TypeF64       = 0x7c
	TypeV128      = 0x7b
	TypeFuncref   = 0x70
	TypeExternref = 0x6f
)

// Instruction opcodes the sandbox's decoder treats specially (the prefix
// bytes of the misc and SIMD instructions among them).
const (
	OpUnreachable  = 0x00
	OpBlock        = 0x02
	OpLoop         = 0x03
	OpIf           = 0x04
	OpElse         = 0x05
	OpEnd          = 0x0b
	OpBrIf         = 0x0d
	OpBrTable      = 0x0e
	OpReturn       = 0x0f
	OpCall         = 0x10
	OpCallIndirect = 0x11
	OpLocalGet     = 0x20
	OpLocalSet     = 0x21
	OpLocalTee     = 0x22
	OpGlobalGet    = 0x23
	OpGlobalSet    = 0x24
	OpI32Const     = 0x41
	OpI64Const     = 0x42
	OpF32Const     = 0x43
	OpF64Const     = 0x44
	OpRefNull      = 0xd0
	OpRefFunc      = 0xd2
	OpMiscPrefix   = 0xfc
	OpVecPrefix    = 0xfd
)
