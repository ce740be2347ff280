package rewrite

import (
	"encoding/binary"
	"slices"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// The bound: what each check charges, and the code of the checks (see
// the package documentation).

// weight is what a check guarding code bytes of code, with calls call
// instructions (hostCalls of them to imported functions), subtracts from
// the budget per pass. A call counts CallWeight: the callee's own checks
// count what it does only if it calls or loops long enough, so a loop
// around cheap calls must count them. A call to the host counts
// HostCallWeight more: wazero's trampoline into Go costs far more than a
// wasm call, and a loop around one (stop_ignore), counted as a wasm call,
// was stopped later than in wazero mode (docs/design/stop-checks.md,
// "Measurements once quoted in the rewrite's code").
func weight(code int, calls, hostCalls uint32, extra int64) int64 {
	w := 1 + int64(code/4) + int64(calls)*CallWeight + int64(hostCalls)*HostCallWeight + extra
	return min(w, maxWeight)
}

// LoadWeight, GrowWeight and BulkWeight are what a load or store,
// a memory.grow and a bulk operation count on top of their bytes: what
// they cost beside the code around them (a load that misses the cache
// costs far more than its 3 bytes; memory.grow may map memory; a bulk
// operation calls one of the rewrite's helpers, which charge its size
// n/16 themselves). The verifier (sandbox/internal/verify) weighs them so.
const LoadWeight, GrowWeight, BulkWeight = 1, 256, 96

// classWeight is what a one-byte opcode counts on top of its bytes.
func classWeight(op byte) int64 {
	switch {
	case op >= 0x28 && op <= 0x3e:
		return LoadWeight
	case op == 0x40:
		return GrowWeight
	}
	return 0
}

// EntryWeight is what the entry checks, the frame's release and the exit
// test of a function that calls add to its weight (their own code).
const EntryWeight = 8

// ExitWeight is what the frame's release, run after the calls return,
// adds to the exit check's weight.
const ExitWeight = 4

// entryWeight is EntryWeight, unless a mutation test drops it.
func entryWeight() int64 {
	if mutate == "no-entry-weight" {
		return 0
	}
	return EntryWeight
}

// maxWeight bounds one charge, so that no sum of the charges a body can
// make between two tests overflows the i64 countdown: 2^40 units (about
// 18 minutes of the tightest code), far above any real charge.
const maxWeight = 1 << 40

// CallWeight is what a call in a loop counts, HostCallWeight what a call
// to the host counts on top (see weight).
const CallWeight, HostCallWeight = 32, 224

// slowPath appends a loop's slow path: redefine the locals the loop
// writes (see redefine), call the interrupt function with what is left
// of the counter (local c: the work done since its last refill is what
// it started from minus that), then give the counter a new budget,
// InterruptBudget plus again, the check's weight when the loop's pass
// goes back to its check after the slow path (a wrapped loop), so that
// the pass is not charged twice.
func (w *rewriter) slowPath(out, c []byte, sets []uint32, again int64) []byte {
	for _, l := range sets {
		if !RedefineLoops {
			break
		}
		out = w.redefine(out, l)
	}
	out = append(out, opLocalGet)
	out = append(out, c...)
	out = append(out, opCall)
	out = binary.AppendUvarint(out, uint64(w.interrupt))
	out = append(out, opI64Const)
	out = wasmbin.AppendSLEB(out, InterruptBudget+again)
	out = append(out, opLocalSet)
	return append(out, c...)
}

// redefine appends code that gives local l a new value, bit for bit the
// same: l + 0 for an integer, through its bits for a float (v128 and
// references are left as they are). It keeps a loop's values off the
// stack: wazero's register allocator stores a value that lives across a
// call (the slow path's) to the stack after each definition, and a loop's
// values, defined at its header, would be stored at every pass; redefined
// on the slow path, the values that live across the call are the new
// ones, stored on the slow path only.
func (w *rewriter) redefine(out []byte, l uint32) []byte {
	var t byte
	if int(l) < len(w.params) {
		t = w.params[l]
	} else {
		i, _ := slices.BinarySearch(w.groupEnds, l-uint32(len(w.params))+1)
		t = w.groupTypes[i]
	}
	var pre, add, post []byte
	switch t {
	case typeI32:
		add = []byte{opI32Const, 0, 0x6a} // i32.add
	case typeI64:
		add = []byte{opI64Const, 0, 0x7c} // i64.add
	case typeF32:
		pre, add, post = []byte{0xbc}, []byte{opI32Const, 0, 0x6a}, []byte{0xbe} // i32.reinterpret_f32 ... f32.reinterpret_i32
	case typeF64:
		pre, add, post = []byte{0xbd}, []byte{opI64Const, 0, 0x7c}, []byte{0xbf} // i64.reinterpret_f64 ... f64.reinterpret_i64
	default:
		return out
	}
	x := binary.AppendUvarint(nil, uint64(l))
	out = append(out, opLocalGet)
	out = append(out, x...)
	out = append(out, pre...)
	out = append(out, add...)
	out = append(out, post...)
	out = append(out, opLocalSet)
	return append(out, x...)
}

// localTypes reads a body's local groups (old up to codeStart) into w.
func (w *rewriter) localTypes(old []byte, params []byte) {
	w.params = params
	w.groupTypes, w.groupEnds = w.groupTypes[:0], w.groupEnds[:0]
	r := wreader{wasmbin.Reader{B: old}}
	n, _ := r.U32()
	var end uint32
	for range n {
		k, _ := r.U32()
		t, _ := r.Byte()
		end += k
		w.groupTypes = append(w.groupTypes, t)
		w.groupEnds = append(w.groupEnds, end)
	}
}

// loopCheck appends a loop's countdown: local c minus the loop's weight,
// and whether it is below 1.
func loopCheck(out, c []byte, l loopSite) []byte {
	w := checkWeight(l)
	out = append(out, opLocalGet)
	out = append(out, c...)
	out = append(out, opI64Const)
	out = wasmbin.AppendSLEB(out, w)
	out = append(out, 0x7d, opLocalTee) // i64.sub
	out = append(out, c...)
	return append(out, opI64Const, 1, 0x53) // i64.lt_s
}

// loopCharge appends a loop's charge without its test, in a loop whose
// every pass calls a function that tests the countdown at its entry
// before anything else in the loop (loopSite.callTested).
func loopCharge(out, c []byte, l loopSite) []byte { return chargeLocal(out, c, checkWeight(l)) }

// chargeLocal appends local c minus w, without a test: a segment's charge
// (editCharge) or a call-tested loop's (loopCharge).
func chargeLocal(out, c []byte, w int64) []byte {
	out = append(out, opLocalGet)
	out = append(out, c...)
	out = append(out, opI64Const)
	out = wasmbin.AppendSLEB(out, w)
	out = append(out, 0x7d, opLocalSet) // i64.sub
	return append(out, c...)
}

// checkWeight is what loop l's check takes from the countdown a pass:
// its header segment's weight, or, unrolled, its whole body's for
// UnrollCopies passes.
func checkWeight(l loopSite) int64 {
	if l.unroll {
		return weight(l.end-l.start, l.calls, l.hostCalls, l.extra) * int64(UnrollCopies)
	}
	return l.head
}

// frameWeight is what a call of the function whose local types w holds
// takes from the call stack's budget: frameBytes, plus frameSlotBytes
// per parameter, local (twice that for a v128) and value the operand
// stack may hold (height: an upper bound), plus a byte per
// frameCodeBytes bytes of code (its size), at most the budget and one
// (a function heavier than the whole budget always fails).
func (w *rewriter) frameWeight(height uint32, code int) int64 {
	slots := uint64(len(w.params)) + uint64(height)
	for _, t := range w.params {
		if t == typeV128 {
			slots++
		}
	}
	from := uint32(0)
	for i, end := range w.groupEnds {
		slots += uint64(end - from)
		if w.groupTypes[i] == typeV128 {
			slots += uint64(end - from)
		}
		from = end
	}
	return int64(min(frameBytes+slots*frameSlotBytes+uint64(code/frameCodeBytes), uint64(w.lim.MaxCallStack)+1))
}

// entryChecks appends both checks at the entry of a function that calls,
// with one test on the fast path: the countdown takes the function's
// weight wc and the call stack's budget its frame wf, and if either is
// below zero (their or is), the slow path ends the run if the budget is
// (call_stack), else calls the interrupt function and refills the
// countdown. Two tests, one per check, cost twice as much per call
// (docs/design/stop-checks.md, "The call-stack limit in the entry's test").
func (w *rewriter) entryChecks(out []byte, wc, wf int64) []byte {
	cd := binary.AppendUvarint(nil, uint64(w.countdown))
	st := binary.AppendUvarint(nil, uint64(w.stackLeft))
	for _, c := range []struct {
		g []byte
		v int64
	}{{cd, wc}, {st, wf}} {
		out = append(out, opGlobalGet)
		out = append(out, c.g...)
		out = append(out, opI64Const)
		out = wasmbin.AppendSLEB(out, c.v)
		out = append(out, 0x7d, opGlobalSet) // i64.sub
		out = append(out, c.g...)
	}
	out = append(out, opGlobalGet)
	out = append(out, cd...)
	out = append(out, opGlobalGet)
	out = append(out, st...)
	out = append(out, 0x84, opI64Const, 0, 0x53, opIf, 0x40) // i64.or, i64.lt_s
	out = append(out, opGlobalGet)
	out = append(out, st...)
	out = append(out, opI64Const, 0, 0x53, opIf, 0x40, opCall) // i64.lt_s
	out = binary.AppendUvarint(out, uint64(w.callStack))
	out = append(out, opUnreachable, opEnd)
	out = w.entrySlowPath(out)
	return append(out, opEnd)
}

// entryChecksCached appends the entry checks of a function with loop
// checks, which caches the countdown (w.counter, see The bound): the
// countdown minus the function's weight wc goes to the cache, and the
// test reads it there; with the call-stack limit (limited), the call
// stack's budget takes its frame wf and shares the test, as in
// entryChecks. The global is written when the cache is (writeBack).
func (w *rewriter) entryChecksCached(out []byte, wc, wf int64, limited bool) []byte {
	st := binary.AppendUvarint(nil, uint64(w.stackLeft))
	out = append(out, opGlobalGet)
	out = binary.AppendUvarint(out, uint64(w.countdown))
	out = append(out, opI64Const)
	out = wasmbin.AppendSLEB(out, wc)
	out = append(out, 0x7d, opLocalTee) // i64.sub
	out = append(out, w.counter...)
	if limited {
		out = append(out, opGlobalGet)
		out = append(out, st...)
		out = append(out, opI64Const)
		out = wasmbin.AppendSLEB(out, wf)
		out = append(out, 0x7d, opGlobalSet) // i64.sub
		out = append(out, st...)
		out = append(out, opGlobalGet)
		out = append(out, st...)
		out = append(out, 0x84) // i64.or
	}
	out = append(out, opI64Const, 0, 0x53, opIf, 0x40) // i64.lt_s
	if limited {
		out = append(out, opGlobalGet)
		out = append(out, st...)
		out = append(out, opI64Const, 0, 0x53, opIf, 0x40, opCall) // i64.lt_s
		out = binary.AppendUvarint(out, uint64(w.callStack))
		out = append(out, opUnreachable, opEnd)
	}
	out = w.slowPath(out, w.counter, nil, 0) // the interrupt call and the refill, as a loop's
	return append(out, opEnd)
}

// entrySlowPath appends the entry countdown's slow path: the countdown
// (what is left of it: the work done since its refill is InterruptBudget
// minus that) stays on the stack, the countdown is refilled, and the
// interrupt function called with what was left. The refill comes first so
// that, when the host function runs, the countdown holds no work it has
// not counted (the work counter, the sandbox's interrupt.go).
func (w *rewriter) entrySlowPath(out []byte) []byte {
	cd := binary.AppendUvarint(nil, uint64(w.countdown))
	out = append(out, opGlobalGet)
	out = append(out, cd...)
	out = append(out, opI64Const)
	out = wasmbin.AppendSLEB(out, InterruptBudget)
	out = append(out, opGlobalSet)
	out = append(out, cd...)
	out = append(out, opCall)
	return binary.AppendUvarint(out, uint64(w.interrupt))
}

// chargeTest appends a split function's segment charge: the countdown (its
// cache, or the global) takes wc and is tested.
func (w *rewriter) chargeTest(out []byte, wc int64) []byte {
	if w.counter == nil {
		return w.takeFromCountdown(out, wasmbin.AppendSLEB([]byte{opI64Const}, wc))
	}
	return w.exitCheck(out, wc)
}

// exitCheck appends the exit test of a function that calls: the
// countdown takes r, the weight of the code after its first call, and is
// tested. The code a frame runs after its calls return was charged at its
// entry, before an interrupt deeper down refilled the countdown: without
// this, a recursion of depth d unwinds d frames of it with no test and
// nothing charged (the verifier's "way back up").
func (w *rewriter) exitCheck(out []byte, r int64) []byte {
	if w.counter == nil {
		return w.takeFromCountdown(out, wasmbin.AppendSLEB([]byte{opI64Const}, r))
	}
	out = append(out, opLocalGet)
	out = append(out, w.counter...)
	out = append(out, opI64Const)
	out = wasmbin.AppendSLEB(out, r)
	out = append(out, 0x7d, opLocalTee) // i64.sub
	out = append(out, w.counter...)
	out = append(out, opI64Const, 1, 0x53, opIf, 0x40) // i64.lt_s
	out = w.slowPath(out, w.counter, nil, 0)
	return append(out, opEnd)
}

// writeBack appends the countdown's local cache (w.counter) stored to
// its global: before every call and at every way out of a function with
// loop checks, so that the global holds the instance's whole countdown
// whenever code other than this frame's runs or reads it.
func (w *rewriter) writeBack(out []byte) []byte {
	out = append(out, opLocalGet)
	out = append(out, w.counter...)
	out = append(out, opGlobalSet)
	return binary.AppendUvarint(out, uint64(w.countdown))
}

// reload appends the countdown's global read into its local cache
// (w.counter): at the entry of a function with loop checks and after
// every call in it.
func (w *rewriter) reload(out []byte) []byte {
	out = append(out, opGlobalGet)
	out = binary.AppendUvarint(out, uint64(w.countdown))
	out = append(out, opLocalSet)
	return append(out, w.counter...)
}

// stackRelease appends the exit of the call-stack limit: the function's
// weight given back.
func (w *rewriter) stackRelease(out []byte, weight int64) []byte {
	g := binary.AppendUvarint(nil, uint64(w.stackLeft))
	out = append(out, opGlobalGet)
	out = append(out, g...)
	out = append(out, opI64Const)
	out = wasmbin.AppendSLEB(out, weight)
	out = append(out, 0x7c, opGlobalSet) // i64.add
	return append(out, g...)
}

// simpleEdit appends what edit e (editFunc, editLabel or editReturn)
// puts in place of its bytes, its label deeper by deeper blocks. release
// is the function's frame release under the call-stack limit (nil
// without it), which a return runs first: the values the return takes
// stay on the stack beneath the global's update. A return is not turned
// into a branch to the function's block: thousands of returns would be
// thousands of branches to one label, which wazero compiles in quadratic
// time (max_branches_to_label).
func (w *rewriter) simpleEdit(out []byte, e bodyEdit, release []byte, deeper uint32) []byte {
	switch e.kind {
	case editFunc:
		out = binary.AppendUvarint(out, uint64(e.value))
	case editLabel:
		out = binary.AppendUvarint(out, uint64(e.value+deeper))
	case editReturn:
		out = append(out, release...)
		out = append(out, opReturn)
	case editBulk:
		f := w.charge // its size charged, then the operation (kept: pos == end)
		switch e.value {
		case 10:
			f = w.copy // the operation, replaced
		case 11:
			f = w.fill
		}
		if w.counter != nil {
			out = w.writeBack(out)
		}
		out = append(out, opCall)
		out = binary.AppendUvarint(out, uint64(f))
		if w.counter != nil {
			out = w.reload(out)
		}
	case editSync:
		if w.counter == nil {
			break
		}
		if e.value == 0 {
			out = w.writeBack(out)
		} else {
			out = w.reload(out)
		}
	}
	return out
}
