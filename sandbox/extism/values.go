package extism

import (
	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/sandbox"
)

// ValueType is the type of a host function's parameter or result, as in
// Extism's go-sdk (sandbox.ValueType, wazero's api.ValueType).
type ValueType = sandbox.ValueType

// The value types, with the go-sdk's names.
const (
	// ValueTypeI32 is a 32-bit integer.
	ValueTypeI32 = sandbox.I32
	// ValueTypeI64 is a 64-bit integer.
	ValueTypeI64 = sandbox.I64
	// ValueTypeF32 is a 32-bit float.
	ValueTypeF32 = sandbox.F32
	// ValueTypeF64 is a 64-bit float.
	ValueTypeF64 = sandbox.F64
	// ValueTypePTR is an offset in the plugin's kernel memory: an i64.
	ValueTypePTR = ValueTypeI64
)

// EncodeI32 encodes v as a ValueTypeI32 stack slot.
func EncodeI32(v int32) uint64 { return api.EncodeI32(v) }

// DecodeI32 decodes a ValueTypeI32 stack slot.
func DecodeI32(v uint64) int32 { return api.DecodeI32(v) }

// EncodeU32 encodes v as a ValueTypeI32 stack slot.
func EncodeU32(v uint32) uint64 { return api.EncodeU32(v) }

// DecodeU32 decodes a ValueTypeI32 stack slot as unsigned.
func DecodeU32(v uint64) uint32 { return api.DecodeU32(v) }

// EncodeI64 encodes v as a ValueTypeI64 stack slot.
func EncodeI64(v int64) uint64 { return api.EncodeI64(v) }

// EncodeF32 encodes v as a ValueTypeF32 stack slot.
func EncodeF32(v float32) uint64 { return api.EncodeF32(v) }

// DecodeF32 decodes a ValueTypeF32 stack slot.
func DecodeF32(v uint64) float32 { return api.DecodeF32(v) }

// EncodeF64 encodes v as a ValueTypeF64 stack slot.
func EncodeF64(v float64) uint64 { return api.EncodeF64(v) }

// DecodeF64 decodes a ValueTypeF64 stack slot.
func DecodeF64(v uint64) float64 { return api.DecodeF64(v) }
