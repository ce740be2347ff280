package verify

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Version numbers what Module proves; the sandbox's prepared-module
// cache keys on it.
const Version = 1

// Error is a module the verifier refuses: where, and which property fails.
type Error struct {
	Func uint32 // the function's index in the rewritten module
	At   int    // the instruction's offset in its body
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("the stop bound is not proved: function %d, byte %d: %s", e.Func, e.At, e.Msg)
}

// Params is what Module proves the module against.
type Params struct {
	Budget int64 // B, the rewrite's InterruptBudget
	Loops  bool  // checks mode; false: wazero mode (loop headers stop the guest)
}

// Costs in quarter units (a unit: 4 bytes of code): what an instruction
// weighs on top of its bytes.
const (
	qLoad, qCall, qHost, qGrow, qBulk = 4, 128, 896, 1024, 64
	none                              = -1 << 62 // no path
)

// proofSteps is how many instructions the dataflow may interpret for a
// module of code bytes of bodies: a few passes over each function suffice
// for real programs (the SQLite shell takes about 3 per instruction); a
// module whose proof would take more is refused, so that no module makes
// the runner spend more than this on it (the compile budget cannot stop a
// goroutine; this does).
var proofSteps = func(code int64) int64 { return 64*code + 1<<20 }

// module is what the verifier reads of the module around the bodies.
type module struct {
	sigs      []string         // each type's signature, for call_indirect
	funcSig   []string         // each function's
	imported  uint32           // imported functions (host calls)
	interrupt int64            // the interrupt import's index, -1 if none
	callStack int64            // the call-stack limit's import (it ends the run), -1 if none
	countdown uint32           // the countdown global
	tabled    []bool           // may be in a table (element segments, ref.func)
	bySig     map[string][]int // the functions that may be in a table, by signature
	// sigSums is, by signature, the join of bySig's summaries (sigSum),
	// and whether one of them may be the host's or touch the countdown.
	sigSums    map[string]*sigSum
	bodies     [][]byte
	bodyOffset []int
	p          Params
	steps      int64 // instructions the dataflow may still interpret (proofSteps)
	sums       []summary
	touches    []bool // reads or writes the countdown, or calls
}

// Module proves the bound on wasm, a module the rewrite produced; the
// error is an *Error, or says why the module is not one.
func Module(wasm []byte, p Params) error {
	m := &module{p: p, interrupt: -1, callStack: -1}
	if err := m.read(wasm); err != nil {
		return err
	}
	return m.prove()
}

// reader decodes a byte slice from pos.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) fail(e error) {
	if r.err == nil {
		r.err = e
	}
}
func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail(wasmbin.ErrEOF)
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}
func (r *reader) u32() uint32 {
	v, n, err := wasmbin.U32(r.b[min(r.pos, len(r.b)):])
	r.pos += n
	if err != nil {
		r.fail(err)
	}
	return v
}
func (r *reader) s64() int64 {
	v, n, err := wasmbin.S64Value(r.b[min(r.pos, len(r.b)):])
	r.pos += n
	if err != nil {
		r.fail(err)
	}
	return v
}
func (r *reader) skip(n uint32) []byte {
	if uint64(n) > uint64(len(r.b)-r.pos) {
		r.fail(wasmbin.ErrEOF)
		return nil
	}
	r.pos += int(n)
	return r.b[r.pos-int(n) : r.pos]
}
func (r *reader) limits() {
	if r.byte()&1 != 0 {
		r.u32()
	}
	r.u32()
}

// constExpr reads a constant expression, noting the functions ref.func names.
func (m *module) constExpr(r *reader) {
	for r.err == nil {
		switch op := r.byte(); op {
		case wasmbin.OpEnd:
			return
		case wasmbin.OpI32Const, wasmbin.OpI64Const:
			r.s64()
		case wasmbin.OpF32Const:
			r.skip(4)
		case wasmbin.OpF64Const:
			r.skip(8)
		case wasmbin.OpGlobalGet:
			r.u32()
		case wasmbin.OpRefNull:
			r.byte()
		case wasmbin.OpRefFunc:
			m.tab(r.u32())
		case wasmbin.OpVecPrefix:
			r.byte()
			r.skip(16)
		default:
			r.fail(fmt.Errorf("instruction 0x%02x in a constant expression", op))
		}
	}
}

func (m *module) tab(f uint32) {
	for uint32(len(m.tabled)) <= f {
		m.tabled = append(m.tabled, false)
	}
	m.tabled[f] = true
}

// read decodes the sections the proof needs.
func (m *module) read(wasm []byte) error {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return errors.New("verify: malformed module")
	}
	var globals uint32
	for _, s := range secs {
		r := &reader{b: wasm[:s.End], pos: s.Start}
		if s.ID == wasmbin.SecCustom || s.ID == wasmbin.SecStart || s.ID == wasmbin.SecData ||
			s.ID == wasmbin.SecMemory || s.ID == wasmbin.SecTable || s.ID == wasmbin.SecDataCount {
			continue
		}
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			switch s.ID {
			case wasmbin.SecType:
				r.byte()
				from := r.pos
				r.skip(r.u32())
				r.skip(r.u32())
				m.sigs = append(m.sigs, string(r.b[from:min(r.pos, len(r.b))]))
			case wasmbin.SecImport:
				mod, name := string(r.skip(r.u32())), string(r.skip(r.u32()))
				switch r.byte() {
				case 0:
					if mod == "stint:sandbox" && name == "interrupt" {
						m.interrupt = int64(m.imported)
					}
					if mod == "stint:sandbox" && name == "call_stack" {
						m.callStack = int64(m.imported)
					}
					m.funcSig = append(m.funcSig, m.sig(r.u32()))
					m.imported++
				case 1:
					r.byte()
					r.limits()
				case 2:
					r.limits()
				case 3:
					r.skip(2)
					globals++
				}
			case wasmbin.SecFunction:
				m.funcSig = append(m.funcSig, m.sig(r.u32()))
			case wasmbin.SecGlobal:
				r.skip(2)
				m.constExpr(r)
				globals++
			case wasmbin.SecExport:
				r.skip(r.u32())
				r.byte()
				r.u32()
			case wasmbin.SecElement:
				m.element(r)
			case wasmbin.SecCode:
				size := r.u32()
				m.bodyOffset = append(m.bodyOffset, r.pos)
				m.bodies = append(m.bodies, r.skip(size))
			}
		}
		if r.err != nil {
			return fmt.Errorf("verify: section %d: %w", s.ID, r.err)
		}
	}
	if m.interrupt < 0 || globals < 2 || int(m.imported)+len(m.bodies) != len(m.funcSig) {
		return errors.New("verify: not a module the rewrite produced (no interrupt import or countdown global)")
	}
	m.countdown = globals - 2
	m.tab(uint32(len(m.funcSig)))
	return nil
}

func (m *module) sig(t uint32) string {
	if int(t) < len(m.sigs) {
		return m.sigs[t]
	}
	return "?"
}

// element reads an element segment (any of its 8 forms), noting its functions.
func (m *module) element(r *reader) {
	flag := r.u32()
	if flag&3 == 2 {
		r.u32() // table
	}
	if flag&1 == 0 {
		m.constExpr(r)
	}
	if flag&3 != 0 {
		r.byte() // element kind or reference type
	}
	k := r.u32()
	for j := uint32(0); j < k && r.err == nil; j++ {
		if flag&4 == 0 {
			m.tab(r.u32())
		} else {
			m.constExpr(r)
		}
	}
}

// prove runs every function's dataflow until the summaries stop changing.
func (m *module) prove() error {
	n := len(m.funcSig)
	m.sums = make([]summary, n)
	var code int64
	for _, b := range m.bodies {
		code += int64(len(b))
	}
	m.steps = proofSteps(code)
	m.touches = make([]bool, n)
	for i := range m.sums {
		if i < int(m.imported) {
			m.sums[i] = summary{pre: [2]int64{0, 0}, thru: [2]int64{0, 0}, post: [2]int64{none, none}}
		} else {
			m.sums[i] = summary{pre: [2]int64{0, 0}, thru: [2]int64{none, none}, post: [2]int64{none, none}}
		}
	}
	m.bySig = map[string][]int{}
	for g, t := range m.tabled[:n] {
		if t {
			m.bySig[m.funcSig[g]] = append(m.bySig[m.funcSig[g]], g)
		}
	}
	// Each body is decoded once here for its edges, and again each time
	// its dataflow runs, into the same buffers: the memory is the largest
	// function's, not the module's.
	fns := make([]*fn, len(m.bodies))
	var buf fn
	for i, b := range m.bodies {
		f, err := decode(m, uint32(int(m.imported)+i), b, &buf)
		if err != nil {
			return err
		}
		fns[i] = &fn{idx: f.idx, touches: f.touches, callees: slices.Clone(f.callees), sigs: slices.Clone(f.sigs)}
		m.touches[f.idx] = f.touches
	}
	callers := make([][]int, n)
	sigCallers := map[string][]int{}
	for i, f := range fns {
		for _, c := range f.callees {
			callers[c] = append(callers[c], i)
		}
		for _, s := range f.sigs {
			sigCallers[s] = append(sigCallers[s], i)
		}
	}
	m.sigSums = map[string]*sigSum{}
	// Callees first (a depth-first postorder), so that most summaries are
	// final when their callers run.
	queue, queued := make([]int, 0, len(fns)), make([]bool, len(fns))
	var visit func(i int)
	visit = func(i int) {
		queued[i] = true
		for _, c := range fns[i].callees {
			if d := c - int(m.imported); !queued[d] {
				visit(d)
			}
		}
		queue = append(queue, i)
	}
	for i := range fns {
		if !queued[i] {
			visit(i)
		}
	}
	for rounds := 0; len(queue) > 0; rounds++ {
		if rounds > 64*len(fns)+1024 {
			return &Error{Msg: "the call graph's summaries did not settle"}
		}
		i := queue[0]
		queue, queued[i] = queue[1:], false
		f, err := decode(m, fns[i].idx, m.bodies[i], &buf)
		if err != nil {
			return err
		}
		s, err := f.flow(m)
		if err != nil {
			return err
		}
		if s == m.sums[f.idx] {
			continue
		}
		m.sums[f.idx] = s
		requeue := callers[f.idx]
		if m.tabled[f.idx] {
			delete(m.sigSums, m.funcSig[f.idx]) // joined again when next asked
			requeue = append(slices.Clip(requeue), sigCallers[m.funcSig[f.idx]]...)
		}
		for _, c := range requeue {
			if !queued[c] {
				queue, queued[c] = append(queue, c), true
			}
		}
	}
	return nil
}
