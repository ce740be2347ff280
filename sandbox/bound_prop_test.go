package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// The bound (internal/rewrite, The bound), proved on random programs rather
// than on shapes: boundGen writes modules of nested counted loops (tested
// at the bottom, at the top, br_table state machines) spread over
// functions that call each other (recursion with and without loops,
// direct calls, call_indirect, leaves called from loops), if/else, early
// returns, breaks, host calls and bulk fills, entered from _start, from
// the start section, or as a plugin's export called twice on one
// instance; and, beside those shapes, what the red team of issue 37 found:
// functions over 2 KiB (and leaves near it), calls in one arm of an if in
// big and small functions, long straight runs of calls to leaves,
// recursions up to 300 deep unwinding through leaf calls, br_table into
// loops, a table rewritten at run time (table.set), and a start section
// with exports. Every piece of straight-line code the generator writes adds
// its own size in bytes to an exported global, ops: the oracle. The
// harness gives the rewritten module its own interrupt function, which
// reads ops at each call, and checks on every program:
//
//   - the bound: between two calls of the interrupt function (and from the
//     start to the first, and from the last to the end) the program runs
//     at most 4T bytes of its code, T = 4B the verifier's bound in units
//     (sandbox/internal/verify), a unit at most 4 bytes of code; the
//     verifier has accepted every program (prepareModule runs it);
//   - nothing uncharged: the work units counted are at least the bytes
//     run over 4;
//   - exact work however the run ends: ended by proc_exit or by a trap in
//     a host call at its k-th host call, a run counts exactly the units a
//     run that went on had counted at that call; ended inside the
//     interrupt function (a forced stop), exactly the refills.
//
// A fixed set of seeds runs in `make test` (boundSeeds); `make fuzz` runs
// many more from a random first seed (STINT_BOUND_SEEDS,
// STINT_BOUND_SEED0; a failure names its seed).

// boundSeeds is the first seed and how many random programs
// TestBoundRandomPrograms runs.
func boundSeeds() (first, n uint64) {
	n = 400
	if testing.Short() {
		n = 40
	}
	if v, err := strconv.ParseUint(os.Getenv("STINT_BOUND_SEEDS"), 10, 64); err == nil && v > 0 {
		n = v
	}
	first, _ = strconv.ParseUint(os.Getenv("STINT_BOUND_SEED0"), 10, 64)
	return first, n
}

// boundOpsCap and boundWorkCap end a program (at an interrupt call) once
// it has run this many bytes of its code, or done this much work: enough
// for dozens of interrupt calls.
const boundOpsCap, boundWorkCap = 6 << 20, 2 << 20

// Function and global indices of a generated program.
const (
	bgYield    = 0 // wasi_snapshot_preview1.sched_yield () -> i32 (resumable programs: poll_oneoff, a sleep)
	bgExit     = 1 // wasi_snapshot_preview1.proc_exit (i32) -> ()
	bgFirst    = 2 // f0
	bgOps      = 0 // the oracle: bytes of code run
	bgSeed     = 1 // a pseudo-random state the conditions read
	bgCounter0 = 1 // locals 1-3: loop counters by nesting
	bgScratch  = 5
)

// boundEntry is how a generated program is entered.
type boundEntry int

const (
	entryStart   boundEntry = iota // _start, as a command
	entrySection                   // the start section, inside instantiation
	entryExport                    // "run", twice on one instance, as a plugin's warm calls
	entryBoth                      // the start section, then "run" twice
)

func (e boundEntry) String() string {
	return [...]string{"_start", "start section", "export", "start section and export"}[e]
}

// boundT is the verifier's bound in units: 4B.
const boundT = 4 * interruptBudget

// boundProg is a generated program.
type boundProg struct {
	wasm  []byte
	entry boundEntry
}

// boundGen writes one program.
type boundGen struct {
	r      *rand.Rand
	b      []byte
	n      int    // functions f0..fn-1, of type (i32) -> (): the parameter is the depth left
	leaves []bool // functions that call no function of the module
	cur    int
	nest   int   // loops open in the function being written
	labels int   // blocks open in it (the function's own label not counted)
	budget int   // statements left to write in it
	calls  int   // calls written in it
	inLoop []int // the label of each open top-tested loop's exit block
	// fixed: a resumable program: no table.set (a snapshot does not hold
	// tables yet), and its host call is a sleep of a nanosecond
	// (poll_oneoff, a point: the sandbox can suspend the guest in it), or,
	// with reads, a read of a few bytes of stdin (fd_read, a point too),
	// which the conditions then read (the seed global).
	fixed, reads bool
}

func (g *boundGen) op(b ...byte) { g.b = append(g.b, b...) }
func (g *boundGen) i32(v int32)  { g.op(wasmbin.OpI32Const); g.op(wasmtest.SLEB(int64(v))...) }
func (g *boundGen) local(op byte, l int) {
	g.op(op)
	g.op(wasmtest.LEB(uint64(l))...)
}

// open and close track the labels a branch must count.
func (g *boundGen) open() int { g.labels++; return g.labels - 1 }
func (g *boundGen) close()    { g.labels-- }

// br branches (op: br or br_if) to the label opened as l.
func (g *boundGen) br(op byte, l int) { g.op(op); g.op(wasmtest.LEB(uint64(g.labels - 1 - l))...) }

// piece writes straight-line code that adds its own size to ops.
func (g *boundGen) piece() { g.pieceOf(1 + g.r.IntN(6)) }

// bigPiece is a piece of about 2 KiB: with it a function passes 2 KiB.
func (g *boundGen) bigPiece() { g.pieceOf(250 + g.r.IntN(60)) }

// pieceOf writes a piece of k additions.
func (g *boundGen) pieceOf(k int) {
	var filler []byte
	for range k {
		filler = append(filler, wasmbin.OpLocalGet, bgScratch, wasmbin.OpI32Const, byte(g.r.IntN(60)+1), 0x6a, wasmbin.OpLocalSet, bgScratch)
	}
	if g.r.IntN(2) == 0 { // the seed moves on: seed = seed*13 + 7
		filler = append(filler, wasmbin.OpGlobalGet, bgSeed, wasmbin.OpI32Const, 13, 0x6c, wasmbin.OpI32Const, 7, 0x6a, wasmbin.OpGlobalSet, bgSeed)
	}
	size := int64(len(filler) + 7)
	for len(wasmtest.SLEB(size))+len(filler)+6 > int(size) {
		size++
	}
	g.op(wasmbin.OpGlobalGet, bgOps, wasmbin.OpI64Const)
	g.op(wasmtest.SLEB(size)...)
	g.op(0x7c, wasmbin.OpGlobalSet, bgOps)
	g.op(filler...)
}

// cond pushes an i32 that is non-zero about half the time (bits of the
// seed and the scratch local).
func (g *boundGen) cond() {
	g.op(wasmbin.OpGlobalGet, bgSeed)
	g.i32(int32(1) << g.r.IntN(20))
	g.op(0x71) // i32.and
}

func (g *boundGen) stmts(k int) {
	for range k {
		if g.budget <= 0 {
			return
		}
		g.stmt()
	}
}

func (g *boundGen) stmt() {
	g.budget--
	canCall := !g.leaves[g.cur]
	switch k := g.r.IntN(20); {
	case k < 5:
		g.piece()
	case k < 8 && g.nest < 3:
		g.loop()
	case k < 10 && canCall:
		g.call()
	case k < 11 && canCall:
		g.callIndirect()
	case k < 12 && canCall:
		g.callLeaf()
	case k < 13:
		g.calls++
		if g.reads {
			g.read()
			break
		}
		if g.fixed {
			g.sleep()
			break
		}
		g.op(wasmbin.OpCall, bgYield, 0x1a) // a host call; drop
	case k < 15:
		g.cond()
		g.op(wasmbin.OpIf, 0x40)
		g.open()
		g.stmts(1 + g.r.IntN(3))
		if g.r.IntN(2) == 0 {
			g.op(wasmbin.OpElse)
			g.stmts(1 + g.r.IntN(3))
		}
		g.op(wasmbin.OpEnd)
		g.close()
	case k < 16:
		// An early return, about one time in eight.
		g.cond()
		g.cond()
		g.op(0x71)
		g.cond()
		g.op(0x71, wasmbin.OpIf, 0x40, wasmbin.OpReturn, wasmbin.OpEnd)
	case k < 17 && len(g.inLoop) > 0:
		// Leave the innermost top-tested loop early.
		g.cond()
		g.br(wasmbin.OpBrIf, g.inLoop[len(g.inLoop)-1])
	case k < 19 && g.r.IntN(4) == 0:
		// A trap, about one time in 32 it runs.
		for range 5 {
			g.cond()
		}
		g.op(0x71, 0x71, 0x71, 0x71, wasmbin.OpIf, 0x40, wasmbin.OpUnreachable, wasmbin.OpEnd)
	case k < 18 && g.r.IntN(2) == 0:
		// memory.fill of up to 2 KiB.
		g.i32(int32(g.r.IntN(1024)))
		g.i32(int32(g.r.IntN(256)))
		g.i32(int32(g.r.IntN(2048)))
		g.op(wasmbin.OpMiscPrefix, 11, 0)
	case k < 18 && !g.fixed:
		// The table rewritten at run time: any function in any slot.
		g.i32(int32(g.r.IntN(g.n)))
		g.op(wasmbin.OpRefFunc)
		g.op(wasmtest.LEB(uint64(bgFirst + g.r.IntN(g.n)))...)
		g.op(0x26, 0) // table.set 0
	case k < 19 && g.r.IntN(8) == 0:
		g.bigPiece()
	case k < 19 && canCall && g.r.IntN(6) == 0:
		// A long straight run of calls to one leaf.
		if f := g.pick(true); f >= 0 {
			g.calls++
			for range 20 + g.r.IntN(400) {
				g.local(wasmbin.OpLocalGet, 0)
				g.op(wasmbin.OpCall)
				g.op(wasmtest.LEB(uint64(bgFirst + f))...)
			}
		}
	default:
		g.piece()
	}
}

// loop writes a counted loop of one of three shapes around random
// statements.
func (g *boundGen) loop() {
	c := bgCounter0 + g.nest
	g.nest++
	defer func() { g.nest-- }()
	passes := 1 + g.r.IntN(24)
	if g.r.IntN(4) == 0 {
		passes = 1 + g.r.IntN(20000) // long enough for a loop without a test to show
	}
	g.i32(int32(passes))
	g.local(wasmbin.OpLocalSet, c)
	decr := func() {
		g.local(wasmbin.OpLocalGet, c)
		g.i32(1)
		g.op(0x6b) // i32.sub
		g.local(wasmbin.OpLocalSet, c)
	}
	// topTested opens a loop tested at the top, block (loop (br_if exit
	// (eqz c)) c-- ..., and returns the labels of the block and the loop.
	topTested := func() (exit, l int) {
		g.op(wasmbin.OpBlock, 0x40)
		exit = g.open()
		g.op(wasmbin.OpLoop, 0x40)
		l = g.open()
		g.local(wasmbin.OpLocalGet, c)
		g.op(0x45) // i32.eqz
		g.br(wasmbin.OpBrIf, exit)
		decr()
		return exit, l
	}
	switch g.r.IntN(3) {
	case 0: // tested at the bottom: loop ... br_if 0
		g.op(wasmbin.OpLoop, 0x40)
		l := g.open()
		if g.r.IntN(2) == 0 {
			// A pass that starts with a call, which may test the
			// countdown in the loop's stead (loopSite.callTested): of a
			// later function, so that it ends without a depth test.
			g.callLater()
		}
		g.stmts(1 + g.r.IntN(4))
		decr()
		g.local(wasmbin.OpLocalGet, c)
		g.br(wasmbin.OpBrIf, l)
		g.op(wasmbin.OpEnd)
		g.close()
	case 1: // tested at the top: block (loop (br_if 1 (eqz c)) ... (br 0))
		exit, l := topTested()
		g.inLoop = append(g.inLoop, exit)
		g.stmts(1 + g.r.IntN(4))
		g.inLoop = g.inLoop[:len(g.inLoop)-1]
		g.br(0x0c, l)
		g.op(wasmbin.OpEnd, wasmbin.OpEnd)
		g.close()
		g.close()
	default: // a br_table state machine: odd and even passes run different arms
		_, l := topTested()
		g.op(wasmbin.OpBlock, 0x40)
		b := g.open()
		g.op(wasmbin.OpBlock, 0x40)
		a := g.open()
		g.local(wasmbin.OpLocalGet, c)
		g.i32(3)
		g.op(0x71, wasmbin.OpBrTable, 2) // i32.and; br_table a b l l: a quarter of the passes go back to the loop's header
		g.op(wasmtest.LEB(uint64(g.labels - 1 - a))...)
		g.op(wasmtest.LEB(uint64(g.labels - 1 - b))...)
		g.op(wasmtest.LEB(uint64(g.labels - 1 - l))...)
		g.op(wasmbin.OpEnd)
		g.close()
		g.stmts(1 + g.r.IntN(2))
		g.br(0x0c, l)
		g.op(wasmbin.OpEnd)
		g.close()
		g.stmts(1 + g.r.IntN(2))
		g.br(0x0c, l)
		g.op(wasmbin.OpEnd, wasmbin.OpEnd)
		g.close()
		g.close()
	}
}

// callLater writes `f(d-1)`, unguarded, for a random function f after
// this one (nothing if there is none): calls without a depth test go only
// forward, so they end.
func (g *boundGen) callLater() {
	var later []int
	for f := g.cur + 1; f < g.n; f++ {
		later = append(later, f) // a leaf does not test: the loop must
	}
	if len(later) == 0 || g.leaves[g.cur] {
		return
	}
	g.calls++
	g.local(wasmbin.OpLocalGet, 0)
	g.i32(1)
	g.op(0x6b, wasmbin.OpCall)
	g.op(wasmtest.LEB(uint64(bgFirst + later[g.r.IntN(len(later))]))...)
}

// depthLeft pushes d > 0 (signed: callLater's calls may take it below 0).
func (g *boundGen) depthLeft() {
	g.local(wasmbin.OpLocalGet, 0)
	g.i32(0)
	g.op(0x4a) // i32.gt_s
}

// call writes `if d > 0 { f(d-1) }` for a random function f that calls.
func (g *boundGen) call() {
	f := g.pick(false)
	g.calls++
	g.depthLeft()
	g.op(wasmbin.OpIf, 0x40)
	g.local(wasmbin.OpLocalGet, 0)
	g.i32(1)
	g.op(0x6b, wasmbin.OpCall)
	g.op(wasmtest.LEB(uint64(bgFirst + f))...)
	g.op(wasmbin.OpEnd)
}

// callIndirect is call through the table, to any function.
func (g *boundGen) callIndirect() {
	g.calls++
	g.depthLeft()
	g.op(wasmbin.OpIf, 0x40)
	g.local(wasmbin.OpLocalGet, 0)
	g.i32(1)
	g.op(0x6b)
	g.i32(int32(g.r.IntN(g.n)))
	g.op(wasmbin.OpCallIndirect, 0, 0)
	g.op(wasmbin.OpEnd)
}

// callLeaf calls a leaf (its depth argument is the caller's: a leaf does
// not call).
func (g *boundGen) callLeaf() {
	f := g.pick(true)
	if f < 0 {
		g.piece()
		return
	}
	g.calls++
	g.local(wasmbin.OpLocalGet, 0)
	g.op(wasmbin.OpCall)
	g.op(wasmtest.LEB(uint64(bgFirst + f))...)
}

// pick returns a random leaf (or function that calls), -1 if none.
func (g *boundGen) pick(leaf bool) int {
	var c []int
	for i, l := range g.leaves {
		if l == leaf {
			c = append(c, i)
		}
	}
	if len(c) == 0 {
		return -1
	}
	return c[g.r.IntN(len(c))]
}

// genBoundProgram writes a random program (see the comment above).
func genBoundProgram(r *rand.Rand) boundProg { return genBound(r, -1) }

// sleepAt is where a resumable program's sleep keeps its subscription
// (48 bytes), its event (32) and the count of events.
const sleepAt = 0xf000

// sleep writes a call of poll_oneoff that sleeps a nanosecond: one
// relative clock subscription, written again before each call (a bulk
// fill may have written over it).
func (g *boundGen) sleep() {
	at := wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(sleepAt))
	g.op(at...)
	g.op(wasmbin.OpI64Const, 1, 0x37, 3, 24) // timeout: 1 ns; i64.store offset=24
	g.op(at...)
	g.op(wasmbin.OpI64Const, 0, 0x37, 3, 8) // the tag (0: clock) and its padding
	g.op(at...)
	g.op(wasmbin.OpI64Const, 1, 0x37, 3, 16) // the monotonic clock
	g.op(at...)
	g.op(wasmbin.OpI64Const, 0, 0x37, 3, 40) // flags: relative
	g.op(at...)
	g.op(wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(sleepAt+64), []byte{wasmbin.OpI32Const, 1, wasmbin.OpI32Const}, wasmtest.SLEB(sleepAt+96))...)
	g.op(wasmbin.OpCall, bgYield, 0x1a)
}

// readAt is where a resumable program's read of stdin keeps its iovec
// (8 bytes), the count read and the bytes (up to 16).
const readAt = 0xf100

// read writes a call of fd_read of 1 to 16 bytes of stdin (its iovec
// written again before each call), and folds the first four into the seed
// global, so that a byte read twice, or skipped, changes what runs.
func (g *boundGen) read() {
	at := wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(readAt))
	g.op(at...)
	g.op(wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(readAt+16), []byte{0x36, 2, 0})...) // i32.store: the buffer
	g.op(at...)
	g.op(wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(int64(1+g.r.IntN(16))), []byte{0x36, 2, 4})...) // its length
	g.op(wasmbin.OpI32Const, 0)
	g.op(at...)
	g.op(wasmtest.Cat([]byte{wasmbin.OpI32Const, 1, wasmbin.OpI32Const}, wasmtest.SLEB(readAt+8))...)
	g.op(wasmbin.OpCall, bgYield, 0x1a)
	g.op(wasmbin.OpGlobalGet, bgSeed)
	g.op(wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(readAt+16), []byte{0x28, 0, 0})...) // i32.load, unaligned
	g.op(0x73, wasmbin.OpGlobalSet, bgSeed)                                                         // i32.xor
}

// genBound is genBoundProgram, entered as force when it is not -1, and
// without table.set then.
func genBound(r *rand.Rand, force boundEntry) boundProg {
	n := 1 + r.IntN(6)
	g := &boundGen{r: r, n: n, leaves: make([]bool, n), fixed: force >= 0}
	if g.fixed {
		g.reads = r.IntN(2) == 0
	}
	for i := 1; i < n; i++ {
		g.leaves[i] = r.IntN(3) == 0 // f0 always calls
	}
	depth := 1 + r.IntN(5)
	if r.IntN(8) == 0 {
		depth = 50 + r.IntN(250) // a deep recursion, unwinding through what follows its calls
	}
	entry := boundEntry(r.IntN(4))
	if force >= 0 {
		entry = force
	}
	bodies := make([][]byte, 0, n+1)
	for i := range n {
		g.b, g.cur, g.nest, g.labels, g.calls, g.inLoop = nil, i, 0, 0, 0, nil
		g.budget = 4 + r.IntN(14)
		g.stmts(g.budget)
		g.op(wasmbin.OpEnd)
		bodies = append(bodies, wasmtest.FBodyLocals([][2]uint64{{5, wasmbin.TypeI32}}, g.b...))
	}
	main := wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(int64(depth)), []byte{wasmbin.OpCall}, wasmtest.LEB(bgFirst), []byte{wasmbin.OpEnd})
	host := ""
	switch {
	case g.reads:
		host = "fd_read"
	case g.fixed:
		host = "poll_oneoff"
	}
	wasm := boundModule(append(bodies, wasmtest.FBody(main...)), entry, r.Int32(), host)
	return boundProg{wasm: wasm, entry: entry}
}

// boundModule assembles a generated program: bodies are f0..fn-1, of type
// (i32) -> (), then main, of type () -> (), which is _start, "run" or the
// start function by entry; the functions f are in a table; ops is
// exported, the seed global starts at seed. Its first import is host
// (poll_oneoff or fd_read, of one type) when given, else sched_yield.
func boundModule(bodies [][]byte, entry boundEntry, seed int32, host string) []byte {
	n := len(bodies) - 1
	funcs := make([][]byte, 0, n+1)
	for range n {
		funcs = append(funcs, wasmtest.LEB(0))
	}
	funcs = append(funcs, wasmtest.LEB(1))
	mainIdx := uint64(bgFirst + n)
	exports := [][]byte{wasmtest.Cat(wasmtest.Str("ops"), []byte{3}, wasmtest.LEB(bgOps)), wasmtest.Cat(wasmtest.Str("memory"), []byte{2}, wasmtest.LEB(0))}
	switch entry {
	case entryStart:
		exports = append(exports, wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(mainIdx)))
	case entryExport, entryBoth:
		exports = append(exports, wasmtest.Cat(wasmtest.Str("run"), []byte{0}, wasmtest.LEB(mainIdx)))
	}
	elems := make([][]byte, n)
	for i := range elems {
		elems[i] = wasmtest.LEB(uint64(bgFirst + i))
	}
	hostImport := wasmtest.Cat(wasmtest.Str("wasi_snapshot_preview1"), wasmtest.Str("sched_yield"), []byte{0}, wasmtest.LEB(2))
	types := [][]byte{wasmtest.FuncType([]byte{wasmbin.TypeI32}, nil), wasmtest.FuncType(nil, nil), wasmtest.FuncType(nil, []byte{wasmbin.TypeI32})}
	if host != "" { // a type of its own, appended: the other programs' bytes stay as they were (TestRewriteOutputPinned)
		hostImport = wasmtest.Cat(wasmtest.Str("wasi_snapshot_preview1"), wasmtest.Str(host), []byte{0}, wasmtest.LEB(3))
		types = append(types, wasmtest.FuncType([]byte{wasmbin.TypeI32, wasmbin.TypeI32, wasmbin.TypeI32, wasmbin.TypeI32}, []byte{wasmbin.TypeI32}))
	}
	secs := [][]byte{
		wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(types...)),
		wasmtest.Sec(wasmbin.SecImport, wasmtest.Vec(hostImport,
			wasmtest.Cat(wasmtest.Str("wasi_snapshot_preview1"), wasmtest.Str("proc_exit"), []byte{0}, wasmtest.LEB(0)))),
		wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(funcs...)),
		wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(wasmtest.Cat([]byte{wasmbin.TypeFuncref, 0}, wasmtest.LEB(uint64(n))))),
		wasmtest.Sec(wasmbin.SecMemory, wasmtest.Vec([]byte{0, 1})),
		wasmtest.Sec(wasmbin.SecGlobal, wasmtest.Vec(
			[]byte{wasmbin.TypeI64, 1, wasmbin.OpI64Const, 0, wasmbin.OpEnd},
			wasmtest.Cat([]byte{wasmbin.TypeI32, 1, wasmbin.OpI32Const}, wasmtest.SLEB(int64(seed)), []byte{wasmbin.OpEnd}))),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(exports...)),
	}
	if entry == entrySection || entry == entryBoth {
		secs = append(secs, wasmtest.Sec(wasmbin.SecStart, wasmtest.LEB(mainIdx)))
	}
	secs = append(secs,
		wasmtest.Sec(wasmbin.SecElement, wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(0), []byte{wasmbin.OpI32Const, 0, wasmbin.OpEnd}, wasmtest.Vec(elems...)))),
		wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(bodies...)))
	return wasmtest.Module(secs...)
}

// boundHarness runs rewritten programs on wazero with its own interrupt
// and WASI functions (see boundRun). Close-on-context-done is on, with a
// deadline: should a program escape the checks, wazero ends it and the
// test fails instead of hanging.
type boundHarness struct {
	rt  wazero.Runtime
	run *boundRun // the run in progress
}

// boundRun is what one run saw and how it is to end.
type boundRun struct {
	wc         workCounter
	lastOps    int64 // ops at the last interrupt call
	maxDelta   int64 // the most bytes run between two interrupt calls
	interrupts int
	hostCalls  int
	units      []int64 // the work counted at each host call
	// exitAt, trapAt and stopAt end the run at that host call (proc_exit
	// 0, a trap) or interrupt call (a forced stop); 0: never.
	exitAt, trapAt, stopAt int
	capped                 bool // ended at boundOpsCap
}

// errBoundTrap is the trap a host call raises for trapAt.
var errBoundTrap = errors.New("bound test: trap in a host call")

// errBoundStop is the forced stop the interrupt function raises for stopAt.
var errBoundStop = errors.New("bound test: forced stop")

func newBoundHarness(t *testing.T) *boundHarness {
	ctx := context.Background()
	h := &boundHarness{rt: wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))}
	t.Cleanup(func() { _ = h.rt.Close(ctx) })
	ops := func(mod api.Module) int64 { return int64(mod.ExportedGlobal("ops").Get()) }
	_, err := h.rt.NewHostModuleBuilder(interruptModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, mod api.Module, stack []uint64) {
		run := h.run
		run.interrupts++
		o := ops(mod)
		run.maxDelta = max(run.maxDelta, o-run.lastOps)
		run.lastOps = o
		_ = run.wc.refilled(mod, int64(stack[0]))
		switch {
		case run.interrupts == run.stopAt:
			run.wc.endedInside = true
			panic(errBoundStop)
		case o > boundOpsCap || run.wc.refills > boundWorkCap:
			run.wc.endedInside, run.capped = true, true
			panic(sys.NewExitError(0))
		}
	}), []api.ValueType{api.ValueTypeI64}, nil).Export(interruptFunc).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(callStack), nil, nil).Export(callStackFunc).
		Instantiate(ctx)
	require.NoError(t, err)
	_, err = h.rt.NewHostModuleBuilder("wasi_snapshot_preview1").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, mod api.Module, stack []uint64) {
		run := h.run
		run.hostCalls++
		if !run.wc.known() {
			run.wc.use(mod)
		}
		run.units = append(run.units, run.wc.units())
		switch run.hostCalls {
		case run.exitAt:
			panic(sys.NewExitError(0))
		case run.trapAt:
			panic(errBoundTrap)
		}
		stack[0] = 0
	}), nil, []api.ValueType{api.ValueTypeI32}).Export("sched_yield").
		NewFunctionBuilder().WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
		panic(sys.NewExitError(uint32(stack[0])))
	}), []api.ValueType{api.ValueTypeI32}, nil).Export("proc_exit").
		Instantiate(ctx)
	require.NoError(t, err)
	return h
}

// exec runs p (already rewritten and compiled) as run, and returns its
// error (nil or an exit error of 0 for a run that ended well) and what it
// counted.
func (h *boundHarness) exec(t *testing.T, what string, cm wazero.CompiledModule, p boundProg, run *boundRun) (units, ops int64, err error) {
	h.run = run
	run.wc.start(nil, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mod, err := h.rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err == nil {
		switch p.entry {
		case entryStart:
			_, err = mod.ExportedFunction("_start").Call(ctx)
		case entryExport, entryBoth:
			if _, err = mod.ExportedFunction("run").Call(ctx); err == nil {
				_, err = mod.ExportedFunction("run").Call(ctx)
			}
		}
	}
	require.NoError(t, ctx.Err(), "%s: the run outlived its deadline: a program escaped the checks", what)
	if mod == nil {
		// Ended in its start function: the instance is closed, but its
		// globals, found by the host calls, can still be read.
		return run.wc.units(), run.lastOps, err
	}
	if !run.wc.known() {
		run.wc.use(mod)
	}
	units, ops = run.wc.units(), int64(mod.ExportedGlobal("ops").Get())
	_ = mod.Close(context.Background())
	return units, ops, err
}

// TestBoundRandomPrograms: see the comment at the top of this file.
func TestBoundRandomPrograms(t *testing.T) {
	t.Parallel()
	h := newBoundHarness(t)
	lim := ModuleLimits{}.WithDefaults()
	first, n := boundSeeds()
	for seed := first; seed < first+n; seed++ {
		p := genBoundProgram(rand.New(rand.NewPCG(seed, 23)))
		what := fmt.Sprintf("seed %d (%s)", seed, p.entry)
		rw, err := prepareModule(p.wasm, &lim, true, false)
		require.NoError(t, err, what)
		cm, err := h.rt.CompileModule(context.Background(), rw.Wasm)
		require.NoError(t, err, what)

		full := &boundRun{}
		units, ops, err := h.exec(t, what, cm, p, full)
		trapped := err != nil && !isExit0(err)
		if trapped {
			require.Contains(t, err.Error(), "unreachable", what)
		}
		if p.entry == entrySection && full.capped {
			ops = full.lastOps // the start function ended at the cap: its instance is gone
		}
		bound := int64(4 * boundT)
		if testing.Verbose() {
			t.Logf("%s: %d interrupt calls, at most %d bytes between two (%.2f of the bound)", what, full.interrupts, full.maxDelta, float64(full.maxDelta)/float64(bound))
		}
		require.LessOrEqual(t, full.maxDelta, bound, "%s: bytes run between two interrupt calls", what)
		require.LessOrEqual(t, ops-full.lastOps, bound, "%s: bytes run after the last interrupt call", what)
		if !full.capped && !trapped {
			// (A trap leaves out what its frame counted since its last
			// call: see work.go.)
			require.GreaterOrEqual(t, 4*units, ops, "%s: every byte run is charged", what)
		}

		// Ended at a host call by proc_exit or a trap: exactly what the
		// full run had counted there.
		if len(full.units) > 0 {
			k := 1 + rand.New(rand.NewPCG(seed, 1)).IntN(len(full.units))
			for _, end := range []string{"proc_exit", "trap"} {
				run := &boundRun{exitAt: k}
				if end == "trap" {
					run = &boundRun{trapAt: k}
				}
				got, _, err := h.exec(t, what, cm, p, run)
				require.Error(t, err, what)
				require.Equal(t, full.units[k-1], got, "%s: ended by %s at host call %d of %d", what, end, k, len(full.units))
			}
		}
		// Ended inside the interrupt function (a forced stop, the work
		// budget): exactly the refills, which the full run had reached.
		if full.interrupts > 1 {
			j := 1 + rand.New(rand.NewPCG(seed, 2)).IntN(full.interrupts-1)
			run := &boundRun{stopAt: j}
			got, _, err := h.exec(t, what, cm, p, run)
			require.ErrorIs(t, err, errBoundStop, what)
			require.Equal(t, run.wc.refills, got, what)
			require.Less(t, got, units, what)
		}
		_ = cm.Close(context.Background())
	}
}

// isExit0 reports whether err is a guest's exit with code 0.
func isExit0(err error) bool {
	var e *sys.ExitError
	return errors.As(err, &e) && e.ExitCode() == 0
}

// nestedShape is the red team's escape of rewrite version 20 as a
// family: depth functions, each a loop calling the next, the innermost a
// counted loop of 1,000 passes, the outermost looping forever; each loop
// pass adds its size to ops. The harness ends it at boundOpsCap.
func nestedShape(depth int, entry boundEntry) boundProg {
	tick := func(size int64) []byte {
		return wasmtest.Cat([]byte{wasmbin.OpGlobalGet, bgOps, wasmbin.OpI64Const}, wasmtest.SLEB(size), []byte{0x7c, wasmbin.OpGlobalSet, bgOps})
	}
	counted := func(inner []byte) []byte { // i = 1000; loop { inner; i--; br_if i }
		pass := wasmtest.Cat(inner, []byte{wasmbin.OpLocalGet, 1, wasmbin.OpI32Const, 1, 0x6b, wasmbin.OpLocalTee, 1, wasmbin.OpBrIf, 0, wasmbin.OpEnd})
		pass = wasmtest.Cat(tick(int64(len(pass)+10)), pass)
		return wasmtest.Cat([]byte{wasmbin.OpI32Const}, wasmtest.SLEB(1000), []byte{wasmbin.OpLocalSet, 1, wasmbin.OpLoop, 0x40}, pass)
	}
	var bodies [][]byte
	for i := range depth {
		var code []byte
		switch {
		case i == 0: // loop { call f1; br 0 }
			code = wasmtest.Cat([]byte{wasmbin.OpLoop, 0x40}, tick(18), []byte{wasmbin.OpI32Const, 0, wasmbin.OpCall, bgFirst + 1, 0x0c, 0, wasmbin.OpEnd})
		case i == depth-1:
			code = counted(nil)
		default:
			code = counted([]byte{wasmbin.OpI32Const, 0, wasmbin.OpCall, byte(bgFirst + i + 1)})
		}
		bodies = append(bodies, wasmtest.FBodyLocals([][2]uint64{{5, wasmbin.TypeI32}}, append(code, wasmbin.OpEnd)...))
	}
	bodies = append(bodies, wasmtest.FBody(wasmbin.OpI32Const, 0, wasmbin.OpCall, bgFirst, wasmbin.OpEnd))
	return boundProg{wasm: boundModule(bodies, entry, 0, ""), entry: entry}
}

// TestBoundNestedLoops: nested loop functions at depths 2-6, entered from
// _start, the start section and an export, reach the interrupt function
// every interruptBudget units, as any program must (rewrite version 20
// reached it once per ~10^11 units at depth 3).
func TestBoundNestedLoops(t *testing.T) {
	t.Parallel()
	h := newBoundHarness(t)
	lim := ModuleLimits{}.WithDefaults()
	for depth := 2; depth <= 6; depth++ {
		for _, entry := range []boundEntry{entryStart, entrySection, entryExport} {
			what := fmt.Sprintf("depth %d from %s", depth, entry)
			p := nestedShape(depth, entry)
			rw, err := prepareModule(p.wasm, &lim, true, false)
			require.NoError(t, err, what)
			cm, err := h.rt.CompileModule(context.Background(), rw.Wasm)
			require.NoError(t, err, what)
			run := &boundRun{}
			_, _, err = h.exec(t, what, cm, p, run)
			require.True(t, isExit0(err), "%s: %v", what, err)
			require.True(t, run.capped, what)
			require.Greater(t, run.interrupts, 10, what)
			require.LessOrEqual(t, run.maxDelta, int64(4*boundT), what)
			_ = cm.Close(context.Background())
		}
	}
}
