package rewrite

import (
	"encoding/binary"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// The rewrite of a function body: unrolled loops, the calling arm, and
// the body as a whole.

// unrollCopiesOf appends, for an unrolled loop l (in its wrapper, after
// its check), UnrollCopies-1 copies of its body from bodyStart (after a
// point moved to the slow path: points.go), each in a block: `block
// BODY br 4 end`. Each copy's block stands where the loop's label stood,
// so a branch in it to the loop's label (br, br_if, br_table, at any
// depth) goes on to the next copy, unchanged; falling off the body's end
// leaves the loop, by br 4 to the wrapper's done block (the copy's
// block, the inner loop, slow, retry, done). The body's last copy, the
// original's bytes, follows as for any loop, its branches to the label
// going back to the check. The copies hold no loop: a branch in them
// targets a block in the body (unchanged), the loop, or leaves the loop,
// and its edit (edits: those after the loop's own) then gets one more
// label, the copy's block. (For `loop BODY COND br_if 0 end`, `COND;
// i32.eqz; br_if 3` in place of the block was slower: wazero does not
// fuse i32.eqz of a comparison with the branch; docs/rewrite.md.)
func (w *rewriter) unrollCopiesOf(out, old []byte, l loopSite, bodyStart int, edits []bodyEdit, release []byte) []byte {
	end := l.end - 1 // the loop's end opcode
	n := 0
	for n < len(edits) && edits[n].pos < end {
		n++
	}
	first := 0 // the edits of a point moved to the slow path are left out
	for first < n && edits[first].pos < bodyStart {
		first++
	}
	for range UnrollCopies - 1 {
		from := bodyStart
		out = append(out, opBlock, 0x40)
		for _, e := range edits[first:n] {
			out = append(out, old[from:e.pos]...)
			from = e.end
			out = w.simpleEdit(out, e, release, 1)
		}
		out = append(out, old[from:end]...)
		out = append(out, 0x0c, 4, opEnd) // br
	}
	return out
}

// bigBody is the largest code (bytes) a function that calls nothing may
// have without an entry countdown. Such a function cannot recurse, and
// within it loops have their own checks; its callers are charged its
// whole weight at each call (uncountedWork). A larger one has its own
// countdown, so that no single charge of a caller grows with the size of
// the functions it calls; past 2 KiB the countdown, a read-modify-write
// of a global, costs little beside running such a body (docs/design/stop-checks.md,
// "Measurements once quoted in the rewrite's code").
const bigBody = 2048

// callingArm appends the code of a body whose calls all lie in one arm
// of an if (bodyScan.sinkStart; its locals are out already): the entry
// checks at the start of that arm, not of the function, and the arm in
// `block bt ... end` (bt: the if's) followed by the frame's release. A
// branch in the arm to the if's label now names that block, at the same
// depth, and reaches the release; no branch in the arm goes further out
// (the scan's condition); a return in it releases first, one elsewhere
// does not. A path that takes the other arm calls nothing, so it cannot
// deepen the stack, and its work, bounded by the body's size, is charged
// by its callers (uncountedWork): the leaves of a recursion (half its
// calls, in a binary tree) pay for no check (docs/design/stop-checks.md,
// "Every small loop unrolled, the calling arm, segments").
func (w *rewriter) callingArm(out, old []byte, scan *bodyScan, frame int64, release []byte) []byte {
	e := 0
	copyTo := func(out []byte, from, to int, release []byte) []byte {
		for ; e < len(scan.edits) && scan.edits[e].pos < to; e++ {
			out = append(out, old[from:scan.edits[e].pos]...)
			from = scan.edits[e].end
			out = w.simpleEdit(out, scan.edits[e], release, 0)
		}
		return append(out, old[from:to]...)
	}
	out = copyTo(out, scan.codeStart, scan.sinkStart, nil)
	out = w.entryChecks(out, weight(len(old)-scan.codeStart, scan.callCount, scan.hostCallCount, scan.callExtra+entryWeight()), frame)
	out = append(out, opBlock)
	out = append(out, scan.sinkBT...)
	out = copyTo(out, scan.sinkStart, scan.sinkEnd, release)
	out = append(out, opEnd)
	out = append(out, release...)
	return copyTo(out, scan.sinkEnd, len(old), nil)
}

// body appends the rewrite of one body of function type typ to out.
func (w *rewriter) body(out, old []byte, scan *bodyScan, typ uint32) []byte {
	params := w.info.paramTypes[typ]
	wrap := w.loopChecks && len(scan.loops) > 0
	counter := uint32(len(params)) + scan.locals // the added local, when wrap
	w.localTypes(old, params)
	limited := scan.calls && CallStackLimit
	var frame int64
	var release []byte // what a return runs first (simpleEdit)
	w.counter = nil
	if wrap {
		w.counter = binary.AppendUvarint(nil, uint64(counter))
	}
	if limited {
		frame = w.frameWeight(scan.maxHeight, len(old)-scan.codeStart)
		release = w.stackRelease(nil, frame)
		if mutate != "no-exit-check" && w.needsExit[w.fn] {
			release = w.exitCheck(release, scan.restWeight(len(old))+ExitWeight)
		}
	}
	// Locals: the declared groups, then the counter's.
	if wrap {
		r := wreader{wasmbin.Reader{B: old}}
		_, _ = r.U32()
		out = binary.AppendUvarint(out, uint64(scan.groups)+1)
		out = append(out, old[r.Pos:scan.codeStart]...)
		out = append(out, 1, typeI64)
	} else {
		out = append(out, old[:scan.codeStart]...)
	}
	if limited && !wrap && scan.sinkStart != 0 && (len(old)-scan.codeStart <= bigBody && !scan.split || mutate == "arm-over-tested") {
		return w.callingArm(out, old, scan, frame, release)
	}
	entry := weight(len(old)-scan.codeStart, scan.callCount, scan.hostCallCount, scan.callExtra)
	big := len(old)-scan.codeStart > bigBody || scan.split
	if scan.split {
		entry = scan.entryW
	}
	if limited {
		entry += entryWeight()
	}
	cached := wrap && (limited || scan.calls || big)
	if cached {
		// The countdown goes to its cache at once: no write and read
		// again of the global.
		out = w.entryChecksCached(out, entry, frame, limited)
	} else if limited {
		out = w.entryChecks(out, entry, frame)
	} else if scan.calls || big {
		// The entry countdown alone: in a function that calls nothing
		// but is large (bigBody), or that calls when benchmarks turn the
		// call-stack limit off.
		out = w.takeFromCountdown(out, wasmbin.AppendSLEB([]byte{opI64Const}, entry))
	}
	c := w.counter
	if wrap {
		release = w.writeBack(release)
	}
	if release != nil {
		// The call-stack limit and the work flush: after the entry
		// check, the body in a block that yields the function's
		// results, so that every way out but a return (the end, a
		// branch to the function's label) reaches the release after
		// it; a return releases first.
		out = append(out, opBlock)
		out = append(out, w.blockTypes[typ]...)
	}
	if wrap && !cached {
		out = w.reload(out)
	}
	from := scan.codeStart
	skipTo := 0 // the end of a loop's point, moved to its slow path
	var points map[uint32]loopPoint
	for i, e := range scan.edits {
		if e.pos < skipTo {
			continue // in a moved point: slowPoint
		}
		out = append(out, old[from:e.pos]...)
		from = e.end
		switch e.kind {
		case editFunc, editLabel, editReturn, editBulk, editSync:
			out = w.simpleEdit(out, e, release, 0)
		case editCharge:
			switch {
			case scan.chargeTest[e.value]:
				out = w.chargeTest(out, scan.chargeW[e.value])
			default:
				out = chargeLocal(out, c, scan.chargeW[e.value])
			}
		case editLoop:
			l := scan.loops[e.value]
			bt := old[l.btStart:l.btEnd]
			if l.inline {
				// A loop with parameters: the check inside it.
				out = append(out, opLoop)
				out = append(out, bt...)
				if l.callTested || mutate == "no-loop-test" {
					out = loopCharge(out, c, l)
					break
				}
				out = loopCheck(out, c, l)
				out = append(out, opIf, 0x40)
				out = w.slowPath(out, c, w.loopSets(scan, int(e.value)), 0)
				out = append(out, opEnd)
				break
			}
			// block bt (done), loop bt (retry), block (slow), loop bt:
			// the original, whose first instruction is the check.
			out = append(out, opBlock)
			out = append(out, bt...)
			out = append(out, opLoop)
			out = append(out, bt...)
			out = append(out, opBlock, 0x40, opLoop)
			out = append(out, bt...)
			if l.callTested || mutate == "no-loop-test" {
				out = loopCharge(out, c, l) // the slow path is never taken
			} else {
				out = loopCheck(out, c, l)
				out = append(out, opBrIf, 1) // to the end of slow
			}
			bodyStart := l.btEnd
			if p, ok := w.pointOf(old, l, scan.edits[i+1:], scan.chargeTest); ok {
				if points == nil {
					points = map[uint32]loopPoint{}
				}
				points[e.value] = p
				bodyStart, from, skipTo = p.end, p.end, p.end
			}
			if l.unroll {
				out = w.unrollCopiesOf(out, old, l, bodyStart, scan.edits[i+1:], release)
			}
		case editLoopEnd:
			if l := scan.loops[e.value]; !l.inline {
				// After the original loop: leave with its results; the
				// slow path, then retry.
				out = append(out, 0x0c, 2, opEnd) // br done, end slow
				if p, ok := points[e.value]; ok {
					out = w.slowPoint(out, old, c, p, scan.chargeW)
				}
				out = w.slowPath(out, c, w.loopSets(scan, int(e.value)), checkWeight(l))
				out = append(out, 0x0c, 0, opEnd, opEnd) // br retry, end retry, end done
			}
		}
	}
	if release == nil {
		return append(out, old[from:]...)
	}
	out = append(out, old[from:len(old)-1]...) // up to the function's end
	out = append(out, opEnd)                   // the block's
	out = append(out, release...)
	return append(out, opEnd)
}
