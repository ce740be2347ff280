package sandbox

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// TestCallStackInStartFunction: a start function that recurses without
// end is a trap at the limit (not an invalid module).
func TestCallStackInStartFunction(t *testing.T) {
	t.Parallel()
	wasm := wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(1)))), wasmtest.Sec(wasmbin.SecStart, wasmtest.LEB(0)),
		wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpCall, 0, wasmbin.OpEnd), wasmtest.FBody(wasmbin.OpEnd))))
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	defer rt.Close(ctx)
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(t, err)
	out, err := rt.Run(ctx, mod, Spec{})
	require.NoError(t, err)
	require.Equal(t, KindTrapped, out.Kind, out.String())
	require.ErrorIs(t, out.Err, ErrCallStack)
}

// bigFrameRecursion is a module whose _start calls $r, which recurses
// without end with frames far larger than its locals: held, before the
// call, values (values on the operand stack across it) and, in regions
// groups of width values (each region's values dead before the next:
// register pressure, which wazero spills to a slot of their own each).
func bigFrameRecursion(held, regions, width int) []byte {
	var code []byte
	value := func(k int) []byte { // local 0 times a constant: a new value
		return wasmtest.Cat([]byte{wasmbin.OpLocalGet, 0, wasmbin.OpI32Const}, wasmtest.SLEB(int64(k+3)), []byte{0x6c}) // i32.mul
	}
	for g := range regions {
		for k := range width {
			code = append(code, value(g*width+k)...)
		}
		for range width - 1 {
			code = append(code, 0x6a) // i32.add
		}
		code = append(code, wasmbin.OpLocalGet, 1, 0x6a, wasmbin.OpLocalSet, 1)
	}
	for k := range held {
		code = append(code, value(k)...)
	}
	code = append(code, wasmbin.OpLocalGet, 0, wasmbin.OpI32Const, 1, 0x6a, wasmbin.OpCall, 0)
	for range held {
		code = append(code, 0x6a)
	}
	code = append(code, wasmbin.OpLocalGet, 1, 0x6a, wasmbin.OpEnd)
	return wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType([]byte{wasmbin.TypeI32}, []byte{wasmbin.TypeI32}), wasmtest.FuncType(nil, nil))),
		wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(1))),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(1)))),
		wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBodyLocals([][2]uint64{{1, wasmbin.TypeI32}}, code...), wasmtest.FBody(wasmbin.OpI32Const, 0, wasmbin.OpCall, 0, 0x1a, wasmbin.OpEnd))))
}

// TestCallStackBigFrames: recursions whose frames are mostly values held
// on the operand stack or spilled under register pressure end at the
// limit, not at wazero's own ceiling ("stack overflow", ~100 MB): the
// estimate counts the operand stack and the code's size.
func TestCallStackBigFrames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	defer rt.Close(ctx)
	for name, wasm := range map[string][]byte{
		"held":     bigFrameRecursion(1000, 0, 0),
		"pressure": bigFrameRecursion(0, 100, 80),
	} {
		mod, err := rt.Compile(ctx, wasm)
		require.NoError(t, err, name)
		out, err := rt.Run(ctx, mod, Spec{})
		require.NoError(t, err)
		require.Equal(t, KindTrapped, out.Kind, "%s: %s", name, out)
		require.ErrorIs(t, out.Err, ErrCallStack, "%s: %s", name, out)
	}
}
