package resume

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// The transform of one function body (doc.go says what the code does).

const (
	opBlock, opLoop, opIf, opElse, opEnd = 0x02, 0x03, 0x04, 0x05, 0x0b
	opBr, opBrIf, opBrTable, opReturn    = 0x0c, 0x0d, 0x0e, 0x0f
	opCall, opCallIndirect, opDrop       = 0x10, 0x11, 0x1a
	opLocalGet, opLocalSet, opLocalTee   = 0x20, 0x21, 0x22
	opGlobalGet, opGlobalSet             = 0x23, 0x24
	opI32Const, opI64Const               = 0x41, 0x42
	opI32Eqz, opI32Eq, opI32Ne           = 0x45, 0x46, 0x47
	opI32LtU, opI32GeU                   = 0x49, 0x4f
	opI32Sub, opI64Ne                    = 0x6b, 0x52
	opI32WrapI64, opI64ExtendI32U        = 0xa7, 0xad
)

// construct is what the first pass learns of a block, loop or if.
type construct struct {
	els, end int  // the positions of its else (-1 if none) and end opcodes
	sites    bool // a site lies within it (a loop always: its header)
	calls    bool // a call or call_indirect lies within it
}

// function is one body being transformed.
type function struct {
	m         *module
	fn        uint32
	code      []byte // the whole body, locals included
	codeStart int
	locals    []byte // every local's type, parameters first, added ones last
	nOrig     int
	results   []byte
	idx, ti   uint32            // the added locals: the site to resume at, a call_indirect's table slot
	free      map[byte][]uint32 // spill locals not in use, by type
	freeTemp  map[byte][]uint32 // temps not in use (temps)
	sites     []int             // positions of every site's instruction, in order
	cons      map[int]construct
	labels    []bool // the output's open labels, innermost last: true for the module's own
	st        stack
	out       []byte
}

// code transforms every body and returns the code section's payload.
func (m *module) code(bodies [][]byte) ([]byte, error) {
	out := binary.AppendUvarint(nil, uint64(len(bodies)))
	var b []byte
	for i, body := range bodies {
		fn := m.imported + uint32(i)
		f := &function{m: m, fn: fn, code: body}
		var err error
		if m.instrumented[fn] {
			b, err = f.transform()
		} else {
			b, err = f.copy()
		}
		if err != nil {
			return nil, fmt.Errorf("resume: function %d: %w", fn, err)
		}
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	// The helpers the bodies use, after them.
	for _, b := range m.helperBodies {
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	p, err := vector(out, uint32(len(m.helperBodies)), nil)
	return p, err
}

// readLocals reads the local declarations into f.locals (parameters first).
func (f *function) readLocals() error {
	t := f.m.types[f.m.funcs[f.fn]]
	f.locals = append([]byte(nil), t.params...)
	f.results = t.results
	r := reader{wasmbin.Reader{B: f.code}}
	groups, err := r.U32()
	if err != nil {
		return err
	}
	for range groups {
		n, err := r.U32()
		if err != nil {
			return err
		}
		typ, err := r.Byte()
		if err != nil {
			return err
		}
		if uint64(len(f.locals))+uint64(n) > 100_000 {
			return refuse("a function with more than 100,000 locals")
		}
		for range n {
			f.locals = append(f.locals, typ)
		}
	}
	f.codeStart = r.Pos
	f.nOrig = len(f.locals)
	return nil
}

// copy renumbers the calls of a body the transform leaves as it is.
func (f *function) copy() ([]byte, error) {
	if err := f.readLocals(); err != nil {
		return nil, err
	}
	f.out = append(f.out, f.code[:f.codeStart]...)
	f.labels = []bool{true}
	if err := f.emitRun(f.codeStart, len(f.code)); err != nil {
		return nil, err
	}
	return f.out, nil
}

// prescan finds the sites and the constructs.
func (f *function) prescan() error {
	f.cons = map[int]construct{}
	var open, calls []int
	r := reader{wasmbin.Reader{B: f.code, Pos: f.codeStart}}
	for !r.EOF() {
		in, err := r.next()
		if err != nil {
			return err
		}
		switch in.op {
		case opBlock, opLoop, opIf:
			open = append(open, in.pos)
			f.cons[in.pos] = construct{els: -1}
			if in.op == opLoop {
				f.sites = append(f.sites, in.pos)
			}
		case opElse:
			if len(open) == 0 {
				return fmt.Errorf("else outside an if")
			}
			c := f.cons[open[len(open)-1]]
			c.els = in.pos
			f.cons[open[len(open)-1]] = c
		case opEnd:
			if len(open) == 0 {
				if !r.EOF() {
					return fmt.Errorf("code after the function's end")
				}
				break
			}
			p := open[len(open)-1]
			open = open[:len(open)-1]
			c := f.cons[p]
			c.end = in.pos
			i, _ := slices.BinarySearch(f.sites, p)
			c.sites = i < len(f.sites) && f.sites[i] < in.pos
			i, _ = slices.BinarySearch(calls, p)
			c.calls = i < len(calls) && calls[i] < in.pos
			f.cons[p] = c
		case opCall:
			calls = append(calls, in.pos)
			rr := reader{wasmbin.Reader{B: f.code, Pos: in.imm}}
			c, _ := rr.U32()
			if int(c) < len(f.m.instrumented) && f.m.instrumented[c] || f.m.isBlocking(c) {
				f.sites = append(f.sites, in.pos)
			}
		case opCallIndirect:
			f.sites = append(f.sites, in.pos)
			calls = append(calls, in.pos)
		}
	}
	return nil
}

// siteIndex is the number of the first site at or after pos (0 is the
// function's entry).
func (f *function) siteIndex(pos int) int32 {
	i, _ := slices.BinarySearch(f.sites, pos)
	return int32(i) + 1
}

// newLocal adds a local of type t, or reuses one of free's.
func (f *function) newLocal(t byte, free map[byte][]uint32) (uint32, error) {
	switch t {
	case i32, i64, f32, f64:
	default:
		return 0, refuse("a reference or vector value lives across a call or a loop")
	}
	if l := free[t]; len(l) > 0 {
		free[t] = l[:len(l)-1]
		return l[len(l)-1], nil
	}
	f.locals = append(f.locals, t)
	return uint32(len(f.locals) - 1), nil
}

// takeLocals takes locals for values of types ts from the pool free.
func (f *function) takeLocals(ts []byte, free map[byte][]uint32) ([]uint32, error) {
	ls := make([]uint32, len(ts))
	for i, t := range ts {
		l, err := f.newLocal(t, free)
		if err != nil {
			return nil, err
		}
		ls[i] = l
	}
	return ls, nil
}

// giveBack returns locals ls to the pool free.
func (f *function) giveBack(ls []uint32, free map[byte][]uint32) {
	for _, l := range ls {
		t := f.locals[l]
		free[t] = append(free[t], l)
	}
}

// spill takes locals that hold values saved for a site (release gives
// them back).
func (f *function) spill(ts []byte) ([]uint32, error) { return f.takeLocals(ts, f.free) }

func (f *function) release(ls []uint32) { f.giveBack(ls, f.free) }

// stashUnder moves the values under the top ones, of types top, into
// saved: the stack keeps only the top ones. A temp holds them meanwhile,
// from a pool of its own: a temp is written while the guest rewinds too,
// and must never be a local that holds values saved for a site, which
// rewinding restores and must not lose.
func (f *function) stashUnder(saved []uint32, top []byte) error {
	return f.underTop(saved, top, f.sets)
}

// restoreUnder puts the values of saved back under the top ones, of
// types top (stashUnder's inverse).
func (f *function) restoreUnder(saved []uint32, top []byte) error {
	return f.underTop(saved, top, f.gets)
}

// underTop is stashUnder and restoreUnder: it sets the top values, of
// types top, aside in a temp, moves saved (move: f.sets or f.gets) and
// puts the top values back.
func (f *function) underTop(saved []uint32, top []byte, move func([]uint32)) error {
	if len(saved) == 0 {
		return nil
	}
	tmp, err := f.takeLocals(top, f.freeTemp)
	if err != nil {
		return err
	}
	f.sets(tmp)
	move(saved)
	f.gets(tmp)
	f.giveBack(tmp, f.freeTemp)
	return nil
}

func (f *function) emit(b ...byte) { f.out = append(f.out, b...) }

func (f *function) emitU(op byte, v uint32) {
	f.out = append(f.out, op)
	f.out = binary.AppendUvarint(f.out, uint64(v))
}

func (f *function) emitI32(v int32) {
	f.out = append(f.out, opI32Const)
	f.out = wasmbin.AppendSLEB(f.out, int64(v))
}

// sets pops the values into locals ls (the last first).
func (f *function) sets(ls []uint32) {
	for i := len(ls) - 1; i >= 0; i-- {
		f.emitU(opLocalSet, ls[i])
	}
}

func (f *function) gets(ls []uint32) {
	for _, l := range ls {
		f.emitU(opLocalGet, l)
	}
}

func (f *function) drops(n int) {
	for range n {
		f.emit(opDrop)
	}
}

func (f *function) dummies(ts []byte) error {
	for _, t := range ts {
		var err error
		if f.out, err = dummy(f.out, t); err != nil {
			return err
		}
	}
	return nil
}

// open emits an added if (or block) of type params -> results.
func (f *function) open(op byte, params, results []byte) {
	f.emit(op)
	f.out = f.m.blockType(f.out, params, results)
	f.labels = append(f.labels, false)
}

func (f *function) close() {
	f.emit(opEnd)
	f.labels = f.labels[:len(f.labels)-1]
}

// brUnwind branches to the function's unwind block.
func (f *function) brUnwind() { f.emitU(opBr, uint32(len(f.labels)-1)) }

// label turns a label of the module's code (counted in its own labels)
// into the output's.
func (f *function) label(l uint32) (uint32, error) {
	seen := uint32(0)
	for i := len(f.labels) - 1; i >= 0; i-- {
		if f.labels[i] {
			if seen == l {
				return uint32(len(f.labels) - 1 - i), nil
			}
			seen++
		}
	}
	return 0, fmt.Errorf("branch to label %d, past the function", l)
}

// emitRun copies the code in [from, to), its labels and functions
// renumbered.
func (f *function) emitRun(from, to int) error {
	r := reader{wasmbin.Reader{B: f.code, Pos: from}}
	for r.Pos < to {
		in, err := r.next()
		if err != nil {
			return err
		}
		ir := reader{wasmbin.Reader{B: f.code, Pos: in.imm}}
		switch in.op {
		case opBlock, opLoop, opIf:
			f.labels = append(f.labels, true)
		case opEnd:
			f.labels = f.labels[:len(f.labels)-1]
		case opBr, opBrIf:
			l, _ := ir.U32()
			out, err := f.label(l)
			if err != nil {
				return err
			}
			f.emitU(in.op, out)
			continue
		case opBrTable:
			n, _ := ir.U32()
			f.emitU(opBrTable, n)
			for i := uint32(0); i <= n; i++ {
				l, _ := ir.U32()
				out, err := f.label(l)
				if err != nil {
					return err
				}
				f.out = binary.AppendUvarint(f.out, uint64(out))
			}
			continue
		case opCall:
			c, _ := ir.U32()
			f.emitU(in.op, f.m.shift(c))
			continue
		case wasmbin.OpRefFunc:
			c, _ := ir.U32()
			f.emitU(in.op, f.m.ref(c))
			continue
		}
		f.emit(f.code[in.pos:in.end]...)
	}
	return nil
}

// levelEnd finds the else or end that closes the construct pos is in.
func (f *function) levelEnd(pos int) (int, error) {
	r := reader{wasmbin.Reader{B: f.code, Pos: pos}}
	depth := 0
	for {
		in, err := r.next()
		if err != nil {
			return 0, err
		}
		switch in.op {
		case opBlock, opLoop, opIf:
			depth++
		case opElse:
			if depth == 0 {
				return in.pos, nil
			}
		case opEnd:
			if depth == 0 {
				return in.pos, nil
			}
			depth--
		}
	}
}

// transform makes an instrumented body resumable.
func (f *function) transform() ([]byte, error) {
	if err := f.readLocals(); err != nil {
		return nil, err
	}
	for _, t := range f.locals {
		if t != i32 && t != i64 && t != f32 && t != f64 {
			return nil, refuse("function %d has a local of type 0x%02x (references and vectors are not saved yet)", f.fn, t)
		}
	}
	if err := f.prescan(); err != nil {
		return nil, err
	}
	f.free, f.freeTemp = map[byte][]uint32{}, map[byte][]uint32{}
	f.idx = uint32(len(f.locals))
	f.ti = f.idx + 1
	f.locals = append(f.locals, i32, i32)
	f.labels = []bool{false, true} // the unwind block, the body's block (the function's label)
	end, err := f.seq(f.codeStart, 0, nil)
	if err != nil {
		return nil, err
	}
	if end != len(f.code)-1 {
		return nil, fmt.Errorf("the body ends at %d of %d", end, len(f.code))
	}
	main := f.out
	f.out = nil
	return f.assemble(main)
}

// assemble puts the locals, the prologue, main (the body's code, without
// its end) and the epilogue together.
func (f *function) assemble(main []byte) ([]byte, error) {
	m := f.m
	out := f.code[:f.codeStart]
	// The added locals, after the declared ones: a group per run of one type.
	r := reader{wasmbin.Reader{B: f.code}}
	groups, _ := r.U32()
	var added []byte
	extra := uint32(0)
	for i := f.nOrig; i < len(f.locals); {
		j := i
		for j < len(f.locals) && f.locals[j] == f.locals[i] {
			j++
		}
		added = binary.AppendUvarint(added, uint64(j-i))
		added = append(added, f.locals[i])
		extra++
		i = j
	}
	f.out = binary.AppendUvarint(nil, uint64(groups+extra))
	f.out = append(f.out, out[r.Pos:]...)
	f.out = append(f.out, added...)

	f.emit(opBlock, 0x40) // unwind
	chunks := chunksOf(len(f.locals))
	if Omit == "prologue" || Omit == "frames" {
		f.emitU(opGlobalGet, m.pt)
		f.emit(opIf, 0x40, opBr, 1, opEnd)
	}
	// The prologue: rewind (restore the frame), or unwind at the entry.
	if Omit != "prologue" && Omit != "frames" {
		f.emitU(opGlobalGet, m.pt)
		f.emit(opIf, 0x40)
		f.emitU(opGlobalGet, m.rw)
		f.emit(opIf, 0x40)
		// Passed while the caller rewinds to a later site: return at once.
		f.emitU(opGlobalGet, m.skip)
		f.emit(opIf, 0x40)
		f.emitI32(0)
		f.emitU(opGlobalSet, m.skip)
		if err := f.dummies(f.results); err != nil {
			return nil, err
		}
		f.emit(opReturn, opEnd)
		f.emitU(opCall, m.helper(false, []byte{i64}))
		f.emit(opI64Const)
		f.out = wasmbin.AppendSLEB(f.out, int64(f.fn))
		f.emit(opI64Ne, opIf, 0x40, wasmbin.OpUnreachable, opEnd)
		for c := len(chunks) - 1; c >= 0; c-- {
			lo, hi := chunks[c][0], chunks[c][1]
			f.emitU(opCall, m.helper(false, f.locals[lo:hi]))
			for l := hi - 1; l >= lo; l-- {
				f.emitU(opLocalSet, uint32(l))
			}
		}
		f.emitU(opLocalGet, f.idx)
		f.emit(opI32Eqz, opIf, 0x40)
		f.arrive()
		f.emit(opEnd)
		f.emit(opElse)
		f.emitI32(0)
		f.emitU(opLocalSet, f.idx)
		f.emitU(opBr, 2)
		f.emit(opEnd, opEnd)
	}
	// The body, as a block that yields its results.
	f.emit(opBlock)
	f.out = m.blockType(f.out, nil, f.results)
	f.out = append(f.out, main...)
	f.emit(opEnd, opReturn, opEnd)
	// The epilogue: save the frame, return stand-ins.
	f.emitI32(1)
	f.emitU(opGlobalSet, m.uw)
	f.emitI32(0)
	f.emitU(opGlobalSet, m.pt)
	for _, c := range chunks {
		if Omit == "frames" {
			break
		}
		for l := c[0]; l < c[1]; l++ {
			f.emitU(opLocalGet, uint32(l))
		}
		f.emitU(opCall, m.helper(true, f.locals[c[0]:c[1]]))
	}
	if Omit != "frames" {
		f.emit(opI64Const)
		f.out = wasmbin.AppendSLEB(f.out, int64(f.fn))
		f.emitU(opCall, m.helper(true, []byte{i64}))
	}
	if err := f.dummies(f.results); err != nil {
		return nil, err
	}
	f.emit(opEnd)
	return f.out, nil
}

// Omit leaves out one part of the resumable code, for benchmarks only
// (BenchmarkResumableInterleaved's variants: what each part costs); the
// result runs as the module did, but does not resume. "" in use.
var Omit string

// chunkSize is the most locals one helper saves or restores.
const chunkSize = 32

// chunksOf cuts n locals into [lo, hi) runs of at most chunkSize.
func chunksOf(n int) [][2]int {
	var cs [][2]int
	for lo := 0; lo < n; lo += chunkSize {
		cs = append(cs, [2]int{lo, min(n, lo+chunkSize)})
	}
	return cs
}

// helper is the function that saves (push) or restores the values of
// types ts, added to the module on first use: a frame's save and restore
// are calls of a few of them, so that the function they belong to grows
// by little and calls no host function itself. Each first calls an empty
// function of the module (nopHelper): a function that calls none of the
// module's is charged whole (its host calls too) to its callers at each
// of their entries, cold path or not (the rewrite's uncountedWork); one
// that calls is charged at its own entry, and only when it runs.
func (m *module) helper(save bool, ts []byte) uint32 {
	key := fmt.Sprintf("%t:%s", save, ts)
	if i, ok := m.helperIdx[key]; ok {
		return i
	}
	nop := m.nopHelper() // first: its type and body go before this one's
	var body []byte
	if save {
		m.helperTypes = append(m.helperTypes, m.typeIndex(ts, nil))
		body = append(body, 0, opCall)
		body = binary.AppendUvarint(body, uint64(nop))
		for i, t := range ts {
			body = append(body, opLocalGet)
			body = binary.AppendUvarint(body, uint64(i))
			switch t {
			case i32:
				body = append(body, opI64ExtendI32U)
			case f32:
				body = append(body, 0xbc, opI64ExtendI32U)
			case f64:
				body = append(body, 0xbd)
			}
			body = append(body, opCall)
			body = binary.AppendUvarint(body, uint64(m.push))
		}
	} else {
		m.helperTypes = append(m.helperTypes, m.typeIndex(nil, ts))
		body = binary.AppendUvarint(body, uint64(len(ts)))
		for _, t := range ts {
			body = append(body, 1, t)
		}
		body = append(body, opCall)
		body = binary.AppendUvarint(body, uint64(nop))
		for i := len(ts) - 1; i >= 0; i-- {
			body = append(body, opCall)
			body = binary.AppendUvarint(body, uint64(m.pop))
			switch ts[i] {
			case i32:
				body = append(body, opI32WrapI64)
			case f32:
				body = append(body, opI32WrapI64, 0xbe)
			case f64:
				body = append(body, 0xbf)
			}
			body = append(body, opLocalSet)
			body = binary.AppendUvarint(body, uint64(i))
		}
		for i := range ts {
			body = append(body, opLocalGet)
			body = binary.AppendUvarint(body, uint64(i))
		}
	}
	body = append(body, opEnd)
	i := uint32(len(m.funcs)) + addedFuncs + uint32(len(m.helperBodies))
	m.helperBodies = append(m.helperBodies, body)
	m.helperIdx[key] = i
	return i
}

// nopHelper is an empty function the helpers call (helper says why).
func (m *module) nopHelper() uint32 {
	if i, ok := m.helperIdx["nop"]; ok {
		return i
	}
	m.helperTypes = append(m.helperTypes, m.typeIndex(nil, nil))
	i := uint32(len(m.funcs)) + addedFuncs + uint32(len(m.helperBodies))
	m.helperBodies = append(m.helperBodies, []byte{0, opEnd})
	m.helperIdx["nop"] = i
	return i
}

// arrive ends the rewind: the guest runs on from here.
func (f *function) arrive() {
	f.emitI32(0)
	f.emitU(opGlobalSet, f.m.rw)
	f.emitI32(0)
	f.emitU(opGlobalSet, f.m.pt)
}

// seq transforms one construct's code from pos (its stack starts at base,
// its parameters on it) up to its else or end, whose position it returns.
//
// tail, when not nil, is the construct's result types: its code after
// its last site (its trailing run) is then guarded too, because a rewind
// passes through it on its way to a site after it (a block, which is
// entered whatever the site; a loop's or an if's is entered only if the
// site lies within, and so arrives before its trailing run).
func (f *function) seq(pos, base int, tail []byte) (int, error) {
	runStart, runIn := pos, slices.Clone(f.st[base:])
	trailing := func(end int) error {
		if tail == nil || end == runStart {
			return f.emitRun(runStart, end)
		}
		return f.guardRun(runStart, end, runIn, tail)
	}
	for {
		r := reader{wasmbin.Reader{B: f.code, Pos: pos}}
		in, err := r.next()
		if err != nil {
			return 0, err
		}
		switch in.op {
		case opElse, opEnd:
			return in.pos, trailing(in.pos)
		case opBlock, opLoop, opIf:
			c := f.cons[in.pos]
			bt, _ := (&reader{wasmbin.Reader{B: f.code, Pos: in.imm}}).S33()
			params, results, err := f.m.blockSig(bt)
			if err != nil {
				return 0, err
			}
			if !c.sites {
				n := len(params)
				if in.op == opIf {
					n++
				}
				if err := f.st.pop(n, base); err != nil {
					return 0, err
				}
				f.st.push(results...)
				pos = c.end + 1
				continue
			}
			if err := f.constructSite(runStart, runIn, in, c, params, results, base); err != nil {
				return 0, err
			}
			pos = c.end + 1
		case opCall, opCallIndirect:
			i, found := slices.BinarySearch(f.sites, in.pos)
			_ = i
			if !found {
				if _, err := f.step(in, &f.st, base); err != nil {
					return 0, err
				}
				pos = in.end
				continue
			}
			if err := f.callSite(runStart, runIn, in, base); err != nil {
				return 0, err
			}
			pos = in.end
		default:
			dead, err := f.step(in, &f.st, base)
			if err != nil {
				return 0, err
			}
			pos = in.end
			if dead {
				end, err := f.levelEnd(pos)
				if err != nil {
					return 0, err
				}
				return end, trailing(end)
			}
			continue
		}
		runStart, runIn = pos, slices.Clone(f.st[base:])
	}
}

// guardRun emits the run [from, to), whose stack starts as in and ends
// as out, skipped while the guest rewinds (stand-ins of out instead).
func (f *function) guardRun(from, to int, in, out []byte) error {
	f.emitU(opGlobalGet, f.m.rw)
	f.open(opIf, in, out)
	f.drops(len(in))
	if err := f.dummies(out); err != nil {
		return err
	}
	f.emit(opElse)
	if err := f.emitRun(from, to); err != nil {
		return err
	}
	f.close()
	return nil
}

// callSite emits the run before a call that can unwind, and the call:
// skipped while the guest rewinds unless it is the site to resume at,
// where it calls again (the callee rewinds in turn); after it, unwinding
// saves the values under its operands and leaves.
func (f *function) callSite(runStart int, in stack, call instr, base int) error {
	k := f.siteIndex(call.pos)
	ir := reader{wasmbin.Reader{B: f.code, Pos: call.imm}}
	idx, _ := ir.U32()
	var t funcType
	var operands int
	if call.op == opCall {
		var err error
		if t, err = f.m.funcType(idx); err != nil {
			return err
		}
		operands = len(t.params)
	} else {
		if int(idx) >= len(f.m.types) {
			return fmt.Errorf("call_indirect of type %d", idx)
		}
		t = f.m.types[idx]
		operands = len(t.params) + 1
	}
	level := f.st[base:]
	if len(level) < operands {
		return errUnderflow
	}
	extras := slices.Clone(level[:len(level)-operands])
	saved, err := f.spill(extras)
	if err != nil {
		return err
	}
	after := append(slices.Clone(extras), t.results...)
	args := slices.Clone(level[len(level)-operands:])
	emitCall := func() {
		if call.op == opCall {
			f.emitU(opCall, f.m.shift(idx))
		} else {
			f.emit(f.code[call.pos:call.end]...)
		}
	}
	if Omit == "call-guard" {
		if err := f.emitRun(runStart, call.pos); err != nil {
			return err
		}
		if err := f.stashUnder(saved, args); err != nil {
			return err
		}
		emitCall()
	} else if call.op == opCall && f.m.isBlocking(idx) {
		return f.hostSite(runStart, in, call, idx, base, t, saved, after)
	} else if call.op == opCall {
		// While rewinding: stand-in operands, and unless this is the site
		// to resume at the callee returns at once (skip, its prologue);
		// the call itself stays where it was, for the rewrite to see.
		f.emitU(opGlobalGet, f.m.rw)
		f.open(opIf, in, t.params)
		f.drops(len(in))
		if err := f.dummies(t.params); err != nil {
			return err
		}
		f.emitU(opLocalGet, f.idx)
		f.emitI32(k)
		f.emit(opI32Ne)
		f.emitU(opGlobalSet, f.m.skip)
		f.emit(opElse)
		if err := f.emitRun(runStart, call.pos); err != nil {
			return err
		}
		if err := f.stashUnder(saved, args); err != nil {
			return err
		}
		f.close()
		emitCall()
	} else {
		// While rewinding, the call is made only at the site to resume
		// at, in the guard (a call_indirect from the table slot it saved,
		// ti); passing, not at all.
		err := f.guardedCall(runStart, in, call, k, t.results, func() error {
			if err := f.dummies(t.params); err != nil {
				return err
			}
			f.emitU(opLocalGet, f.ti)
			return nil
		}, func() error {
			if err := f.stashUnder(saved, args); err != nil {
				return err
			}
			f.emitU(opLocalTee, f.ti)
			return nil
		}, emitCall)
		if err != nil {
			return err
		}
	}
	return f.afterCall(k, saved, t.results, after, base)
}

// guardedCall emits a site's call that the guest, while it rewinds, makes
// only at the site to resume at (after atSite), and passing it not at all
// (stand-ins of its results); running, it makes after the run before it
// and before.
func (f *function) guardedCall(runStart int, in stack, call instr, k int32, results []byte, atSite, before func() error, emitCall func()) error {
	f.emitU(opGlobalGet, f.m.rw)
	f.open(opIf, in, results)
	f.drops(len(in))
	f.emitU(opLocalGet, f.idx)
	f.emitI32(k)
	f.emit(opI32Eq)
	f.open(opIf, nil, results)
	if err := atSite(); err != nil {
		return err
	}
	emitCall()
	f.emit(opElse)
	if err := f.dummies(results); err != nil {
		return err
	}
	f.close()
	f.emit(opElse)
	if err := f.emitRun(runStart, call.pos); err != nil {
		return err
	}
	if err := before(); err != nil {
		return err
	}
	emitCall()
	f.close()
	return nil
}

// afterCall emits what follows a site's call: unwinding, it leaves (the
// values under the results are in their locals, saved); else it puts
// them back under the results.
func (f *function) afterCall(k int32, saved []uint32, results, after []byte, base int) error {
	if Omit != "after-call" {
		f.emitU(opGlobalGet, f.m.uw)
		f.emit(opIf, 0x40)
		f.labels = append(f.labels, false)
		f.emitI32(k)
		f.emitU(opLocalSet, f.idx)
		f.brUnwind()
		f.close()
	}
	if err := f.restoreUnder(saved, results); err != nil {
		return err
	}
	f.release(saved)
	f.st = append(f.st[:base], after...)
	return nil
}

// hostSite emits the run before a call of a blocking import, and the
// call, a point: the host function may set unwinding and return, and the
// guest leaves with this site to resume at; rewinding to it, the guest
// arrives here and makes the call again, with the arguments it had (kept
// in locals of the frame, from before the call). Passing it while
// rewinding, the call is not made.
func (f *function) hostSite(runStart int, in stack, call instr, idx uint32, base int, t funcType, saved []uint32, after []byte) error {
	k := f.siteIndex(call.pos)
	args, err := f.spill(t.params)
	if err != nil {
		return err
	}
	emitCall := func() { f.emitU(opCall, idx) }
	err = f.guardedCall(runStart, in, call, k, t.results, func() error {
		f.arrive()
		f.gets(args)
		return nil
	}, func() error {
		f.sets(args)
		f.sets(saved)
		f.gets(args)
		return nil
	}, emitCall)
	if err != nil {
		return err
	}
	f.release(args)
	return f.afterCall(k, saved, t.results, after, base)
}

// constructSite emits the run before a block, loop or if that holds a
// site, and the construct: while the guest rewinds, it is entered only if
// the site to resume at lies within it (an if's arm chosen by where it
// lies), and the run before it is skipped.
func (f *function) constructSite(runStart int, in stack, op instr, c construct, params, results []byte, base int) error {
	operands := slices.Clone(params)
	if op.op == opIf {
		operands = append(operands, i32)
	}
	level := f.st[base:]
	if len(level) < len(operands) {
		return errUnderflow
	}
	extras := slices.Clone(level[:len(level)-len(operands)])
	saved, err := f.spill(extras)
	if err != nil {
		return err
	}
	lo := f.siteIndex(op.pos)
	hi := f.siteIndex(c.end)
	// Only a loop is entered while rewinding only if the site lies within
	// it (an enter test and an if around it, paid once per entry, not per
	// pass). A block is entered whatever the site, and an if's then arm
	// when the site lies within it, else its else arm: their code after
	// their last site is guarded instead (seq's tail). A guard before the
	// construct only if there is a run to skip, values to keep or an if's
	// condition to choose.
	block, loop := op.op == opBlock, op.op == opLoop
	if !block || runStart != op.pos || len(extras) > 0 {
		guardOut := slices.Clone(operands)
		if loop {
			guardOut = append(guardOut, i32) // whether to enter
		}
		f.emitU(opGlobalGet, f.m.rw)
		f.open(opIf, in, guardOut)
		f.drops(len(in))
		if err := f.dummies(params); err != nil {
			return err
		}
		if op.op == opIf {
			mid := hi
			if c.els >= 0 {
				mid = f.siteIndex(c.els)
			}
			f.emitU(opLocalGet, f.idx)
			f.emitI32(lo)
			f.emit(opI32Sub)
			f.emitI32(mid - lo)
			f.emit(opI32LtU)
		}
		if loop {
			f.emitU(opLocalGet, f.idx)
			f.emitI32(lo)
			f.emit(opI32Sub)
			f.emitI32(hi - lo)
			f.emit(opI32LtU)
		}
		f.emit(opElse)
		if err := f.emitRun(runStart, op.pos); err != nil {
			return err
		}
		if err := f.stashUnder(saved, operands); err != nil {
			return err
		}
		if loop {
			f.emitI32(1)
		}
		f.close()
	}
	if loop {
		f.open(opIf, operands, results) // entered, or skipped
		if len(params) == 0 && !c.calls && Omit != "point" {
			// The point of a loop without calls again, before it: a
			// rewind to its header arrives here, so that the rewrite may
			// move the point in the loop to the loop's slow path
			// (rewrite's points.go, which moves no other loop's).
			// In a block, so that its bytes are the in-loop point's (the
			// same depth): the rewrite moves that one only when this copy
			// stands right before the loop.
			f.open(opBlock, nil, nil)
			if err := f.point(lo, nil); err != nil {
				return err
			}
			f.close()
		}
	}
	f.emit(f.code[op.pos:op.imm]...) // the construct's opcode
	f.emit(f.code[op.imm:op.end]...) // and block type
	f.labels = append(f.labels, true)
	f.st = append(f.st[:base], params...)
	inner := len(f.st) - len(params)
	if op.op == opLoop {
		if err := f.point(lo, params); err != nil {
			return err
		}
	}
	var tail []byte
	guarded := slices.Clone(results)
	if guarded == nil {
		guarded = []byte{}
	}
	if block {
		tail = guarded
	}
	end, err := f.seq(op.end, inner, tail)
	if err != nil {
		return err
	}
	if end == c.els {
		f.emit(opElse)
		f.st = append(f.st[:inner], params...)
		if end, err = f.seq(c.els+1, inner, guarded); err != nil { // entered also when the site is past the if
			return err
		}
	}
	if end != c.end {
		return fmt.Errorf("construct at %d ends at %d, not %d", op.pos, end, c.end)
	}
	f.emit(opEnd)
	f.labels = f.labels[:len(f.labels)-1]
	if loop {
		f.emit(opElse)
		f.drops(len(operands))
		if err := f.dummies(results); err != nil {
			return err
		}
		f.close()
	}
	f.st = append(f.st[:base], extras...)
	f.st = append(f.st, results...)
	if err := f.restoreUnder(saved, results); err != nil {
		return err
	}
	f.release(saved)
	return nil
}

// point is a loop's header: where a guest asked to suspend unwinds, and
// where a guest rewinding to it arrives.
func (f *function) point(k int32, params []byte) error {
	if Omit == "point" {
		return nil
	}
	saved, err := f.spill(params)
	if err != nil {
		return err
	}
	f.emitU(opGlobalGet, f.m.pt)
	f.open(opIf, params, params)
	f.emitU(opGlobalGet, f.m.rw)
	f.open(opIf, params, params)
	f.emitU(opLocalGet, f.idx)
	f.emitI32(k)
	f.emit(opI32Eq)
	f.open(opIf, params, params)
	f.drops(len(params))
	f.gets(saved)
	f.arrive()
	f.close()
	f.emit(opElse)
	f.sets(saved)
	f.emitI32(k)
	f.emitU(opLocalSet, f.idx)
	f.brUnwind()
	f.close()
	f.close()
	f.release(saved)
	return nil
}
