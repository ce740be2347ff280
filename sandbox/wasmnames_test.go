package sandbox

import "github.com/stint-run/stint/sandbox/internal/wasmbin"

// The binary format's names that the tests writing modules byte by byte
// use (wasmbuild_test.go), as the rewrite calls them.
const (
	typeI32        = wasmbin.TypeI32
	typeI64        = wasmbin.TypeI64
	typeF32        = wasmbin.TypeF32
	typeF64        = wasmbin.TypeF64
	typeV128       = wasmbin.TypeV128
	typeFuncref    = wasmbin.TypeFuncref
	typeExternref  = wasmbin.TypeExternref
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
	secCustom      = wasmbin.SecCustom
	secType        = wasmbin.SecType
	secImport      = wasmbin.SecImport
	secFunction    = wasmbin.SecFunction
	secTable       = wasmbin.SecTable
	secMemory      = wasmbin.SecMemory
	secGlobal      = wasmbin.SecGlobal
	secExport      = wasmbin.SecExport
	secStart       = wasmbin.SecStart
	secElement     = wasmbin.SecElement
	secCode        = wasmbin.SecCode
	secData        = wasmbin.SecData
	secDataCount   = wasmbin.SecDataCount
)
