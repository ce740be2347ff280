package rewrite

import (
	"bytes"
	"encoding/binary"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Resumable modules: the points of their call-free loops moved to the
// slow path (docs/rewrite.md, "Resumable modules").
//
// The resumable transform (sandbox/internal/resume) opens the body of
// each loop it instruments with a point, `global.get point; if ... end`,
// where a guest the host asked to suspend unwinds, and puts the same
// point, in a block, right before a loop without calls, where a rewind to
// the loop's header arrives (the rewrite checks that it is there). The
// host sets point only in the interrupt function (and in blocking host
// calls, which a loop without calls does not make): in a loop with a
// check and no call, point can only change when the loop's slow path
// calls the interrupt function. The rewrite moves the point there, out of
// every pass and every unrolled copy, to the start of the slow path,
// before the interrupt call (after it, every local the unwinding saves
// would live across the call, and wazero's register allocator would then
// store each to the stack at every definition in the loop). A request
// made by one interrupt call is thus seen at the next, at most B units
// later, or at any point the guest passes first. The point's weight stays
// in the loop check's charge (a few units a pass more than runs); its
// code on the slow path is charged by its own segment charges, if any.
//
// A loop with calls keeps its point: a call may set point (its callee's
// entry check), and moving the point cost the Go guests' dispatch loops
// 2-4x instead of saving (docs/design/snapshots.md).

// loopPoint is the point that opens an instrumented loop's body: its
// code [start, end) and the scan's edits inside it.
type loopPoint struct {
	start, end int
	edits      []bodyEdit
}

// pointOf returns the point that opens loop l's body in old, when the
// rewrite moves it to the loop's slow path: a resumable module in checks
// mode, a loop that wraps (no parameters) with a slow path (not
// call-tested) and no call, whose body starts with `global.get point; if` (no block
// type) closed within the body, holding only the instructions the
// transform's points hold (no call, no loop, no return), every branch in
// it leaving the loop, and no edit in it but label renumberings and
// segment charges without a test, and the same point in a block right
// before the loop. edits are the scan's edits after the loop's own.
func (w *rewriter) pointOf(old []byte, l loopSite, edits []bodyEdit, chargeTest []bool) (loopPoint, bool) {
	if !w.info.resumable || !w.info.hasPoint || !w.loopChecks || l.inline || l.callTested || l.calls > 0 || mutate != "" {
		return loopPoint{}, false
	}
	r := wreader{wasmbin.Reader{B: old[:l.end-1], Pos: l.btEnd}}
	if op, err := r.Byte(); err != nil || op != opGlobalGet {
		return loopPoint{}, false
	}
	if g, err := r.U32(); err != nil || g != w.info.point {
		return loopPoint{}, false
	}
	depth := 0 // constructs open inside the point
	for {
		op, err := r.Byte()
		if err != nil {
			return loopPoint{}, false
		}
		switch op {
		case opIf:
			if bt, err := r.Byte(); err != nil || bt != 0x40 {
				return loopPoint{}, false
			}
			depth++
		case opElse:
		case opEnd:
			depth--
		case 0x0c: // br: out of the loop, past its depth inside the point
			if label, err := r.U32(); err != nil || int(label) <= depth {
				return loopPoint{}, false
			}
		case opGlobalGet, opGlobalSet, 0x20, 0x21, 0x22: // local.get, set, tee
			if _, err := r.U32(); err != nil {
				return loopPoint{}, false
			}
		case 0x41: // i32.const
			if _, err := r.S32(); err != nil {
				return loopPoint{}, false
			}
		case 0x46, 0x1a: // i32.eq, drop
		default:
			return loopPoint{}, false
		}
		if depth == 0 {
			break
		}
	}
	p := loopPoint{start: l.btEnd, end: r.Pos}
	// A rewind to the loop's header arrives at the copy the transform puts
	// right before the loop, `block [the same point] end`: without it the
	// point stays where it is.
	if at := l.start - (p.end - p.start) - 1; at < 2 || old[at-2] != opBlock || old[at-1] != 0x40 || old[l.start-1] != opEnd ||
		!bytes.Equal(old[at:l.start-1], old[p.start:p.end]) {
		return loopPoint{}, false
	}
	n := 0
	for n < len(edits) && edits[n].pos < p.end {
		e := edits[n]
		if e.kind != editLabel && (e.kind != editCharge || chargeTest[e.value]) {
			return loopPoint{}, false
		}
		n++
	}
	p.edits = edits[:n]
	return p, true
}

// slowPoint appends point p to a loop's slow path, before its interrupt
// call: its code with its edits, each branch two labels shallower (the
// slow path lies in the loop's retry loop and done block, outside the
// loop and its slow block).
func (w *rewriter) slowPoint(out, old, c []byte, p loopPoint, chargeW []int64) []byte {
	from := p.start
	for _, e := range p.edits {
		out = append(out, old[from:e.pos]...)
		from = e.end
		if e.kind == editLabel {
			out = binary.AppendUvarint(out, uint64(e.value-2))
		} else {
			out = chargeLocal(out, c, chargeW[e.value])
		}
	}
	return append(out, old[from:p.end]...)
}
