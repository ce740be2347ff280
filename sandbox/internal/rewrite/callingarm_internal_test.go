package rewrite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// scanCallingArms returns, per function of wasm, whether it has a calling
// arm (bodyScan.sinkStart).
func scanCallingArms(t testing.TB, wasm []byte, loopChecks bool) []bool {
	t.Helper()
	var out []bool
	eachBody(t, wasm, loopChecks, func(scan *bodyScan) { out = append(out, scan.sinkStart != 0) })
	return out
}

// TestCallingArm: which bodies get their entry checks in the one arm of
// an if that holds all their calls, and that each computes what the
// original computes in both modes. run(n i32) i32 (function 0) recurses
// on n-1, n up to 11; function 1 returns its argument.
func TestCallingArm(t *testing.T) {
	t.Parallel()
	const (
		i32sub = 0x6b
		i32add = 0x6a
		i32eqz = 0x45
		i32and = 0x71
		drop   = 0x1a
		br     = 0x0c
		brIf   = 0x0d
		rI32   = typeI32 // a block type: one i32 result
	)
	rec := []byte{opLocalGet, 0, opI32Const, 1, i32sub, opCall, 0} // run(n-1)
	isZero := []byte{opLocalGet, 0, i32eqz}
	for _, c := range []struct {
		name string
		code []byte
		arm  bool
	}{
		{"tree: leaf in then, two calls in else", wasmtest.Cat(isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec, rec, []byte{i32add, opEnd}), true},
		{"calls in the then arm, no else", wasmtest.Cat([]byte{opLocalGet, 0, opIf, 0x40}, rec, []byte{drop, opEnd, opLocalGet, 0}), true},
		{"calls in then, leaf in else", wasmtest.Cat([]byte{opLocalGet, 0, opIf, rI32}, rec, []byte{opI32Const, 2, i32add, opElse, opI32Const, 7, opEnd}), true},
		{"br_if to the if's own label", wasmtest.Cat(isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec,
			[]byte{opLocalGet, 0, opI32Const, 7, i32and, i32eqz, brIf, 0, opI32Const, 3, i32add, opEnd}), true},
		{"a block in the arm, br_table to it and to the if", wasmtest.Cat(isZero, []byte{opIf, rI32, opI32Const, 1, opElse, opBlock, rI32}, rec,
			[]byte{opLocalGet, 0, opI32Const, 1, i32and, opBrTable, 1, 0, 1, opEnd, opI32Const, 5, i32add, opEnd}), true},
		{"returns in both arms", wasmtest.Cat(isZero, []byte{opIf, rI32, opI32Const, 4, opReturn, opElse}, rec, []byte{opI32Const, 1, i32add, opReturn, opEnd}), true},
		{"the if inside a block", wasmtest.Cat([]byte{opBlock, rI32}, isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec, []byte{opEnd, opEnd}), true},
		{"a call-free prefix and suffix", wasmtest.Cat([]byte{opLocalGet, 0, opI32Const, 1, i32add, drop}, isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec,
			[]byte{opEnd, opI32Const, 3, i32add}), true},
		{"a call before the if (of another function)", wasmtest.Cat([]byte{opLocalGet, 0, opCall, 1, drop}, isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec, []byte{opEnd}), false},
		{"a call after the if", wasmtest.Cat(isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec, []byte{opEnd, drop, opLocalGet, 0, opIf, rI32}, rec,
			[]byte{opElse, opI32Const, 0, opEnd}), false},
		{"calls in both arms", wasmtest.Cat([]byte{opLocalGet, 0, opI32Const, 5, 0x4b /* gt_u */, opIf, rI32}, rec, []byte{opElse, opLocalGet, 0, opIf, rI32}, rec,
			[]byte{opElse, opI32Const, 0, opEnd, opEnd}), false},
		{"a branch from the arm to the function", wasmtest.Cat(isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec,
			[]byte{opLocalGet, 0, opI32Const, 3, i32and, brIf, 1, opEnd}), false},
		{"br_table from the arm to the function", wasmtest.Cat(isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec,
			[]byte{opLocalGet, 0, opI32Const, 1, i32and, opBrTable, 1, 0, 1, opEnd}), false},
		{"a loop", wasmtest.Cat([]byte{opLoop, 0x40, opEnd}, isZero, []byte{opIf, rI32, opI32Const, 1, opElse}, rec, []byte{opEnd}), false},
	} {
		wasm := wasmtest.Module(
			wasmtest.Sec(secType, wasmtest.Vec(wasmtest.FuncType([]byte{typeI32}, []byte{typeI32}))),
			wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))),
			wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("run"), []byte{0}, wasmtest.LEB(0)))),
			wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBody(append(c.code, opEnd)...), wasmtest.FBody(opLocalGet, 0, opEnd))),
		)
		for _, checks := range []bool{true, false} {
			require.Equal(t, []bool{c.arm, false}, scanCallingArms(t, wasm, checks), "%s, checks %v", c.name, checks)
			r := plainRuntime(t, nil)
			p := prepareDefault(t, wasm, checks)
			for _, n := range []uint64{0, 1, 2, 3, 5, 8, 11} {
				want := wasmtest.RunPlain(t, r, wasm, "run", "", n)
				got := wasmtest.RunPlain(t, r, p.Wasm, "run", "", n)
				require.Equal(t, want, got, "%s, checks %v, n %d", c.name, checks, n)
				require.Empty(t, want.Err, "%s, n %d", c.name, n)
			}
			// Every way out gives back what its way in took: an
			// instance runs it again and again within a budget of 8 KiB
			// (run(11) takes at most 12 frames of under 200 bytes).
			lim := withDefaults(Limits{MaxCallStack: 8 << 10})
			small, err := Prepare(wasm, &lim, checks)
			require.NoError(t, err)
			ctx := context.Background()
			inst, err := r.Instantiate(ctx, small.Wasm)
			require.NoError(t, err)
			for i := range 300 {
				_, err := inst.ExportedFunction("run").Call(ctx, 11)
				require.NoError(t, err, "%s, checks %v, call %d", c.name, checks, i)
			}
			require.NoError(t, inst.Close(ctx))
		}
	}
}
