package rewrite

import (
	"encoding/binary"
)

// Bulk operations: the functions the rewrite appends for memory.fill,
// memory.copy and the other bulk instructions.

// bulkChunk is the largest piece of a memory.copy or memory.fill done
// between two calls of the interrupt function (what a piece costs:
// docs/design/stop-checks.md, "Measurements once quoted in the rewrite's code").
const bulkChunk = 1 << 20

// bulkSmall is the size below which fill and copy do the operation at
// once, without charging it.
const bulkSmall = 256

// Bulk operations (memory.init, memory.copy, memory.fill, table.init,
// table.copy, table.grow, table.fill) take time in proportion to their
// size n, not their code: a loop filling a large region a pass weighs
// only a few units. The rewrite adds functions they call instead
// (bulkHelpers), so that a site grows by a call, not by the code below
// (inlined at every site, the code grew many times over and so did
// wazero's compilation; docs/design/stop-checks.md, "Measurements once quoted in the rewrite's code"):
//
//   - charge (i32) -> (i32): takes n/16 (at most 2^28, no overflow, about
//     one unit per nanosecond of memset) from the entry countdown and
//     calls its slow path if that took it below 1, so that a guest ends
//     before an operation it cannot pay for; returns n. Called before each
//     operation but the next two, which stay in place.
//   - fill and copy (i32, i32, i32) -> (), in a module with a memory:
//     charge, then memory.fill or memory.copy in pieces of bulkChunk with
//     the slow path (a call of the interrupt function, which ends the
//     guest once its attempt is over) after each, when it is larger and
//     within the memory; then the rest, or the whole operation (which
//     then traps as the original would, before writing anything). A copy
//     whose destination is above its source goes from the end, so that no
//     piece overwrites source not yet copied. A piece, not the whole
//     operation, is what can hold a guest past its stop.
//
// A single operation of table.* or memory.init still runs whole: its
// time is bounded by the table limit or its data segment's size.

// bulkHelpers returns the types (appended to the type section, from
// index typ on), the function section entries and the code section
// bodies of the added functions, and how many there are.
func (w *rewriter) bulkHelpers(typ uint32) (types, funcs, bodies []byte, n uint32) {
	types = []byte{0x60, 1, typeI32, 1, typeI32, 0x60, 3, typeI32, typeI32, typeI32, 0} // (i32) -> (i32), (i32 i32 i32) -> ()
	funcs = binary.AppendUvarint(funcs, uint64(typ))
	body := w.takeFromCountdown([]byte{0}, []byte{opLocalGet, 0, opI32Const, 4, 0x76, 0xad}) // no locals; n >> 4 (i32.shr_u, i64.extend_i32_u)
	body = append(body, opLocalGet, 0, opEnd)
	bodies = append(binary.AppendUvarint(bodies, uint64(len(body))), body...)
	n = 1
	if !w.info.hasMemory {
		return types, funcs, bodies, n
	}
	for _, isCopy := range []bool{false, true} {
		funcs = binary.AppendUvarint(funcs, uint64(typ+1))
		body = w.bulkChunked(isCopy)
		bodies = append(binary.AppendUvarint(bodies, uint64(len(body))), body...)
		n++
	}
	return types, funcs, bodies, n
}

// bulkChunked returns the body of fill or copy (bulkHelpers), whose
// parameters are a (destination), b (value or source) and n:
//
//	charge(n)
//	if n > C && max(a, b) + n <= memory bytes (fill: a + n)
//	  fill, or copy with a <= b: loop { op(a, b, C); a += C; [b += C]; n -= C; slow; br_if n > C }
//	  copy with a > b:           loop { n -= C; op(a+n, b+n, C); slow; br_if n > C }
//	end
//	op(a, b, n)
func (w *rewriter) bulkChunked(isCopy bool) []byte {
	const a, b, n = 0, 1, 2
	op := []byte{opMiscPrefix, 11, 0} // memory.fill 0
	if isCopy {
		op = []byte{opMiscPrefix, 10, 0, 0} // memory.copy 0 0
	}
	get := func(out []byte, l byte) []byte { return append(out, opLocalGet, l) }
	set := func(out []byte, l byte) []byte { return append(out, opLocalSet, l) }
	chunk := func(out []byte) []byte { return appendSleb32(append(out, opI32Const), bulkChunk) }
	add := func(out []byte, l byte, sub bool) []byte { // l +/-= C
		out = chunk(get(out, l))
		if sub {
			return set(append(out, 0x6b), l) // i32.sub
		}
		return set(append(out, 0x6a), l) // i32.add
	}
	more := func(out []byte) []byte { return append(chunk(get(out, n)), 0x4b) } // n > C (i32.gt_u)
	chunk2 := func(out []byte, c int32) []byte { return appendSleb32(append(out, opI32Const), c) }
	out := []byte{0} // no locals
	// Small: done at once, uncharged (the loop around it pays for its
	// code; 256 bytes take about what 10 instructions do).
	out = append(chunk2(get(out, n), bulkSmall), 0x49, opIf, 0x40) // i32.lt_u
	out = append(append(get(get(get(out, a), b), n), op...), opReturn, opEnd)
	out = append(get(out, n), opCall)
	out = append(binary.AppendUvarint(out, uint64(w.charge)), 0x1a) // drop
	out = append(more(out), opIf, 0x40)
	// The highest address: a + n, or max(a, b) + n for a copy, in i64.
	out = get(out, a)
	if isCopy {
		out = append(get(get(get(out, b), a), b), 0x4b, 0x1b) // i32.gt_u, select
	}
	out = append(get(append(out, 0xad), n), 0xad, 0x7c) // i64.extend_i32_u, i64.add
	out = append(out, 0x3f, 0, 0xad, opI64Const, 16, 0x86, 0x58, opIf, 0x40)
	// memory.size, i64.extend_i32_u, i64.shl, i64.le_u
	forward := func(out []byte) []byte {
		out = append(out, opLoop, 0x40)
		out = append(chunk(get(get(out, a), b)), op...)
		out = add(out, a, false)
		if isCopy {
			out = add(out, b, false)
		}
		out = add(out, n, true)
		out = w.entrySlowPath(out)
		return append(more(out), opBrIf, 0, opEnd)
	}
	if !isCopy {
		out = forward(out)
	} else {
		out = append(get(get(out, a), b), 0x4d, opIf, 0x40) // i32.le_u
		out = append(forward(out), opElse, opLoop, 0x40)
		out = add(out, n, true)
		out = append(get(get(out, a), n), 0x6a) // i32.add
		out = append(get(get(out, b), n), 0x6a) // i32.add
		out = append(chunk(out), op...)
		out = w.entrySlowPath(out)
		out = append(more(out), opBrIf, 0, opEnd, opEnd)
	}
	out = append(out, opEnd, opEnd) // the bounds' if, the size's if
	return append(append(get(get(get(out, a), b), n), op...), opEnd)
}

// takeFromCountdown appends the entry countdown minus what amount (code
// that pushes an i64) says, and the countdown's slow path if that took it
// below 1.
func (w *rewriter) takeFromCountdown(out, amount []byte) []byte {
	g := binary.AppendUvarint(nil, uint64(w.countdown))
	out = append(out, opGlobalGet)
	out = append(out, g...)
	out = append(out, amount...)
	out = append(out, 0x7d, opGlobalSet) // i64.sub
	out = append(out, g...)
	out = append(out, opGlobalGet)
	out = append(out, g...)
	out = append(out, opI64Const, 1, 0x53, opIf, 0x40) // i64.lt_s
	out = w.entrySlowPath(out)
	return append(out, opEnd)
}
