package rewrite

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// eachBody scans every body of wasm as the rewrite does (with loop checks
// or not) and calls fn with each function's scan, whose slices the next
// scan reuses.
func eachBody(t testing.TB, wasm []byte, loopChecks bool, fn func(scan *bodyScan)) {
	t.Helper()
	lim := withDefaults(Limits{})
	info, err := validateModule(wasm, &lim)
	require.NoError(t, err)
	cs := info.secs[info.codeSec]
	r := wreader{wasmbin.Reader{B: wasm[cs.Start:cs.End]}}
	n, _ := r.U32()
	var scan bodyScan
	for i := range n {
		size, _ := r.U32()
		body, _ := r.Bytes(uint64(size))
		scan, err = scanBody(body, info.bodyEnv(&lim, info.importedFuncs+i, loopChecks), scan)
		require.NoError(t, err)
		fn(&scan)
	}
}

// scanLoops scans every body of wasm as the checks rewrite does and
// returns, per function, which of its loops it unrolls.
func scanLoops(t testing.TB, wasm []byte) [][]bool {
	t.Helper()
	var out [][]bool
	eachBody(t, wasm, true, func(scan *bodyScan) {
		var u []bool
		for _, l := range scan.loops {
			u = append(u, l.unroll)
		}
		out = append(out, u)
	})
	return out
}

// TestUnrollShapes: which loops the rewrite unrolls, and that each
// computes what the original does, with UnrollCopies copies and with
// none. run(n i32) i32 runs one loop in a block; local 1 is an
// accumulator.
func TestUnrollShapes(t *testing.T) {
	t.Parallel()
	counted := func(body ...byte) []byte { // body; n -= 1; br_if n != 0
		return wasmtest.Cat([]byte{opLoop, 0x40}, body, []byte{opLocalGet, 0, opI32Const, 1, 0x6b, opLocalTee, 0, opBrIf, 0, opEnd})
	}
	add := []byte{opLocalGet, 1, opLocalGet, 0, 0x6a, opLocalSet, 1} // acc += n
	// n -= 1, leave at 0; then on n&3: 0 and 1 do acc += n and go back
	// (br from a block), 2 and 3 go back at once (br_table to the loop);
	// the loop's end is never reached (its last instruction is a br).
	stateMachine := wasmtest.Cat([]byte{opLoop, 0x40,
		opLocalGet, 0, opI32Const, 1, 0x6b, opLocalTee, 0, 0x45, opBrIf, 1,
		opBlock, 0x40, opBlock, 0x40, opLocalGet, 0, opI32Const, 3, 0x71, opBrTable, 3, 0, 1, 2, 2, opEnd},
		add, []byte{0x0c, 1, opEnd,
			opLocalGet, 1, opI32Const, 5, 0x73, opLocalSet, 1, 0x0c, 0, opEnd})
	big := []byte{}
	for len(big) <= maxUnrollBody {
		big = append(big, add...)
	}
	for _, c := range []struct {
		name   string
		code   []byte
		unroll []bool
	}{
		{"one add", counted(add...), []bool{true}},
		{"exit by br_if to the block around it", counted(wasmtest.Cat(add, []byte{opLocalGet, 1, opI32Const, 0x80, 0x01, 0x4a, opBrIf, 1})...), []bool{true}},
		{"br_table out of a block", counted(wasmtest.Cat([]byte{opBlock, 0x40}, add, []byte{opLocalGet, 0, opI32Const, 7, 0x71, opBrTable, 2, 0, 2, 0, opEnd})...), []bool{true}},
		{"return from an if", counted(wasmtest.Cat(add, []byte{opLocalGet, 1, opI32Const, 100, 0x4a, opIf, 0x40, opLocalGet, 1, opReturn, opEnd})...), []bool{true}},
		{"a second branch to the loop", counted(wasmtest.Cat(add, []byte{opI32Const, 0, opBrIf, 0})...), []bool{true}},
		{"a branch to the loop from a block", counted(wasmtest.Cat([]byte{opBlock, 0x40}, add, []byte{opI32Const, 0, opBrIf, 1, opEnd})...), []bool{true}},
		{"a state machine: br_table and br to the loop (not tested at its bottom)", stateMachine, []bool{false}},
		{"a nested loop", counted(wasmtest.Cat(add, []byte{opLoop, 0x40, opI32Const, 0, opBrIf, 0, opEnd})...), []bool{false, true}},
		{"a call", counted(wasmtest.Cat(add, []byte{opLocalGet, 0, opCall, 1, 0x1a})...), []bool{false}},
		{"too big", counted(big...), []bool{false}},
		{"br_if 0 not last: falls off its end", wasmtest.Cat([]byte{opLoop, 0x40}, add, []byte{opLocalGet, 0, opI32Const, 1, 0x6b, opLocalTee, 0, opBrIf, 0, 0x01, opEnd}), []bool{false}},
		{"tested at its top", wasmtest.Cat([]byte{opLoop, 0x40, opLocalGet, 0, 0x45, opBrIf, 1}, add, []byte{opLocalGet, 0, opI32Const, 1, 0x6b, opLocalSet, 0, 0x0c, 0, opEnd}), []bool{false}},
		{"with a result", wasmtest.Cat([]byte{opLoop, typeI32, opLocalGet, 0, opI32Const, 1, 0x6b, opLocalTee, 0, opLocalGet, 0, opBrIf, 0, opEnd, opLocalSet, 1}), []bool{false}},
	} {
		code := wasmtest.Cat([]byte{opLocalGet, 0, 0x45, opIf, 0x40, opI32Const, 0, opReturn, opEnd, opBlock, 0x40}, c.code, []byte{opEnd, opLocalGet, 1, opEnd})
		wasm := wasmtest.Module(
			wasmtest.Sec(secType, wasmtest.Vec(wasmtest.FuncType([]byte{typeI32}, []byte{typeI32}))),
			wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))),
			wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("run"), []byte{0}, wasmtest.LEB(0)))),
			wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBodyLocals([][2]uint64{{1, typeI32}}, code...), wasmtest.FBody(opLocalGet, 0, opEnd))),
		)
		require.Equal(t, c.unroll, scanLoops(t, wasm)[0], c.name)
		r := plainRuntime(t, nil)
		p := prepareDefault(t, wasm, true)
		for _, n := range []uint64{0, 1, 2, 3, 4, 5, 7, 8, 9, 100, 100_003} {
			want := wasmtest.RunPlain(t, r, wasm, "run", "", n)
			got := wasmtest.RunPlain(t, r, p.Wasm, "run", "", n)
			require.Equal(t, want, got, "%s, n %d", c.name, n)
		}
	}
}

// TestUnrollShapeBench: the benchmarks' one-add loop and nested loops'
// inner loop are unrolled; the br_table machine, not tested at its
// bottom, is not (unrolled, it ran 1.45x the time of no stop mechanism,
// 1.35x not: docs/design/stop-checks.md, "One countdown per instance, and what
// each charge costs").
func TestUnrollShapeBench(t *testing.T) {
	t.Parallel()
	// _start, loop, nested (outer, inner), brtable, tree
	require.Equal(t, [][]bool{nil, {true}, {false, true}, {false}, nil}, scanLoops(t, wat.MustLoad("shape_bench")))
}

// TestUnrollRandomPrograms: the random programs hold loops the rewrite
// unrolls (TestRewriteEquivalentRandomPrograms compares their results),
// and with 2, 4 and 8 copies they compute what the originals compute.
func TestUnrollRandomPrograms(t *testing.T) {
	// Not parallel: it sets UnrollCopies.
	r := plainRuntime(t, nil)
	n := 300
	if testing.Short() {
		n = 60
	}
	unrolled, loops := 0, 0
	defer func() { UnrollCopies = 4 }()
	for _, k := range []int{2, 8, 4} {
		UnrollCopies = k
		for seed := range uint64(n) {
			rng := rand.New(rand.NewPCG(seed, 3))
			wasm := randProgram(rng)
			if k == 4 {
				for _, f := range scanLoops(t, wasm) {
					for _, u := range f {
						loops++
						if u {
							unrolled++
						}
					}
				}
			}
			p := prepareDefault(t, wasm, true)
			for _, a := range [][2]uint64{{0, 0}, {uint64(rng.Uint32()), uint64(rng.Uint32())}, {1, 0xffffffff}} {
				want := wasmtest.RunPlain(t, r, wasm, "run", "", a[0], a[1])
				got := wasmtest.RunPlain(t, r, p.Wasm, "run", "", a[0], a[1])
				require.Equal(t, want, got, "seed %d, args %v, %d copies", seed, a, k)
			}
		}
	}
	t.Logf("%d programs: %d loops, %d unrolled", n, loops, unrolled)
	require.Greater(t, unrolled, n/4)
	require.Greater(t, loops, unrolled)
}
