package rewrite

import (
	"math/rand/v2"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// randProgram writes a random valid module that always terminates: n
// functions f0..fn-1 of type (i32, i32) -> i32 made of arithmetic, locals,
// two mutable globals, memory loads and stores, if/else, blocks with
// br_if, br_table switches, returns and branches to the function's
// label (br_if, br_table) from any depth, counted loops (some with parameters, through
// a type-index block type) nested up to three deep, loops the rewrite
// may unroll (left early by br_if or br_table to the block around them,
// or by returns and branches to the function's label), and calls (direct
// and through a table) to lower-numbered functions only, outside loops.
// fn-1 is exported as "run"; sometimes a start function sets globals and
// memory first. It is for comparing a module with its rewrite.
func randProgram(r *rand.Rand) []byte {
	n := 1 + r.IntN(6)
	withStart := r.IntN(3) == 0
	g := &progGen{r: r}
	types := wasmtest.Vec(wasmtest.FuncType([]byte{typeI32, typeI32}, []byte{typeI32}), wasmtest.FuncType(nil, nil))
	funcs := make([][]byte, 0, n+1)
	bodies := make([][]byte, 0, n+1)
	for i := 0; i < n; i++ {
		funcs = append(funcs, wasmtest.LEB(0))
		g.cur, g.calls = i, 2
		bodies = append(bodies, g.function(true))
	}
	secs := [][]byte{wasmtest.Sec(secType, types)}
	var startSec []byte
	if withStart {
		funcs = append(funcs, wasmtest.LEB(1))
		g.cur, g.calls = n, 2
		bodies = append(bodies, g.function(false))
		startSec = wasmtest.Sec(secStart, wasmtest.LEB(uint64(n)))
	}
	secs = append(secs, wasmtest.Sec(secFunction, wasmtest.Vec(funcs...)))
	secs = append(secs, wasmtest.Sec(secTable, wasmtest.Vec(wasmtest.Cat([]byte{typeFuncref, 1}, wasmtest.LEB(uint64(n)), wasmtest.LEB(uint64(n))))))
	secs = append(secs, wasmtest.Sec(secMemory, wasmtest.Vec([]byte{0, 1})))
	secs = append(secs, wasmtest.Sec(secGlobal, wasmtest.Vec(
		wasmtest.Cat([]byte{typeI32, 1, opI32Const}, wasmtest.SLEB(int64(r.Int32())), []byte{opEnd}),
		wasmtest.Cat([]byte{typeI32, 1, opI32Const}, wasmtest.SLEB(int64(r.Int32())), []byte{opEnd}))))
	secs = append(secs, wasmtest.Sec(secExport, wasmtest.Vec(
		wasmtest.Cat(wasmtest.Str("run"), []byte{0}, wasmtest.LEB(uint64(n-1))),
		wasmtest.Cat(wasmtest.Str("memory"), []byte{2}, wasmtest.LEB(0)))))
	if startSec != nil {
		secs = append(secs, startSec)
	}
	elems := make([][]byte, n)
	for i := range elems {
		elems[i] = wasmtest.LEB(uint64(i))
	}
	secs = append(secs, wasmtest.Sec(secElement, wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(0), []byte{opI32Const, 0, opEnd}, wasmtest.Vec(elems...)))))
	secs = append(secs, wasmtest.Sec(secCode, wasmtest.Vec(bodies...)))
	return wasmtest.Module(secs...)
}

// progGen writes one function at a time.
type progGen struct {
	r         *rand.Rand
	b         []byte
	cur       int // the function being written: it may call 0..cur-1
	calls     int // calls it may still make
	loopDepth int
	budget    int  // instructions left to write
	labels    int  // blocks open around the code being written (the function's label not counted)
	returns   bool // the function returns an i32
}

// Locals: 0-1 parameters (of the (i32, i32) -> i32 functions), 2-7
// scratch, 8-10 loop counters by depth.
const (
	progLocals   = 11
	progCounter0 = 8
)

func (g *progGen) op(b ...byte) { g.b = append(g.b, b...) }

func (g *progGen) function(returns bool) []byte {
	g.b, g.loopDepth, g.budget, g.labels, g.returns = nil, 0, 300, 0, returns
	for range 1 + g.r.IntN(4) {
		g.stmt(3)
	}
	if returns {
		g.expr(3)
	}
	g.op(opEnd)
	locals := [][2]uint64{{progLocals - 2, typeI32}}
	if !returns {
		locals = [][2]uint64{{progLocals, typeI32}}
	}
	return wasmtest.FBodyLocals(locals, g.b...)
}

func (g *progGen) i32(v int32) { g.op(opI32Const); g.op(wasmtest.SLEB(int64(v))...) }

func (g *progGen) local(op byte, k int) { g.op(op); g.op(wasmtest.LEB(uint64(k))...) }

// counter is the local a loop at the current depth counts in; ok is
// false past three nested loops, where it has written a plain statement
// in the loop's place.
func (g *progGen) counter() (c int, ok bool) {
	if g.loopDepth >= 3 {
		g.stmt(0)
		return 0, false
	}
	return progCounter0 + g.loopDepth, true
}

// decrement writes c = c - 1, stored by set: local.set (0x21), or
// local.tee (0x22), which leaves the new count for a br_if.
func (g *progGen) decrement(c int, set byte) {
	g.local(0x20, c)
	g.i32(1)
	g.op(0x6b) // sub
	g.local(set, c)
}

func (g *progGen) scratch() int {
	if g.cur >= 0 && g.r.IntN(3) == 0 {
		return g.r.IntN(2) // a parameter
	}
	return 2 + g.r.IntN(6)
}

// callArgs writes the two arguments of a call from an expression of
// depth, or, where no call may stand (in a loop, with no calls left, in
// the first function), a plain expression in the call's place and false.
func (g *progGen) callArgs(depth int) bool {
	if g.loopDepth > 0 || g.calls == 0 || g.cur == 0 {
		g.expr(depth - 1)
		return false
	}
	g.calls--
	g.expr(depth - 1)
	g.expr(depth - 1)
	return true
}

// ifElse writes an if/else of block type bt on a condition of depth,
// each arm written by arm (g.expr or g.stmt) at depth-1.
func (g *progGen) ifElse(bt byte, arm func(depth int), depth int) {
	g.expr(depth - 1)
	g.op(opIf, bt)
	g.labels++
	arm(depth - 1)
	g.op(opElse)
	arm(depth - 1)
	g.labels--
	g.op(opEnd)
}

// expr writes instructions that push one i32.
func (g *progGen) expr(depth int) {
	g.budget--
	if depth <= 0 || g.budget <= 0 {
		switch g.r.IntN(3) {
		case 0:
			g.i32(g.r.Int32N(200) - 100)
		case 1:
			g.local(0x20, g.scratch()) // local.get
		default:
			g.op(opGlobalGet, byte(g.r.IntN(2)))
		}
		return
	}
	switch g.r.IntN(11) {
	case 0, 1: // binary
		g.expr(depth - 1)
		g.expr(depth - 1)
		ops := []byte{0x6a, 0x6b, 0x6c, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x6e, 0x6f, 0x46, 0x48, 0x4b}
		g.op(ops[g.r.IntN(len(ops))])
	case 2: // unary
		g.expr(depth - 1)
		ops := []byte{0x45, 0x67, 0x68, 0x69, 0xc0, 0xc1}
		g.op(ops[g.r.IntN(len(ops))])
	case 3: // select
		g.expr(depth - 1)
		g.expr(depth - 1)
		g.expr(depth - 1)
		g.op(0x1b)
	case 4: // if/else with a result
		g.ifElse(typeI32, g.expr, depth)
	case 5: // a block left early by br_if with a value
		g.op(opBlock, typeI32)
		g.labels++
		g.expr(depth - 1)
		g.expr(depth - 1)
		g.op(0x0d, 0, 0x1a) // br_if 0, drop
		g.expr(depth - 1)
		g.labels--
		g.op(opEnd)
	case 6: // a direct call
		if !g.callArgs(depth) {
			return
		}
		g.op(0x10)
		g.op(wasmtest.LEB(uint64(g.r.IntN(g.cur)))...)
	case 7: // an indirect call to a lower function
		if !g.callArgs(depth) {
			return
		}
		g.expr(depth - 1)
		g.i32(0x7fffffff)
		g.op(0x71) // and
		g.i32(int32(g.cur))
		g.op(0x70)       // rem_u
		g.op(0x11, 0, 0) // call_indirect type 0, table 0
	case 8: // a load
		g.expr(depth - 1)
		g.i32(0xffc)
		g.op(0x71, 0x28, 2, 0) // and, i32.load align 2 offset 0
	case 9: // local.tee
		g.expr(depth - 1)
		g.local(0x22, 2+g.r.IntN(6))
	default: // statements, then a value
		g.op(opBlock, typeI32)
		g.labels++
		g.stmt(depth - 1)
		g.expr(depth - 1)
		g.labels--
		g.op(opEnd)
	}
}

// stmt writes instructions that leave the stack as it was.
func (g *progGen) stmt(depth int) {
	g.budget--
	if depth <= 0 || g.budget <= 0 {
		g.expr(0)
		g.local(0x21, 2+g.r.IntN(6)) // local.set
		return
	}
	switch g.r.IntN(14) {
	case 10: // a conditional return, from wherever it is
		g.expr(depth - 1)
		g.op(opIf, 0x40)
		g.labels++
		if g.returns {
			g.expr(depth - 1)
		}
		g.op(opReturn)
		g.labels--
		g.op(opEnd)
	case 11: // a branch to the function's label: br_if, or br_table (with a value if it returns one)
		if g.r.IntN(2) == 0 {
			if g.returns {
				g.expr(depth - 1)
			}
			g.expr(depth - 1)
			g.op(opBrIf)
			g.op(wasmtest.LEB(uint64(g.labels))...)
			if g.returns {
				g.op(0x1a) // drop
			}
			break
		}
		bt := byte(0x40)
		if g.returns {
			bt = typeI32
		}
		g.op(opBlock, bt)
		g.labels++
		if g.returns {
			g.expr(depth - 1)
		}
		g.expr(depth - 1)
		g.op(opBrTable, 1) // one target: the function's label; default: the block
		g.op(wasmtest.LEB(uint64(g.labels))...)
		g.op(0)
		g.labels--
		g.op(opEnd)
		if g.returns {
			g.op(0x1a) // drop
		}
	case 0:
		g.expr(depth - 1)
		g.local(0x21, g.scratch())
	case 1:
		g.expr(depth - 1)
		g.op(opGlobalSet, byte(g.r.IntN(2)))
	case 2: // a store
		g.expr(depth - 1)
		g.i32(0xffc)
		g.op(0x71)
		g.expr(depth - 1)
		g.op(0x36, 2, 0) // i32.store align 2 offset 0
	case 3, 4: // a counted loop closed by br_if
		c, ok := g.counter()
		if !ok {
			return
		}
		g.i32(1 + g.r.Int32N(6))
		g.local(0x21, c)
		g.op(opLoop, 0x40)
		g.loopDepth++
		g.labels++
		for range 1 + g.r.IntN(3) {
			g.stmt(depth - 1)
		}
		g.labels--
		g.loopDepth--
		g.decrement(c, 0x22)
		g.op(0x0d, 0, opEnd) // br_if 0, end
	case 5: // if/else
		g.ifElse(0x40, g.stmt, depth)
	case 6: // a br_table switch of three cases
		g.op(opBlock, 0x40, opBlock, 0x40, opBlock, 0x40)
		g.labels += 3
		g.expr(depth - 1)
		g.op(opBrTable, 2, 0, 1, 2, opEnd)
		g.labels--
		g.stmt(depth - 1)
		g.op(0x0c, 1, opEnd) // br 1 (out of the switch), end
		g.labels--
		g.stmt(depth - 1)
		g.labels--
		g.op(opEnd)
	case 7: // a loop left through an outer block, closed by br
		c, ok := g.counter()
		if !ok {
			return
		}
		g.i32(g.r.Int32N(6))
		g.local(0x21, c)
		g.op(opBlock, 0x40, opLoop, 0x40)
		g.labels += 2
		g.local(0x20, c)
		g.op(0x45, 0x0d, 1) // eqz, br_if 1
		g.loopDepth++
		g.stmt(depth - 1)
		g.loopDepth--
		g.labels -= 2
		g.decrement(c, 0x21)
		g.op(0x0c, 0, opEnd, opEnd) // br 0, end, end
	case 8: // a loop with parameters (block type: type 0, (i32 i32) -> i32)
		c, ok := g.counter()
		if !ok {
			return
		}
		g.expr(depth - 1) // may hold loops of this depth: set the counter after
		g.expr(depth - 1)
		g.i32(1 + g.r.Int32N(6))
		g.local(0x21, c)
		g.op(opLoop, 0) // type 0
		g.op(0x6a)      // add
		g.local(0x22, 2)
		g.local(0x20, 2)
		g.decrement(c, 0x22)
		g.op(0x0d, 0, 0x1a, opEnd) // br_if 0, drop, end
		g.local(0x21, 3+g.r.IntN(5))
	case 12, 13: // a loop the rewrite may unroll: left early by br_if or br_table to the block around it
		c, ok := g.counter()
		if !ok {
			return
		}
		g.i32(1 + g.r.Int32N(9))
		g.local(0x21, c)
		g.op(opBlock, 0x40, opLoop, 0x40)
		g.labels += 2
		g.loopDepth++
		if g.r.IntN(2) == 0 {
			g.stmt(depth - 2)
		}
		switch g.r.IntN(3) {
		case 0: // br_if out of both
			g.expr(depth - 2)
			g.op(opBrIf, 1)
		case 1: // br_table from a block in the loop: on, out, or the loop's end
			g.op(opBlock, 0x40)
			g.labels++
			g.expr(depth - 2)
			g.op(opBrTable, 2, 0, 2, 0)
			g.labels--
			g.op(opEnd)
		}
		g.stmt(depth - 2)
		g.loopDepth--
		g.labels -= 2
		g.decrement(c, 0x22)
		g.op(0x0d, 0, opEnd, opEnd) // br_if 0, end, end
	default: // a block left early
		g.op(opBlock, 0x40)
		g.labels++
		g.expr(depth - 1)
		g.op(0x0d, 0)
		g.stmt(depth - 1)
		g.labels--
		g.op(opEnd)
	}
}
