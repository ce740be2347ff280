package verify

import (
	"fmt"
	"slices"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// ctr is a quantity that grows with work and is reset at some points:
// since (work since the last test) or debt (work minus charges since the
// last interrupt). rel is its most, relative to the function's entry, on
// the paths not reset since; abs its most on those that were. none: no
// such path.
type ctr struct{ rel, abs int64 }

// state is what the dataflow knows at a point, over every path to it.
type state struct {
	live  bool
	c     [2]ctr // since, debt
	gCur  bool   // the countdown global holds the countdown
	cache int64  // the local that holds it too, -1 if none
}

// summary is what a call of a function does to its caller's ctrs: the
// most rel reaches in it before a reset (pre), at a return on a path
// without a reset (thru, relative) and with one (post, absolute).
type summary struct{ pre, thru, post [2]int64 }

func add(a, b int64) int64 {
	if a == none || b == none {
		return none
	}
	return a + b
}

func join(a, b state) state {
	if !a.live {
		return b
	}
	if !b.live {
		return a
	}
	for k := range a.c {
		a.c[k].rel, a.c[k].abs = max(a.c[k].rel, b.c[k].rel), max(a.c[k].abs, b.c[k].abs)
	}
	a.gCur = a.gCur && b.gCur
	if a.cache != b.cache {
		a.cache = -1
	}
	return a
}

// val is what the dataflow knows of a value on the operand stack.
type val struct {
	kind byte  // vUnk, or one of the countdown's
	k    int64 // vCD, vOr: what was taken from the countdown; vConst: the constant
	q    int64 // the work of the instructions that made it, owed unless the countdown consumes it
}

const (
	vUnk    = iota
	vConst  // an i64.const
	vCD     // the countdown minus k
	vOld    // the countdown before its refill
	vOr     // (countdown - k) | x
	vFlag   // (countdown - k) < c, c <= 1
	vNonneg // an i64 that is not negative
)

// run is one pass over one block of a function.
type run struct {
	m        *module
	f        *fn
	st       state
	win      []val
	sum      *summary
	at       int
	afterInt bool // an interrupt was called in this block, no control since
	pend     bool // the countdown was refilled; an interrupt is owed
	err      error
}

func (r *run) fail(format string, args ...any) {
	if r.err == nil {
		r.err = &Error{Func: r.f.idx, At: r.at, Msg: fmt.Sprintf(format, args...)}
	}
}

// work adds q quarter units to both ctrs.
func (r *run) work(q int64) {
	for k := range r.st.c {
		r.st.c[k].rel, r.st.c[k].abs = add(r.st.c[k].rel, q), add(r.st.c[k].abs, q)
	}
}

// note checks the ctrs against their limits and records the summary's pre.
func (r *run) note() {
	b := 4 * r.m.p.Budget
	for k, c := range r.st.c {
		if c.abs > b {
			r.fail("%s since the last %s: more than the bound allows (%d units)", [2]string{"work", "uncharged work"}[k], [2]string{"test", "interrupt"}[k], b/4)
		}
		if c.rel > 2*b {
			r.fail("%s from the function's entry: more than any caller can have tested or charged", [2]string{"work", "uncharged work"}[k])
		}
		r.sum.pre[k] = max(r.sum.pre[k], c.rel)
	}
}

// reset resets since (tested) or both (interrupted).
func (r *run) reset(both bool) {
	r.note()
	for k := range r.st.c {
		if k == 0 || both {
			r.st.c[k] = ctr{rel: none, abs: 0}
		}
	}
}

func (r *run) push(v val) { r.win = append(r.win, v) }

// pop takes the top value (unknown beyond the window).
func (r *run) pop() val {
	if len(r.win) == 0 {
		return val{}
	}
	v := r.win[len(r.win)-1]
	r.win = r.win[:len(r.win)-1]
	return v
}

// plain pops n values that are not the countdown's, owing their work.
func (r *run) plain(n, pushes int) {
	for range n {
		r.work(r.pop().q)
	}
	for range pushes {
		r.push(val{})
	}
}

// clear forgets the window (its values' work is owed).
func (r *run) clear() {
	for len(r.win) > 0 {
		r.work(r.pop().q)
	}
}

// store is a write of v to the countdown (global) or its cache (local l).
func (r *run) store(v val, global bool, l int64) {
	switch v.kind {
	case vCD:
		if v.k < 0 {
			r.fail("the countdown is raised by %d outside a refill", -v.k)
		}
		r.note()
		r.st.c[1].rel, r.st.c[1].abs = add(r.st.c[1].rel, -4*v.k), add(r.st.c[1].abs, -4*v.k)
		keep := v.k == 0
		if global {
			r.st.gCur = true
			if !keep {
				r.st.cache = -1
			}
		} else {
			r.st.cache, r.st.gCur = l, keep && r.st.gCur
		}
		for i := range r.win {
			if r.win[i].kind == vCD || r.win[i].kind == vOr {
				r.win[i].kind = vOld
			} else if r.win[i].kind == vFlag {
				r.win[i].kind = vUnk
			}
		}
	case vConst:
		if v.k < 0 || v.k > 2*r.m.p.Budget {
			r.fail("the countdown is refilled with %d, outside [0, 2B]", v.k)
		}
		if !r.afterInt {
			r.pend = true
		}
		if global {
			r.st.gCur, r.st.cache = true, -1
		} else {
			r.st.cache, r.st.gCur = l, false
		}
	default:
		r.fail("the countdown is set to a value that is not itself lowered by a constant")
	}
}

// control is what every control instruction and call requires first.
func (r *run) control() {
	if r.pend {
		r.fail("the countdown is refilled without a call of the interrupt function next to it")
	}
	r.afterInt = false
}

// flow runs the dataflow over one function with the current summaries
// and returns its summary.
func (f *fn) flow(m *module) (summary, error) {
	sum := summary{pre: [2]int64{0, 0}, thru: [2]int64{none, none}, post: [2]int64{none, none}}
	for i := range f.ins {
		f.ins[i] = state{}
	}
	f.ins[0] = state{live: true, c: [2]ctr{{0, none}, {0, none}}, gCur: true, cache: -1}
	starts := f.starts[:0]
	for i, l := range f.leader {
		if l >= 0 {
			starts = append(starts, i)
		}
	}
	// Sweeps in the code's order until nothing changes: a sweep settles
	// the code outside loops, and each further one a level of loops.
	r := &run{m: m, f: f, sum: &sum, win: make([]val, 0, 16)}
	f.starts = starts
	dirty := slices.Grow(f.dirty[:0], len(f.ins))[:len(f.ins)]
	clear(dirty)
	f.dirty = dirty
	dirty[0] = true
	for sweeps, changed := 0, true; changed; sweeps++ {
		if sweeps > 256 {
			return sum, &Error{Func: f.idx, Msg: "the dataflow did not settle: a path round a loop passes no test"}
		}
		changed = false
		for b := range f.ins {
			if !dirty[b] {
				continue
			}
			dirty[b] = false
			r.st, r.win, r.afterInt, r.pend = f.ins[b], r.win[:0], false, false
			r.block(starts[b], func(to int, s state) {
				if to < 0 {
					r.ret(s)
					return
				}
				l := f.leader[to]
				if n := join(f.ins[l], s); n != f.ins[l] {
					f.ins[l], dirty[l] = n, true
					changed = changed || int(l) <= b
				}
			})
			if r.err != nil {
				return sum, r.err
			}
		}
	}
	return sum, nil
}

// ret records a return.
func (r *run) ret(s state) {
	if !s.gCur && r.f.touches {
		r.fail("returns with the countdown cached and not written back")
	}
	for k, c := range s.c {
		r.sum.thru[k], r.sum.post[k] = max(r.sum.thru[k], c.rel), max(r.sum.post[k], c.abs)
	}
}

// call applies a callee's summary (or the join of several) to the state.
func (r *run) call(s summary) {
	r.note()
	live := false
	for k, c := range r.st.c {
		if c.rel != none {
			r.sum.pre[k] = max(r.sum.pre[k], add(c.rel, s.pre[k]))
		}
		if a := add(c.abs, s.pre[k]); a > 4*r.m.p.Budget {
			r.fail("a call whose callee works more than the bound allows before its first %s", [2]string{"test", "interrupt"}[k])
		}
		n := ctr{rel: add(c.rel, s.thru[k]), abs: add(c.abs, s.thru[k])}
		if s.post[k] != none && (c.rel != none || c.abs != none) {
			n.abs = max(n.abs, s.post[k])
		}
		live = live || n.rel != none || n.abs != none
		r.st.c[k] = n
	}
	r.st.live = live && r.st.live
	r.note()
}

// block interprets the instructions from i to the end of their block,
// handing each successor's state to out.
func (r *run) block(start int, out func(int, state)) {
	f, m := r.f, r.m
	i := start
	for ; i < len(f.code) && r.st.live && r.err == nil; i++ {
		in := &f.code[i]
		r.at = int(in.at)
		if i != start && f.leader[i] >= 0 {
			break
		}
		q := int64(in.size)
		if m.steps--; m.steps < 0 {
			r.fail("the proof would take more than %d passes over the module's code: its control flow or call graph settles too slowly", 64)
			return
		}
		switch op := in.op; {
		case op == wasmbin.OpBlock || op == 0x01: // nop
		case op == wasmbin.OpLoop:
			if !m.p.Loops {
				r.reset(true) // wazero tests the loop header
			}
		case op == wasmbin.OpGlobalGet && in.a == m.countdown && r.st.gCur:
			r.push(val{kind: vCD, q: q})
		case op == wasmbin.OpLocalGet && int64(in.a) == r.st.cache:
			r.push(val{kind: vCD, q: q})
		case op == wasmbin.OpI64Const:
			r.push(val{kind: vConst, k: in.c, q: q})
		case op == 0x7d && len(r.win) >= 2 && r.win[len(r.win)-2].kind == vCD && (r.win[len(r.win)-1].kind == vConst || r.win[len(r.win)-1].kind == vNonneg): // i64.sub
			b, a := r.pop(), r.pop()
			if b.kind == vConst {
				if b.k < 0 || a.k+b.k < a.k {
					r.fail("a charge of %d", b.k)
				}
				a.k += b.k
			}
			a.q += b.q + q
			r.push(a)
		case op == 0xad && len(r.win) >= 1: // i64.extend_i32_u
			v := r.pop()
			r.push(val{kind: vNonneg, q: v.q + q})
		case op == 0x84 && len(r.win) >= 2 && (r.win[len(r.win)-1].kind == vCD || r.win[len(r.win)-2].kind == vCD): // i64.or
			b, a := r.pop(), r.pop()
			if b.kind == vCD {
				a, b = b, a
			}
			r.push(val{kind: vOr, k: a.k, q: a.q + b.q + q})
		case op == 0x53 && len(r.win) >= 2 && r.win[len(r.win)-1].kind == vConst && r.win[len(r.win)-1].k <= 1 &&
			(r.win[len(r.win)-2].kind == vCD || r.win[len(r.win)-2].kind == vOr): // i64.lt_s
			b, a := r.pop(), r.pop()
			if a.k+b.k < 0 {
				r.fail("a test that passes with the countdown below 0")
			}
			r.push(val{kind: vFlag, q: a.q + b.q + q})
		case op == wasmbin.OpGlobalSet && in.a == m.countdown:
			r.store(r.pop(), true, -1)
		case (op == wasmbin.OpLocalSet || op == wasmbin.OpLocalTee) && len(r.win) > 0 &&
			(r.win[len(r.win)-1].kind == vCD || (r.win[len(r.win)-1].kind == vConst && int64(in.a) == r.st.cache)):
			v := r.pop()
			r.store(v, false, int64(in.a))
			if op == wasmbin.OpLocalTee {
				r.push(val{kind: vCD})
			}
		case op == wasmbin.OpGlobalGet && in.a == m.countdown:
			r.fail("reads the countdown global while a local holds a newer value")
		case (op == wasmbin.OpLocalSet || op == wasmbin.OpLocalTee) && int64(in.a) == r.st.cache:
			r.plain(1, int(op-wasmbin.OpLocalSet)) // tee pushes it back
			r.st.cache = -1
		case op == wasmbin.OpCall && int64(in.a) == m.callStack: // ends the run
			r.clear()
			r.pend = false
			return
		case op == wasmbin.OpCall && int64(in.a) == m.interrupt:
			v := r.pop()
			r.pend = false
			r.control()
			if v.kind != vCD && v.kind != vOld {
				r.fail("calls the interrupt function with something other than the countdown")
			}
			r.work(q)
			r.clear()
			r.reset(true)
			r.afterInt = true
		case op == wasmbin.OpCall || op == wasmbin.OpCallIndirect:
			r.clear()
			r.control()
			r.work(q + qCall)
			s, host, touches := r.callees(in)
			if host {
				r.work(qHost)
			}
			if (touches || host) && !r.st.gCur {
				r.fail("a call with the countdown cached and not written back")
			}
			r.call(s)
			if touches {
				r.st.cache = -1
			}
		case op == wasmbin.OpIf || op == wasmbin.OpBrIf:
			v := r.pop()
			r.clear()
			r.control()
			if v.kind != vFlag {
				r.work(q + v.q)
			}
			r.note()
			taken, passed := r.st, r.st
			if v.kind == vFlag {
				r.reset(false)
				passed = r.st
			}
			out(int(f.succ(i)[0]), taken) // if: the then arm; br_if: the branch
			out(int(f.succ(i)[1]), passed)
			return
		case in.sn > 0: // br, br_table, return, else, the function's end
			r.clear()
			r.control()
			if op != wasmbin.OpElse && op != wasmbin.OpEnd {
				r.work(q)
			}
			r.note()
			ss := f.succ(i)
			for k, s := range ss {
				if k == 0 || s != ss[k-1] {
					out(int(s), r.st) // a repeated target changes nothing
				}
			}
			return
		case op == wasmbin.OpUnreachable:
			r.clear()
			r.control()
			return
		case op == wasmbin.OpEnd || op == wasmbin.OpElse:
		default:
			r.simple(in, q)
		}
	}
	if r.st.live && r.err == nil && i < len(f.code) {
		r.clear()
		r.control()
		r.note()
		out(i, r.st)
	}
}

// callees is what a call may run: the join of the summaries of the
// functions it may reach, whether one is the host's, and whether one
// touches the countdown. A call_indirect reaches every function of its
// signature that may be in a table; none: it traps.
func (r *run) callees(in *instr) (s summary, host, touches bool) {
	m := r.m
	s = summary{pre: [2]int64{none, none}, thru: [2]int64{none, none}, post: [2]int64{none, none}}
	reach := func(g int) {
		host = host || g < int(m.imported)
		touches = touches || m.touches[g]
		for k := range s.pre {
			s.pre[k], s.thru[k], s.post[k] = max(s.pre[k], m.sums[g].pre[k]), max(s.thru[k], m.sums[g].thru[k]), max(s.post[k], m.sums[g].post[k])
		}
	}
	if in.op == wasmbin.OpCall {
		if int(in.a) < len(m.funcSig) {
			reach(int(in.a))
		}
		return s, host, touches
	}
	j := m.sigSums[m.sig(in.a)]
	if j == nil {
		for _, g := range m.bySig[m.sig(in.a)] {
			reach(g)
		}
		j = &sigSum{s, host, touches}
		m.sigSums[m.sig(in.a)] = j
	}
	return j.s, j.host, j.touches
}

// sigSum is what a call_indirect of one signature may run (callees).
type sigSum struct {
	s             summary
	host, touches bool
}

// simple interprets an instruction that is neither control nor the
// countdown's: its work, and its values (unknown).
func (r *run) simple(in *instr, q int64) {
	op := in.op
	pops, pushes := -1, 1
	switch {
	case op == 0x1a: // drop
		pops, pushes = 1, 0
	case op == 0x1b || op == 0x1c: // select
		pops = 3
	case op == wasmbin.OpLocalGet || op == wasmbin.OpGlobalGet || op == 0x3f || (op >= 0x41 && op <= 0x44) || op == 0xd0 || op == 0xd2:
		pops = 0
	case op == wasmbin.OpLocalSet || op == wasmbin.OpGlobalSet:
		pops, pushes = 1, 0
	case op == wasmbin.OpLocalTee || op == 0x25 || op == 0x45 || op == 0x50 || op == 0xd1 || (op >= 0x67 && op <= 0x69) ||
		(op >= 0x79 && op <= 0x7b) || (op >= 0x8b && op <= 0x91) || (op >= 0x99 && op <= 0x9f) || op >= 0xa7 && op <= 0xc4:
		pops = 1
	case op >= 0x28 && op <= 0x35: // loads
		pops, q = 1, q+qLoad
	case op >= 0x36 && op <= 0x3e: // stores
		pops, pushes, q = 2, 0, q+qLoad
	case op == 0x26: // table.set
		pops, pushes = 2, 0
	case op == 0x40: // memory.grow
		pops, q = 1, q+qGrow
	case op >= 0x46 && op <= 0x66 || op >= 0x6a && op <= 0x78 || op >= 0x7c && op <= 0x8a || op >= 0x92 && op <= 0x98 || op >= 0xa0 && op <= 0xa6:
		pops = 2
	case op == wasmbin.OpMiscPrefix && in.a >= 8:
		q += qBulk
	}
	r.work(q)
	if pops < 0 {
		r.clear()
		return
	}
	r.plain(pops, pushes)
}
