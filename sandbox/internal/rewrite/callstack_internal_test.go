package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// TestOperandStackHeight: the scan's bound of the operand stack's height
// (the call-stack limit counts it in a frame) is at least the real
// height, through calls with several results, blocks and unreachable code.
func TestOperandStackHeight(t *testing.T) {
	t.Parallel()
	// Types: 0 () -> (), 1 () -> (i32 i32 i32), 2 (i32 i32) -> i32.
	types := wasmtest.Vec(wasmtest.FuncType(nil, nil), wasmtest.FuncType(nil, []byte{typeI32, typeI32, typeI32}), wasmtest.FuncType([]byte{typeI32, typeI32}, []byte{typeI32}))
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
			wasm := wasmtest.Module(wasmtest.Sec(secType, types), wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(1), wasmtest.LEB(2))),
				wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBody(c.code...), wasmtest.FBody(opI32Const, 1, opI32Const, 2, opI32Const, 3, opEnd), wasmtest.FBody(opLocalGet, 0, opEnd))))
			require.True(t, compiles(plainRuntime(t, nil), wasm), "a valid module")
			lim := withDefaults(Limits{})
			info, err := validateModule(wasm, &lim)
			require.NoError(t, err)
			cs := info.secs[info.codeSec]
			r := wreader{wasmbin.Reader{B: wasm[cs.Start:cs.End]}}
			_, _ = r.U32()
			size, _ := r.U32()
			body, _ := r.Bytes(uint64(size))
			scan, err := scanBody(body, info.bodyEnv(&lim, 0, true), bodyScan{})
			require.NoError(t, err)
			require.Equal(t, c.want, scan.maxHeight)
		})
	}
}

// TestCallStackWrapMultiValue: functions with several results, left by
// return, by their end and by br_table to their label, compute the same
// rewritten (their bodies are wrapped in a block of their results: a type
// without parameters is added for (i32) -> (i32, i32)).
func TestCallStackWrapMultiValue(t *testing.T) {
	t.Parallel()
	const i32, i64 = typeI32, typeI64
	types := wasmtest.Vec(wasmtest.FuncType([]byte{i32}, []byte{i32, i32}), wasmtest.FuncType(nil, []byte{i64, i32}))
	// f0(n): (7, 8) if n is 0, else (y+n, x) where (x, y) = f0(n-1).
	f0 := wasmtest.FBodyLocals([][2]uint64{{2, i32}},
		opLocalGet, 0, 0x45, opIf, 0x40, opI32Const, 7, opI32Const, 8, opReturn, opEnd,
		opLocalGet, 0, opI32Const, 1, 0x6b, opCall, 0,
		opLocalGet, 0, 0x6a, opLocalSet, 1, opLocalSet, 2, opLocalGet, 1, opLocalGet, 2, opEnd)
	// f1: (x as i64, y) of f0(5), through br_table to its label.
	f1 := wasmtest.FBodyLocals([][2]uint64{{2, i32}},
		opI32Const, 5, opCall, 0, opLocalSet, 0, opLocalSet, 1,
		opBlock, 0x40, opLocalGet, 1, 0xad, opLocalGet, 0, opLocalGet, 0, opBrTable, 1, 1, 1, opEnd, // i64.extend_i32_u
		opI64Const, 0, opI32Const, 0, opEnd)
	wasm := wasmtest.Module(wasmtest.Sec(secType, types), wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(1))),
		wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("f0"), []byte{0}, wasmtest.LEB(0)), wasmtest.Cat(wasmtest.Str("f1"), []byte{0}, wasmtest.LEB(1)))),
		wasmtest.Sec(secCode, wasmtest.Vec(f0, f1)))
	r := plainRuntime(t, nil)
	p := prepareDefault(t, wasm, true)
	lim := withDefaults(Limits{})
	info, err := validateModule(p.Wasm, &lim)
	require.NoError(t, err)
	require.EqualValues(t, 5, info.numTypes, "the interrupt functions' types, and () -> (i32, i32) for f0's block")
	for _, c := range []struct {
		fn   string
		args []uint64
	}{{"f0", []uint64{0}}, {"f0", []uint64{10}}, {"f1", nil}} {
		want := wasmtest.RunPlain(t, r, wasm, c.fn, "", c.args...)
		require.Empty(t, want.Err)
		require.Len(t, want.Results, 2)
		require.Equal(t, want, wasmtest.RunPlain(t, r, p.Wasm, c.fn, "", c.args...), "%s%v", c.fn, c.args)
	}
}

// TestCallStackManyReturns: returns in a function that calls release its
// frame where they are, rather than branching to the function's block, so
// a function with more returns than max_branches_to_label (a big switch of
// early returns) is not refused, and computes what it did. With returns
// turned into branches, 4,200 of them were refused (4,096).
func TestCallStackManyReturns(t *testing.T) {
	t.Parallel()
	const n = 4200
	// f(x) calls g, then returns i if x == i, for i < n; else -1.
	code := []byte{opCall, 1}
	for i := range n {
		code = append(code, opLocalGet, 0, opI32Const)
		code = append(code, wasmtest.SLEB(int64(i))...)
		code = append(code, 0x46, opIf, 0x40, opI32Const) // i32.eq
		code = append(code, wasmtest.SLEB(int64(i))...)
		code = append(code, opReturn, opEnd)
	}
	code = append(code, opI32Const, 0x7f, opEnd) // -1
	types := wasmtest.Vec(wasmtest.FuncType([]byte{typeI32}, []byte{typeI32}), wasmtest.FuncType(nil, nil))
	wasm := wasmtest.Module(wasmtest.Sec(secType, types), wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(1))),
		wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("f"), []byte{0}, wasmtest.LEB(0)))),
		wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBody(code...), wasmtest.FBody(opEnd))))
	r := plainRuntime(t, nil)
	p := prepareDefault(t, wasm, true)
	want := wasmtest.RunPlain(t, r, wasm, "f", "", 4111) // compiling it takes seconds under -race: one call each
	require.Empty(t, want.Err)
	got := wasmtest.RunPlain(t, r, p.Wasm, "f", "", 4111)
	require.Equal(t, want, got)
	require.Equal(t, []uint64{4111}, got.Results)
}
