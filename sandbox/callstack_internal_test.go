package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOperandStackHeight: the scan's bound of the operand stack's height
// (the call-stack limit counts it in a frame) is at least the real
// height, through calls with several results, blocks and unreachable code.
func TestOperandStackHeight(t *testing.T) {
	t.Parallel()
	// Types: 0 () -> (), 1 () -> (i32 i32 i32), 2 (i32 i32) -> i32.
	types := vec(funcType(nil, nil), funcType(nil, []byte{typeI32, typeI32, typeI32}), funcType([]byte{typeI32, typeI32}, []byte{typeI32}))
	for _, c := range []struct {
		name string
		code []byte
		want uint32
	}{
		{"constants", []byte{opI32Const, 1, opI32Const, 2, opI32Const, 3, 0x1a, 0x1a, 0x1a, opEnd}, 3},
		{"binary", []byte{opI32Const, 1, opI32Const, 2, 0x6a, opI32Const, 3, 0x6a, 0x1a, opEnd}, 2},
		{"call results", []byte{opCall, 1, opCall, 1, 0x1a, 0x1a, 0x1a, 0x1a, 0x1a, 0x1a, opEnd}, 6},
		{"call parameters", []byte{opI32Const, 1, opI32Const, 2, opCall, 2, opI32Const, 1, opI32Const, 2, opCall, 2, 0x6a, 0x1a, opEnd}, 3},
		{"block results", []byte{opBlock, typeI32, opI32Const, 1, opI32Const, 2, 0x6a, opEnd, opI32Const, 1, 0x6a, 0x1a, opEnd}, 2},
		{"unreachable code", []byte{opI32Const, 1, opBlock, 0x40, 0x0c, 0, 0x1a, 0x1a, opI32Const, 1, 0x1a, opEnd, 0x1a, opEnd}, 2},
		{"br_table", []byte{opBlock, 0x40, opI32Const, 0, opBrTable, 0, 0, opEnd, opI32Const, 1, opI32Const, 1, 0x1a, 0x1a, opEnd}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			wasm := module(sec(secType, types), sec(secFunction, vec(leb(0), leb(1), leb(2))),
				sec(secCode, vec(fbody(c.code...), fbody(opI32Const, 1, opI32Const, 2, opI32Const, 3, opEnd), fbody(opLocalGet, 0, opEnd))))
			require.True(t, compiles(plainRuntime(t, nil), wasm), "a valid module")
			lim := ModuleLimits{}.WithDefaults()
			info, err := validateModule(wasm, &lim)
			require.NoError(t, err)
			cs := info.secs[info.codeSec]
			r := wreader{b: wasm[cs.start:cs.end]}
			_, _ = r.u32()
			size, _ := r.u32()
			body, _ := r.bytes(uint64(size))
			scan, err := scanBody(body, info.bodyEnv(&lim, 0, true), bodyScan{})
			require.NoError(t, err)
			require.Equal(t, c.want, scan.maxHeight)
		})
	}
}
