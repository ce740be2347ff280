package rewrite

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// editKind says what a bodyEdit does.
type editKind uint8

const (
	editFunc    editKind = iota // replace a function index (call, ref.func) with value
	editLabel                   // replace a branch label with value
	editLoop                    // a loop's opcode and block type: the loop, wrapped, and its check (value: its index in loops)
	editLoopEnd                 // after a loop's end: the end of its wrapper (value: its index in loops)
	editReturn                  // a return: with the call-stack limit, the frame is released before it (value: its label, unused)
	editCharge                  // in a loop, where a segment starts: its weight taken from the loop counter (value: its index in bodyScan.chargeW)
	editBulk                    // a bulk memory or table operation: a call of the rewrite's charge function before it (value 0: the operation is not in the edit), or memory.copy or memory.fill replaced by a call of its copy or fill function (value: its 0xFC sub-opcode, 10 or 11; bulkHelpers)
	editSync                    // around a call, in a function with loop checks: the cached countdown written back to the global before it (value 0), read again after it (value 1)
)

// bodyEdit is one change the rewrite makes to a body: bytes [pos, end) of
// the original are replaced (pos == end: something is inserted at pos).
type bodyEdit struct {
	pos, end int
	kind     editKind
	value    uint32
}

// loopSite is one loop of a body.
type loopSite struct {
	btStart, btEnd int // its block type's bytes
	start, end     int // from its opcode to just after its end
	// inline: the loop takes parameters, and its check goes inside it
	// (docs/rewrite.md) instead of wrapping it.
	inline bool
	// calls counts the call instructions in the loop (nested loops
	// included); hostCalls those to an imported function; extra is what
	// its calls add to its weight for the work of their callees that no
	// check of theirs counts (bodyEnv.callees).
	calls, hostCalls uint32
	extra            int64
	// sets is where, in bodyScan.loopSets, the loop's carried locals
	// are: those it writes (nested loops included) whose first access in
	// it (in the order of the code) reads them, an approximation of the
	// locals it writes that are live at its header; at most maxLoopSets.
	// The slow path redefines them (docs/rewrite.md).
	setsStart, setsEnd int
	// outer is the loop around this one (its index in loops), -1 if none.
	outer int
	// unroll: the rewrite copies the loop's body UnrollCopies times (see
	// docs/rewrite.md, Unrolling).
	unroll bool
	// head is the weight of the loop's header segment, what its check
	// takes (docs/rewrite.md, Segments); an unrolled loop's check takes
	// the whole body's instead.
	head int64
	// callTested: every pass calls a function that tests the countdown
	// at its entry before any control instruction in the loop, so its
	// check only charges (see the package documentation, The bound).
	callTested bool
}

// UnrollCopies is how many copies of an unrollable loop's body the
// rewrite makes (1: none); a variable only for benchmarks.
var UnrollCopies = 4

// maxUnrollBody is the largest body (bytes of code between the loop's
// block type and its end) the rewrite unrolls: the copies grow the code
// by at most (UnrollCopies-1) times this per loop.
const maxUnrollBody = 128

// maxLoopSets is how many of the locals a loop writes its slow path
// redefines (more cost only speed, never correctness).
const maxLoopSets = 16

// maxLoopAccess is how many locals a loop frame tracks the accesses of.
const maxLoopAccess = 64

// localAccess is what a loop does with one local: whether its first
// access reads it, and whether it writes it.
type localAccess struct {
	local          uint32
	firstRead, set bool
}

// wrapperFrames is how many frames wrapping a loop adds around it.
const wrapperFrames = 3

// bodyScan is what a scan of one function body found.
type bodyScan struct {
	codeStart int // offset of the first instruction (after the locals)
	groups    uint32
	locals    uint32 // locals declared (parameters not included)
	edits     []bodyEdit
	chargeW   []int64 // the weights of the editCharge edits
	loops     []loopSite
	loopSets  []uint32 // each loop's carried locals (loopSite.setsStart)
	// calls reports a call that may lead back to this function: to a
	// function of the module (not an import) or through a table.
	calls bool
	// callCount counts the call instructions so far; hostCallCount those
	// to an imported function; callExtra sums what they add to a weight
	// (bodyEnv.callees, bodyEnv.indirect).
	callCount, hostCallCount uint32
	callExtra                int64
	// maxHeight bounds the operand stack's height from above (see
	// stackNet): values held on it across a call take room in the
	// frame, as locals do.
	maxHeight uint32
	// The largest values seen, for measurements.
	maxDepth, maxBrTable, maxBranches uint32
	// blocks counts the body's blocks, loops and ifs; loopCount its loops
	// (Modulelimits.MaxLoops).
	blocks, loopCount uint32
	// The calling arm (docs/rewrite.md): when every call of a body without
	// loops lies in one arm of one if, and no branch leaves that arm but
	// to the if's own label, the rewrite moves the entry checks into that
	// arm. sinkStart is where the arm's code starts (after the if's block
	// type or its else; 0: no calling arm), sinkEnd where the else or end
	// that closes it is, sinkBT the if's block type.
	sinkStart, sinkEnd int
	sinkBT             []byte
	// rest* are the counts at the end of the first call that may lead
	// back to this function (restFrom: 0 if none), for the exit check's
	// weight (restWeight).
	restFrom            int
	restCalls, restHost uint32
	restExtra           int64
	// split: every segment of the body has its charge and test (its
	// weight passed BigWeight: bodyEnv.split); entryW is the first
	// segment's weight, what the entry check takes; chargeTest says, for
	// each charge, whether it tests too.
	split     bool
	entryW    int64
	splitRest int64 // the most any segment weighs after its first call
	// loopMax is the heaviest loop's weight, loopsW what the outermost
	// loops weigh together (heavy).
	loopMax, loopsW int64
	chargeTest      []bool
	// calleeFuncs lists the functions of the module the body calls
	// directly, indirectTypes the types of its call_indirects: its edges
	// in the call graph (exitChecks).
	calleeFuncs, indirectTypes []uint32
	// bulk reports a bulk memory or table operation (editBulk).
	bulk bool
	// refFunc reports a ref.func: a function may reach a table.
	refFunc bool
}

// BigWeight is the most a function may weigh (its code and what its calls
// add) and keep one charge at its entry for all of its code outside loops:
// a heavier one is split (bodyEnv.split), every segment charged and tested
// where it starts, and no segment heavier than SplitWeight, so that no
// path between two tests passes the verifier's bound (sandbox/internal/verify).
const BigWeight, SplitWeight = InterruptBudget / 4, InterruptBudget / 2

// segEntry is the open segment's loop when it is the function's first
// segment, charged by its entry check (split functions).
const segEntry = -2

// maxCharges is how many segment charges (editCharge, about 7 bytes
// each) a body of size bytes may get: with more, its loops' checks take
// their whole bodies (docs/rewrite.md, Segments). A body made of `block
// end` pairs in a loop would otherwise grow several times over, and
// wazero's compile time with it; this bounds the growth to less than
// the body's size (the Go guests stay far below it).
func maxCharges(size int) int { return 64 + size/8 }

// noTarget is a frame's minTarget before any branch in it.
const noTarget = 1 << 30

// bodyEnv is what scanning a body needs to know of its module.
type bodyEnv struct {
	lim           *Limits
	numTypes      uint32
	globals       uint32 // globals of the original module: global.get/set must name one
	funcs         uint32 // functions, imported and defined: call and ref.func must name one
	importedFuncs uint32 // function indices from here on move up by addedFuncs (the added imports)
	fn            uint32 // the function's index, for messages
	wrapLoops     bool   // record the edits that wrap each loop (InterruptChecks)
	// split: the function weighs more than BigWeight; every segment of
	// its code, in loops or not, gets its own charge and test (see
	// bodyScan.split).
	split       bool
	typeParams  []uint32 // each type's number of parameters
	typeResults []uint32 // each type's number of results
	funcTypes   []uint32 // each function's type
	params      uint32   // the function's parameters
	// callees is, for each function, what a direct call of it adds to
	// the weight of the code that calls it: the work its own checks do
	// not count (uncounted); indirect is the same for a call_indirect of
	// each type, the most of any function of that type. Nil in the
	// validation pass, which computes them.
	callees, indirect []int64
	// pure is, for each function, whether a call of it may skip the
	// countdown's write-back and reload (a function that neither reads
	// nor writes the countdown: see pureLeaf); indirectPure the same for
	// a call_indirect of each type. Nil: every call syncs.
	pure, indirectPure []bool
	// tested is, for each function, whether it tests the countdown at
	// its entry (it calls and has no calling arm, or is large). Nil: no
	// loop's test is left to a callee.
	tested []bool
}

// scanBody checks one function body (locals, then instructions up to its
// final end) against the limits and records the rewrite's edits: function
// indices to move up, loops to wrap and the branch labels that wrapping
// moves. scan reuses the slices of a previous result.
func scanBody(body []byte, env bodyEnv, scan bodyScan) (bodyScan, error) {
	r := wreader{wasmbin.Reader{B: body}}
	groups, err := r.U32()
	if err != nil {
		return bodyScan{}, fmt.Errorf("function %d: locals: %w", env.fn, err)
	}
	var locals uint64
	for range groups {
		n, err := r.U32()
		if err != nil {
			return bodyScan{}, fmt.Errorf("function %d: locals: %w", env.fn, err)
		}
		t, err := r.Byte()
		if err != nil {
			return bodyScan{}, fmt.Errorf("function %d: locals: %w", env.fn, err)
		}
		if !isValType(t) {
			return bodyScan{}, fmt.Errorf("function %d: local of unknown type 0x%02x", env.fn, t)
		}
		locals += uint64(n)
		if locals > uint64(env.lim.MaxLocals) {
			return bodyScan{}, overLimit(fmt.Sprintf("function %d declares %d or more locals", env.fn, locals), "max_locals", uint64(env.lim.MaxLocals))
		}
	}
	scan = bodyScan{codeStart: r.Pos, groups: groups, locals: uint32(locals), edits: scan.edits[:0], loops: scan.loops[:0],
		loopSets: scan.loopSets[:0], chargeW: scan.chargeW[:0], chargeTest: scan.chargeTest[:0],
		calleeFuncs: scan.calleeFuncs[:0], indirectTypes: scan.indirectTypes[:0]}
	// The open blocks, the function's own first. branches counts the
	// branches to each: wazero adds a branch to its target's predecessors
	// in time linear in how many it has, quadratic in all. wrapped counts
	// the wrapped loops from the function's frame to this one, included.
	// inLoop is the innermost loop frame around this one (itself if a
	// loop), -1 if none; access, for a loop frame, the accesses to the
	// locals it has seen (with wrapLoops only).
	// Each frame's height is the operand stack's height (an upper bound)
	// below its values; height is the height now.
	type frame struct {
		isIf     bool // an if whose else has not been seen
		branches uint32
		height   int64
		params   uint32 // of its block type
		results  uint32
		loop     int // index in scan.loops; -1 for a block or an if
		wrapped  int
		inLoop   int
		access   []localAccess
		// unroll: a loop that may be unrolled (no block type, no loop in
		// it so far). extra counts the branches to this frame the copies
		// of unrolled loops add.
		unroll bool
		extra  uint32
		// bottom is where a br_if to this loop ends, the last one seen:
		// at the loop's end, the loop is tested at its bottom.
		bottom int
		// straight: no control instruction since the frame opened.
		straight bool
		// edits is len(scan.edits) when the loop opened.
		edits int
		// For the calling arm (bodyScan.sinkStart): minTarget is the
		// outermost frame (its index) a branch in this frame's current
		// arm goes to (noTarget: none); for an if, calls is
		// scan.callCount at its current arm's start, ifArm and armStart
		// where its then and current arm's code starts, bt its block
		// type; then* is its then arm's, once its else is seen (thenEnd:
		// the else's offset, 0 before).
		minTarget                         int
		calls                             uint32
		ifArm, armStart, thenEnd, thenMin int
		thenCalls                         uint32
		bt                                []byte
	}
	frames := make([]frame, 1, 16)
	frames[0].loop, frames[0].inLoop, frames[0].minTarget = -1, -1, noTarget
	scan.split = env.split
	// segmented reports whether code in frame t is cut into segments.
	segmented := func(t int) bool { return env.split || (env.wrapLoops && frames[t].inLoop >= 0) }
	sinkCalls := uint32(0) // scan.callCount when the calling arm's if ended
	// The open segment (InterruptChecks: docs/rewrite.md, Segments): where
	// it starts, the call counts there, and what its weight goes to: the
	// header of loop segLoop, or else the charge edit segEdit (-1: no
	// segment is open).
	segStart, segLoop, segEdit, charges := 0, -1, -1, 0
	var segCalls, segHostCalls uint32
	var segExtra int64
	// Where the open segment's first call that may lead back ends, and the
	// counts there (split functions: afterCall).
	var callEnd int
	var callCalls, callHost uint32
	var callExtra int64
	closeSegment := func(at int) {
		if callEnd > segStart {
			scan.splitRest = max(scan.splitRest, weight(at-callEnd, scan.callCount-callCalls, scan.hostCallCount-callHost, scan.callExtra-callExtra))
			callEnd = 0
		}
		w := weight(at-segStart, scan.callCount-segCalls, scan.hostCallCount-segHostCalls, scan.callExtra-segExtra)
		switch {
		case segLoop == segEntry:
			scan.entryW = w
		case segLoop >= 0:
			scan.loops[segLoop].head = w
		case segEdit < 0:
		case at == segStart && segEdit == len(scan.edits)-1:
			scan.edits = scan.edits[:segEdit] // nothing in it
			charges--
		default:
			scan.chargeW[scan.edits[segEdit].value] = w
		}
		segLoop, segEdit = -1, -1
	}
	openSegment := func(at, loop int) {
		segStart, segCalls, segHostCalls, segExtra, segLoop = at, scan.callCount, scan.hostCallCount, scan.callExtra, loop
		if loop == -1 {
			charges++
			segEdit = len(scan.edits)
			scan.edits = append(scan.edits, bodyEdit{pos: at, end: at, kind: editCharge, value: uint32(len(scan.chargeW))})
			scan.chargeW = append(scan.chargeW, 0)
			scan.chargeTest = append(scan.chargeTest, env.split)
		}
	}
	if env.split {
		openSegment(scan.codeStart, segEntry)
	}
	// afterCall, in a split function, notes where a segment's first call
	// that may lead back to it ends: the rest of its segment, run after
	// the call returns but charged at the segment's start, is what the exit
	// check charges again (bodyScan.splitRest: the way back up).
	afterCall := func() {
		if env.split && callEnd <= segStart { // the segment's first
			callEnd, callCalls, callHost, callExtra = r.Pos, scan.callCount, scan.hostCallCount, scan.callExtra
		}
	}
	// cut, in a split function, ends a segment that weighs more than
	// SplitWeight: the rest of its code starts a segment of its own.
	cut := func() {
		if !env.split || (segLoop == -1 && segEdit < 0) ||
			weight(r.Pos-segStart, scan.callCount-segCalls, scan.hostCallCount-segHostCalls, scan.callExtra-segExtra) <= SplitWeight {
			return
		}
		closeSegment(r.Pos)
		openSegment(r.Pos, -1)
	}
	var height int64
	// stack applies a net change to height (never below the frame's
	// base: below it is unreachable code's polymorphic stack).
	stack := func(n int64) {
		height = max(height+n, frames[len(frames)-1].height)
		scan.maxHeight = max(scan.maxHeight, uint32(min(height, 1<<31)))
	}
	var accessBufs [][]localAccess // loop frames' access slices, for reuse
	// The open loop that may be unrolled (it holds no loop: at most one is
	// open), its frame's index (-1 if none), and what would be copied
	// with its body: the frames its branches leave to (one entry per
	// branch; a return, which releases its frame in place, is no branch).
	cand := -1
	var candOut []int
	// unrollBranches reports whether the copies of the candidate's body
	// keep the branches to each frame it leaves to within the limit
	// (counting those earlier copies added), and if so counts them. The
	// validation's own counts stay the original's: with the copies, a
	// label gets at most about twice the limit.
	unrollBranches := func() bool {
		k := uint32(UnrollCopies - 1)
		for _, t := range candOut {
			n := uint32(0)
			for _, u := range candOut {
				if u == t {
					n++
				}
			}
			if uint64(frames[t].branches)+uint64(frames[t].extra)+uint64(k)*uint64(n) > uint64(env.lim.MaxBranchesToLabel) {
				return false
			}
		}
		for _, t := range candOut {
			frames[t].extra += k
		}
		return true
	}
	// addAccess records an access to a local in the loop frame at index t.
	addAccess := func(t int, a localAccess) {
		f := &frames[t]
		for i := range f.access {
			if f.access[i].local == a.local {
				f.access[i].set = f.access[i].set || a.set
				return
			}
		}
		if len(f.access) < maxLoopAccess {
			f.access = append(f.access, a)
		}
	}
	branch := func(l uint32, at, end int) error {
		if uint64(l) >= uint64(len(frames)) {
			return fmt.Errorf("branch to label %d from %d blocks deep", l, len(frames))
		}
		t := len(frames) - 1 - int(l)
		frames[len(frames)-1].minTarget = min(frames[len(frames)-1].minTarget, t)
		if cand >= 0 && t < cand && len(candOut) <= maxUnrollBody {
			candOut = append(candOut, t)
		}
		f := &frames[t]
		f.branches++
		scan.maxBranches = max(scan.maxBranches, f.branches)
		if f.branches > env.lim.MaxBranchesToLabel {
			return overLimit(fmt.Sprintf("%d or more branches to one block in function %d", f.branches, env.fn),
				"max_branches_to_label", uint64(env.lim.MaxBranchesToLabel))
		}
		// Each wrapped loop the branch leaves adds a frame (its wrapper)
		// to leave; a branch to the wrapped loop itself does not leave it.
		if crossed := frames[len(frames)-1].wrapped - f.wrapped; crossed > 0 {
			scan.edits = append(scan.edits, bodyEdit{pos: at, end: end, kind: editLabel, value: l + uint32(crossed)})
		}
		return nil
	}
	funcRef := func(idx uint32, at, end int) error {
		if idx >= env.funcs {
			return fmt.Errorf("function %d does not exist", idx)
		}
		if idx >= env.importedFuncs {
			scan.edits = append(scan.edits, bodyEdit{pos: at, end: end, kind: editFunc, value: idx + addedFuncs})
		}
		return nil
	}
	for {
		at := r.Pos
		op, err := r.Byte()
		if err != nil {
			return bodyScan{}, fmt.Errorf("function %d: the body ends without its final end", env.fn)
		}
		stack(int64(stackNet[op]))
		scan.callExtra += classWeight(op)
		switch opImm[op] {
		case immBlock, immBranch, immBrTable:
			frames[len(frames)-1].straight = false
		}
		switch op {
		case opElse, opEnd, opReturn, opUnreachable:
			frames[len(frames)-1].straight = false
		}
		switch opImm[op] {
		case immInvalid:
			return bodyScan{}, unsupportedOp(env.fn, at, fmt.Sprintf("0x%02x", op))
		case immNone:
			switch op {
			case opUnreachable:
				height = frames[len(frames)-1].height // what follows is unreachable
			case opReturn:
				height = frames[len(frames)-1].height
				// Its label, were it a branch to the function's frame: the
				// frames from here, and the wrappers of the loops it leaves.
				l := uint32(len(frames) - 1)
				scan.edits = append(scan.edits, bodyEdit{pos: at, end: r.Pos, kind: editReturn,
					value: l + uint32(frames[len(frames)-1].wrapped-frames[0].wrapped)})
			case opElse:
				if !frames[len(frames)-1].isIf {
					return bodyScan{}, fmt.Errorf("function %d: else outside an if at byte %d", env.fn, at)
				}
				top := &frames[len(frames)-1]
				top.isIf = false // a second else is an error
				height = top.height + int64(top.params)
				top.thenCalls, top.thenEnd, top.thenMin = scan.callCount-top.calls, at, top.minTarget
				top.armStart, top.minTarget, top.calls = r.Pos, noTarget, scan.callCount
				if segmented(len(frames) - 1) {
					closeSegment(at)
					openSegment(r.Pos, -1)
				}
			case opEnd:
				if segmented(len(frames) - 1) {
					closeSegment(at)
				}
				height = frames[len(frames)-1].height
				stack(int64(frames[len(frames)-1].results))
				if l := frames[len(frames)-1].loop; l >= 0 {
					top := &frames[len(frames)-1]
					scan.loops[l].end = r.Pos
					scan.loops[l].calls = scan.callCount - scan.loops[l].calls
					scan.loops[l].hostCalls = scan.hostCallCount - scan.loops[l].hostCalls
					scan.loops[l].extra = scan.callExtra - scan.loops[l].extra
					if env.wrapLoops {
						scan.loops[l].setsStart = len(scan.loopSets)
						for _, a := range top.access {
							if a.firstRead && a.set && len(scan.loopSets)-scan.loops[l].setsStart < maxLoopSets {
								scan.loopSets = append(scan.loopSets, a.local)
							}
						}
						scan.loops[l].setsEnd = len(scan.loopSets)
						if o := frames[len(frames)-2].inLoop; o >= 0 {
							for _, a := range top.access {
								addAccess(o, a)
							}
						}
						accessBufs = append(accessBufs, top.access[:0])
					}
					if env.wrapLoops {
						scan.edits = append(scan.edits, bodyEdit{pos: r.Pos, end: r.Pos, kind: editLoopEnd, value: uint32(l)})
					}
					if len(frames)-1 == cand {
						small := top.unroll && at-scan.loops[l].btEnd <= maxUnrollBody && scan.loops[l].calls == 0
						if small && top.bottom == at && unrollBranches() {
							scan.loops[l].unroll = true
						}
						if small {
							// Its check takes the whole body (unrolled: for
							// UnrollCopies passes), no charges in it: a pass
							// of a small loop that runs one of its arms is
							// overcharged a few units, and its charges, as
							// costly as its code, are saved (a br_table
							// machine was much slower with them).
							l := &scan.loops[l]
							l.head = weight(l.end-l.start, l.calls, l.hostCalls, l.extra)
							kept := slices.DeleteFunc(scan.edits[top.edits:], func(e bodyEdit) bool { return e.kind == editCharge })
							scan.edits = scan.edits[:top.edits+len(kept)]
						}
						cand = -1
					}
				}

				if len(frames) > 1 {
					if top := &frames[len(frames)-1]; top.bt != nil && scan.sinkStart == 0 {
						// An if's end: is one of its arms the calling arm?
						idx := len(frames) - 1
						thenCalls, thenMin, thenEnd, elseCalls, elseMin := scan.callCount-top.calls, top.minTarget, at, uint32(0), noTarget
						if top.thenEnd != 0 {
							thenCalls, thenMin, thenEnd, elseCalls, elseMin = top.thenCalls, top.thenMin, top.thenEnd, scan.callCount-top.calls, top.minTarget
						}
						before := scan.callCount - thenCalls - elseCalls // calls before the if
						switch {
						case before != 0:
						case thenCalls > 0 && elseCalls == 0 && thenMin >= idx:
							scan.sinkStart, scan.sinkEnd = top.ifArm, thenEnd
						case elseCalls > 0 && thenCalls == 0 && elseMin >= idx:
							scan.sinkStart, scan.sinkEnd = top.armStart, at
						}
						if scan.sinkStart != 0 {
							scan.sinkBT, sinkCalls = top.bt, scan.callCount
						}
					}
					frames[len(frames)-2].minTarget = min(frames[len(frames)-2].minTarget, frames[len(frames)-1].minTarget, frames[len(frames)-1].thenMin)
				}
				frames = frames[:len(frames)-1]
				if len(frames) > 0 && segmented(len(frames)-1) {
					openSegment(r.Pos, -1)
				}
				if len(frames) == 0 {
					if !r.EOF() {
						return bodyScan{}, fmt.Errorf("function %d: %d bytes after the function's final end", env.fn, len(body)-r.Pos)
					}
					if scan.callCount != sinkCalls || scan.loopCount > 0 {
						scan.sinkStart = 0
					}
					for _, l := range scan.loops {
						w := weight(l.end-l.start, l.calls, l.hostCalls, l.extra)
						scan.loopMax = max(scan.loopMax, w)
						if l.outer < 0 {
							scan.loopsW += w
						}
					}
					if charges > maxCharges(len(body)) && !env.split {
						// Too many segments for the code they would add:
						// each loop's check takes its whole body again.
						scan.edits = slices.DeleteFunc(scan.edits, func(e bodyEdit) bool { return e.kind == editCharge })
						for i, l := range scan.loops {
							scan.loops[i].head = weight(l.end-l.start, l.calls, l.hostCalls, l.extra)
						}
					}
					return scan, nil
				}
			}
		case immBlock:
			btStart := r.Pos
			params, results, err := r.blockType(&env)
			if err != nil {
				return bodyScan{}, fmt.Errorf("function %d: block type at byte %d: %w", env.fn, at, err)
			}
			if op == opIf {
				stack(-1)
			}
			depth := uint32(len(frames)) + 1
			if depth > env.lim.MaxBlockDepth {
				return bodyScan{}, overLimit(fmt.Sprintf("blocks nested %d deep in function %d", depth, env.fn), "max_block_depth", uint64(env.lim.MaxBlockDepth))
			}
			scan.maxDepth = max(scan.maxDepth, depth)
			scan.blocks++
			if op == opLoop {
				if scan.loopCount++; scan.loopCount > env.lim.MaxLoops {
					return bodyScan{}, overLimit(fmt.Sprintf("%d loops in function %d", scan.loopCount, env.fn), "max_loops", uint64(env.lim.MaxLoops))
				}
			}
			f := frame{isIf: op == opIf, loop: -1, wrapped: frames[len(frames)-1].wrapped, inLoop: frames[len(frames)-1].inLoop,
				height: max(height-int64(params), frames[len(frames)-1].height), params: params, results: results,
				minTarget: noTarget, thenMin: noTarget}
			if op == opIf {
				f.calls, f.ifArm, f.armStart, f.bt = scan.callCount, r.Pos, r.Pos, body[btStart:r.Pos]
			}
			if op == opLoop {
				outer := -1
				if o := frames[len(frames)-1].inLoop; o >= 0 {
					outer = frames[o].loop
				}
				f.inLoop = len(frames)
				f.loop = len(scan.loops)
				f.straight = true
				if env.wrapLoops && len(accessBufs) > 0 {
					f.access = accessBufs[len(accessBufs)-1]
					accessBufs = accessBufs[:len(accessBufs)-1]
				}
				scan.loops = append(scan.loops, loopSite{btStart: btStart, btEnd: r.Pos, start: at, calls: scan.callCount, hostCalls: scan.hostCallCount, extra: scan.callExtra, outer: outer})
				if env.wrapLoops {
					site := &scan.loops[f.loop]
					site.inline = takesParams(body[btStart:r.Pos], env.typeParams)
					if !site.inline {
						f.wrapped += wrapperFrames
					}
					// A loop in the candidate: neither is unrolled (the
					// loops around the candidate already are not).
					if cand >= 0 {
						frames[cand].unroll = false
					}
					cand = -1
					if UnrollCopies > 1 && r.Pos-btStart == 1 && body[btStart] == 0x40 {
						cand, candOut = len(frames), candOut[:0]
						f.unroll = true
					}
					if segmented(len(frames) - 1) {
						closeSegment(at)
					}
					f.edits = len(scan.edits)
					scan.edits = append(scan.edits, bodyEdit{pos: at, end: r.Pos, kind: editLoop, value: uint32(f.loop)})
					openSegment(r.Pos, f.loop)
				} else if env.split {
					closeSegment(at)
					openSegment(r.Pos, -1)
				}
			}
			frames = append(frames, f)
		case immBranch:
			var l uint32
			if l, err = r.U32(); err == nil {
				err = branch(l, at+1, r.Pos)
			}
			if op == 0x0c { // br: what follows is unreachable
				height = frames[len(frames)-1].height
			}
			if op == opBrIf && l == 0 && err == nil {
				frames[len(frames)-1].bottom = r.Pos
			}
		case immFunc:
			var idx uint32
			if idx, err = r.U32(); err == nil && op == opCall && env.wrapLoops && !(env.pure != nil && idx < env.funcs && env.pure[idx]) {
				scan.edits = append(scan.edits, bodyEdit{pos: at, end: at, kind: editSync})
			}
			if err == nil {
				err = funcRef(idx, at+1, r.Pos)
			}
			scan.refFunc = scan.refFunc || op == opRefFunc
			if err == nil && op == opCall {
				t := env.funcTypes[idx]
				stack(-int64(env.typeParams[t]))
				stack(int64(env.typeResults[t]))
				scan.callCount++
				scan.calls = scan.calls || idx >= env.importedFuncs
				if idx < env.importedFuncs {
					scan.hostCallCount++
				}
				if env.callees != nil {
					scan.callExtra += env.callees[idx]
				}
				if top := frames[len(frames)-1]; top.loop >= 0 && top.straight && env.tested != nil && env.tested[idx] {
					scan.loops[top.loop].callTested = true
				}
				if env.wrapLoops && !(env.pure != nil && env.pure[idx]) {
					scan.edits = append(scan.edits, bodyEdit{pos: r.Pos, end: r.Pos, kind: editSync, value: 1})
				}
				if idx >= env.importedFuncs {
					scan.markRest(r.Pos)
					afterCall()
					scan.calleeFuncs = append(scan.calleeFuncs, idx)
				}
			}
		case immLocal:
			// The rewrite may add a local after these: it must not be
			// nameable.
			var l uint32
			if l, err = r.U32(); err == nil && uint64(l) >= uint64(env.params)+locals {
				return bodyScan{}, fmt.Errorf("function %d names local %d at byte %d; it has %d", env.fn, l, at, uint64(env.params)+locals)
			}
			if t := frames[len(frames)-1].inLoop; err == nil && t >= 0 && env.wrapLoops {
				addAccess(t, localAccess{local: l, firstRead: op == opLocalGet, set: op != opLocalGet})
			}
		case immIndex:
			_, err = r.U32()
		case immIndex2, immMemArg:
			var t uint32
			if t, err = r.U32(); err == nil {
				_, err = r.U32()
			}
			if op == opCallIndirect {
				scan.callCount++
				scan.calls = true
				stack(-1)
				if err == nil && t < env.numTypes {
					stack(-int64(env.typeParams[t]))
					stack(int64(env.typeResults[t]))
					if env.indirect != nil {
						scan.callExtra += env.indirect[t]
					}
				}
				scan.markRest(r.Pos)
				if err == nil && t < env.numTypes {
					scan.indirectTypes = append(scan.indirectTypes, t)
				}
				if err == nil && env.wrapLoops && !(env.indirectPure != nil && t < env.numTypes && env.indirectPure[t]) {
					scan.edits = append(scan.edits, bodyEdit{pos: at, end: at, kind: editSync},
						bodyEdit{pos: r.Pos, end: r.Pos, kind: editSync, value: 1})
				}
				afterCall()
			}
		case immZeroByte:
			var c byte
			if c, err = r.Byte(); err == nil && c != 0 {
				err = errors.New("reserved byte must be 0")
			}
		case immBrTable:
			var n uint32
			if n, err = r.U32(); err != nil {
				break
			}
			if n > env.lim.MaxBrTableTargets {
				return bodyScan{}, overLimit(fmt.Sprintf("br_table with %d targets in function %d", n, env.fn), "max_br_table_targets", uint64(env.lim.MaxBrTableTargets))
			}
			scan.maxBrTable = max(scan.maxBrTable, n)
			for i := uint32(0); i <= n && err == nil; i++ { // the targets, then the default
				var l uint32
				from := r.Pos
				if l, err = r.U32(); err == nil {
					err = branch(l, from, r.Pos)
				}
			}
			height = frames[len(frames)-1].height // what follows is unreachable
		case immGlobal:
			var g uint32
			if g, err = r.U32(); err == nil && g >= env.globals {
				return bodyScan{}, fmt.Errorf("function %d names global %d at byte %d; the module has %d globals", env.fn, g, at, env.globals)
			}
		case immI32:
			_, err = r.S32()
		case immI64:
			err = r.S64()
		case immF32:
			_, err = r.Bytes(4)
		case immF64:
			_, err = r.Bytes(8)
		case immSelectT:
			var n, t byte
			if n, err = r.Byte(); err == nil {
				if n != 1 {
					err = errors.New("select must name exactly one type")
				} else if t, err = r.Byte(); err == nil && !isValType(t) {
					err = fmt.Errorf("select of unknown type 0x%02x", t)
				}
			}
		case immRefNull:
			var t byte
			if t, err = r.Byte(); err == nil && !isRefType(t) {
				err = fmt.Errorf("ref.null of unknown type 0x%02x", t)
			}
		case immMisc:
			var sub uint32
			if sub, err = r.U32(); err != nil {
				break
			}
			if sub >= uint32(len(miscImm)) {
				return bodyScan{}, unsupportedOp(env.fn, at, fmt.Sprintf("0xfc %d", sub))
			}
			stack(int64(miscNet[sub]))
			switch sub {
			case 8, 10, 11, 12, 14, 15, 17: // memory.init, .copy, .fill, table.init, .copy, .grow, .fill: the size on top
				scan.callExtra += BulkWeight
				scan.edits = append(scan.edits, bodyEdit{pos: at, end: at, kind: editBulk})
				scan.bulk = true
			}
			switch miscImm[sub] {
			case immIndex:
				_, err = r.U32()
			case immIndex2:
				if _, err = r.U32(); err == nil {
					_, err = r.U32()
				}
			}
			if sub == 10 || sub == 11 {
				// memory.copy and memory.fill are replaced whole (done in
				// chunks when large: bulkChunked).
				e := &scan.edits[len(scan.edits)-1]
				e.end, e.value = r.Pos, sub
			}
		case immVec:
			var sub byte
			if sub, err = r.Byte(); err != nil {
				break
			}
			stack(int64(vecNet[sub]))
			switch vecImm[sub] {
			case immInvalid:
				return bodyScan{}, unsupportedOp(env.fn, at, fmt.Sprintf("0xfd %d", sub))
			case immMemArg:
				if _, err = r.U32(); err == nil {
					_, err = r.U32()
				}
			case immMemArgLane:
				if _, err = r.U32(); err == nil {
					if _, err = r.U32(); err == nil {
						_, err = r.Byte()
					}
				}
			case immLane:
				_, err = r.Byte()
			case immV128:
				_, err = r.Bytes(16)
			}
		}
		if err != nil {
			var me *Error
			if errors.As(err, &me) {
				return bodyScan{}, err
			}
			return bodyScan{}, fmt.Errorf("function %d: instruction 0x%02x at byte %d: %w", env.fn, op, at, err)
		}
		cut()
	}
}

// markRest records the counts after a call that may lead back to the
// function, if it is the first.
func (scan *bodyScan) markRest(at int) {
	if scan.restFrom == 0 {
		scan.restFrom, scan.restCalls, scan.restHost, scan.restExtra = at, scan.callCount, scan.hostCallCount, scan.callExtra
	}
}

// restWeight is what the code after the first call that may lead back to
// the function weighs (bodyLen: the body's length), for its exit check.
func (scan *bodyScan) restWeight(bodyLen int) int64 {
	if scan.split {
		return max(1, scan.splitRest)
	}
	if scan.restFrom == 0 {
		return 1
	}
	return weight(bodyLen-scan.restFrom, scan.callCount-scan.restCalls, scan.hostCallCount-scan.restHost, scan.callExtra-scan.restExtra)
}

// takesParams reports whether a (valid) block type takes parameters: a
// type index whose type has some.
func takesParams(bt []byte, typeParams []uint32) bool {
	r := wreader{wasmbin.Reader{B: bt}}
	v, err := r.S33()
	return err == nil && v >= 0 && v < int64(len(typeParams)) && typeParams[v] > 0
}

// unsupportedOp is the error for an opcode outside the default features.
func unsupportedOp(fn uint32, at int, op string) error {
	return fmt.Errorf("function %d: instruction %s at byte %d is not part of the WebAssembly features Stint runs "+
		"(MVP, sign extension, saturating truncation, bulk memory, reference types, multi-value, SIMD)", fn, op, at)
}
