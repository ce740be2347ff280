package sandbox

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCallStackInStartFunction: a start function that recurses without
// end is a trap at the limit (not an invalid module).
func TestCallStackInStartFunction(t *testing.T) {
	t.Parallel()
	wasm := module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0), leb(0))),
		sec(secExport, vec(cat(str("_start"), []byte{0}, leb(1)))), sec(secStart, leb(0)),
		sec(secCode, vec(fbody(opCall, 0, opEnd), fbody(opEnd))))
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
		return cat([]byte{opLocalGet, 0, opI32Const}, sleb(int64(k+3)), []byte{0x6c}) // i32.mul
	}
	for g := range regions {
		for k := range width {
			code = append(code, value(g*width+k)...)
		}
		for range width - 1 {
			code = append(code, 0x6a) // i32.add
		}
		code = append(code, opLocalGet, 1, 0x6a, opLocalSet, 1)
	}
	for k := range held {
		code = append(code, value(k)...)
	}
	code = append(code, opLocalGet, 0, opI32Const, 1, 0x6a, opCall, 0)
	for range held {
		code = append(code, 0x6a)
	}
	code = append(code, opLocalGet, 1, 0x6a, opEnd)
	return module(sec(secType, vec(funcType([]byte{typeI32}, []byte{typeI32}), funcType(nil, nil))),
		sec(secFunction, vec(leb(0), leb(1))),
		sec(secExport, vec(cat(str("_start"), []byte{0}, leb(1)))),
		sec(secCode, vec(fbodyLocals([][2]uint64{{1, typeI32}}, code...), fbody(opI32Const, 0, opCall, 0, 0x1a, opEnd))))
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
