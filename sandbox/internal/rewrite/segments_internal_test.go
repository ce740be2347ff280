package rewrite

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// scanFirst scans the first body of wasm as the checks rewrite does.
func scanFirst(t *testing.T, wasm []byte) bodyScan {
	t.Helper()
	var first *bodyScan
	eachBody(t, wasm, true, func(scan *bodyScan) {
		if first == nil {
			c := *scan
			c.edits, c.loops = slices.Clone(scan.edits), slices.Clone(scan.loops)
			first = &c
		}
	})
	return *first
}

// TestSegmentsCapped: a loop's segments are charged where they start,
// its check taking its header's weight alone; but a body with more
// segments than maxCharges allows (a loop of `block end` pairs, which
// would grow 3.3x) gets no charges, its loop's check taking the whole
// body, and the rewrite still computes what the original computes.
func TestSegmentsCapped(t *testing.T) {
	t.Parallel()
	// run(n): n passes of: n -= 1, then k empty blocks; returns n (0).
	wasmWith := func(k int) []byte {
		code := []byte{opLoop, 0x40, opLocalGet, 0, opI32Const, 1, 0x6b, opLocalSet, 0}
		code = append(code, bytes.Repeat([]byte{opBlock, 0x40, opI32Const, 1, 0x1a, opEnd}, k)...) // block i32.const 1 drop end
		code = append(code, opLocalGet, 0, opBrIf, 0, opEnd, opLocalGet, 0, opEnd)
		return wasmtest.Module(
			wasmtest.Sec(secType, wasmtest.Vec(wasmtest.FuncType([]byte{typeI32}, []byte{typeI32}))),
			wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0))),
			wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("run"), []byte{0}, wasmtest.LEB(0)))),
			wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBody(code...))),
		)
	}
	charges := func(s bodyScan) (n int) {
		for _, e := range s.edits {
			if e.kind == editCharge {
				n++
			}
		}
		return n
	}
	r := plainRuntime(t, nil)
	for _, k := range []int{30, 3000} {
		wasm := wasmWith(k)
		scan := scanFirst(t, wasm)
		whole := weight(scan.loops[0].end-scan.loops[0].start, 0, 0, 0)
		if k == 30 {
			require.Equal(t, k, charges(scan), "a charge after each block's end")
			require.Less(t, scan.loops[0].head, whole)
		} else {
			require.Zero(t, charges(scan))
			require.Equal(t, whole, scan.loops[0].head)
		}
		p := prepareDefault(t, wasm, true)
		require.Less(t, len(p.Wasm), 2*len(wasm)+1024, "k %d", k)
		for _, n := range []uint64{1, 3, 100} {
			require.Equal(t, wasmtest.RunPlain(t, r, wasm, "run", "", n), wasmtest.RunPlain(t, r, p.Wasm, "run", "", n), "k %d, n %d", k, n)
		}
	}
}
