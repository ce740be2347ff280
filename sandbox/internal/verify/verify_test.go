package verify

import (
	"strings"
	"testing"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// Modules written by hand, in the shape the rewrite gives its output (the
// two imports of stint:sandbox, the countdown and the call stack's budget
// as the last two globals), that the verifier must accept or refuse on
// their own, whatever the rewrite does.

const (
	gCD     = 0 // the countdown global (no globals of the module's own)
	fIntr   = 0 // stint:sandbox.interrupt
	fFirst  = 2 // the first function of the module
	budget  = 1 << 15
	opLoop  = 0x03
	opIf    = 0x04
	opEnd   = 0x0b
	opBr    = 0x0c
	opBrIf  = 0x0d
	opCall  = 0x10
	opLGet  = 0x20
	opLSet  = 0x21
	opGGet  = 0x23
	opGSet  = 0x24
	opI64   = 0x42
	opSub64 = 0x7d
	opLtS64 = 0x53
)

// rewritten is a module of () -> () functions with the rewrite's imports
// and globals; locals gives each function that many i64 locals.
func rewritten(locals int, bodies ...[]byte) []byte {
	w := wasmtest.Cat
	var funcs, code [][]byte
	for _, b := range bodies {
		funcs = append(funcs, wasmtest.LEB(0))
		code = append(code, wasmtest.FBodyLocals([][2]uint64{{uint64(locals), 0x7e}}, b...))
	}
	imp := func(name string, t uint64) []byte {
		return w(wasmtest.Str("stint:sandbox"), wasmtest.Str(name), []byte{0}, wasmtest.LEB(t))
	}
	global := func(v int64) []byte { return w([]byte{0x7e, 1, opI64}, wasmtest.SLEB(v), []byte{opEnd}) }
	return wasmtest.Module(
		wasmtest.Sec(1, wasmtest.Vec(wasmtest.FuncType(nil, nil), wasmtest.FuncType([]byte{0x7e}, nil))),
		wasmtest.Sec(2, wasmtest.Vec(imp("interrupt", 1), imp("call_stack", 0))),
		wasmtest.Sec(3, wasmtest.Vec(funcs...)),
		wasmtest.Sec(6, wasmtest.Vec(global(budget), global(1<<22))),
		wasmtest.Sec(10, wasmtest.Vec(code...)),
	)
}

// chargeTest is the global countdown less w, tested: below 1, the refill
// and the interrupt.
func chargeTest(w int64) []byte {
	return wasmtest.Cat([]byte{opGGet, gCD, opI64}, wasmtest.SLEB(w), []byte{opSub64, opGSet, gCD,
		opGGet, gCD, opI64, 1, opLtS64, opIf, 0x40, opGGet, gCD, opI64}, wasmtest.SLEB(budget),
		[]byte{opGSet, gCD, opCall, fIntr, opEnd})
}

func TestVerifierOnHandWrittenModules(t *testing.T) {
	cat := wasmtest.Cat
	loopOf := func(body ...[]byte) []byte {
		return cat([]byte{opLoop, 0x40}, cat(body...), []byte{opBr, 0, opEnd, opEnd})
	}
	for _, c := range []struct {
		name   string
		wasm   []byte
		loops  bool
		accept bool
	}{
		{"a loop charged and tested", rewritten(0, loopOf(chargeTest(20))), true, true},
		{"a loop with no test", rewritten(0, loopOf()), true, false},
		{"a loop with no test in wazero mode (wazero tests its header)", rewritten(0, loopOf()), false, true},
		{"a loop charged but never tested", rewritten(0, loopOf([]byte{opGGet, gCD, opI64, 20, opSub64, opGSet, gCD})), true, false},
		{"a loop that charges less than it does", rewritten(0, loopOf(chargeTest(1), []byte{0x42, 0, 0x1a, 0x42, 0, 0x1a, 0x42, 0, 0x1a, 0x42, 0, 0x1a})), true, false},
		{"the countdown raised", rewritten(0, loopOf([]byte{opGGet, gCD, opI64, 0x7b, opSub64, opGSet, gCD}, chargeTest(20))), true, false},
		{"a refill with no interrupt", rewritten(0, loopOf(chargeTest(20), []byte{opI64, 0x80, 0x80, 0x02, opGSet, gCD})), true, false},
		{"a refill above 2B", rewritten(0, loopOf([]byte{opGGet, gCD, opI64, 20, opSub64, opGSet, gCD,
			opGGet, gCD, opI64, 1, opLtS64, opIf, 0x40, opGGet, gCD, opI64}, wasmtest.SLEB(3*budget), []byte{opGSet, gCD, opCall, fIntr, opEnd})), true, false},
		{"the countdown set to a sum", rewritten(0, loopOf(chargeTest(20), []byte{opI64, 1, opI64, 2, 0x7c, opGSet, gCD})), true, false},
		{"interrupt called with a constant", rewritten(0, []byte{opI64, 5, opCall, fIntr, opEnd}), true, false},
		{"a test that passes below 0", rewritten(0, loopOf([]byte{opGGet, gCD, opI64, 20, opSub64, opGSet, gCD,
			opGGet, gCD, opI64, 0x9c, 0x7f, opLtS64, opIf, 0x40, opGGet, gCD, opI64}, wasmtest.SLEB(budget), []byte{opGSet, gCD, opCall, fIntr, opEnd})), true, false},
		{"a recursion with no test", rewritten(0, []byte{opCall, fFirst, opEnd}), true, false},
		{"a recursion charged and tested at its entry", rewritten(0, cat(chargeTest(40), []byte{opCall, fFirst}, chargeTest(2), []byte{opEnd})), true, true},
		{"a call with the countdown cached and not written back", rewritten(1,
			[]byte{opGGet, gCD, opI64, 40, opSub64, opLSet, 0, opCall, fFirst + 1, opEnd}, cat(chargeTest(2), []byte{opEnd})), true, false},
		{"a call after the cache is written back", rewritten(1,
			[]byte{opGGet, gCD, opI64, 40, opSub64, opLSet, 0, opLGet, 0, opGSet, gCD, opCall, fFirst + 1, opEnd}, cat(chargeTest(40), []byte{opEnd})), true, true},
		{"a branch on the countdown that skips the test", rewritten(0, loopOf([]byte{opGGet, gCD, opI64, 20, opSub64, opGSet, gCD,
			opGGet, gCD, opI64, 1, opLtS64, 0x45, opBrIf, 0})), true, false},
	} {
		err := Module(c.wasm, Params{Budget: budget, Loops: c.loops})
		if c.accept && err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
		if !c.accept && err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// TestVerifierProofBudget: a module whose proof would take more steps
// than its budget is refused, not proved at any cost.
func TestVerifierProofBudget(t *testing.T) {
	wasm := rewritten(0, wasmtest.Cat([]byte{opLoop, 0x40}, chargeTest(20), []byte{opBr, 0, opEnd, opEnd}))
	if err := Module(wasm, Params{Budget: budget, Loops: true}); err != nil {
		t.Fatalf("refused with its budget: %v", err)
	}
	defer func(f func(int64) int64) { proofSteps = f }(proofSteps)
	proofSteps = func(int64) int64 { return 3 }
	err := Module(wasm, Params{Budget: budget, Loops: true})
	if err == nil || !strings.Contains(err.Error(), "passes over the module's code") {
		t.Fatalf("a proof over its budget: %v", err)
	}
}

// TestVerifierRefusesMalformed: what is not a rewritten module is an
// error, never a panic.
func TestVerifierRefusesMalformed(t *testing.T) {
	good := rewritten(0, []byte{opEnd})
	for i := range good {
		_ = Module(good[:i], Params{Budget: budget, Loops: true})
	}
	if err := Module([]byte("\x00asm\x01\x00\x00\x00"), Params{Budget: budget, Loops: true}); err == nil {
		t.Error("an empty module (no interrupt import) accepted")
	}
}
