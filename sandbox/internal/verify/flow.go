package verify

import (
	"fmt"
	"slices"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// instr is one decoded instruction.
type instr struct {
	op     byte
	at     int32  // offset in the body
	size   int32  // its bytes
	a      uint32 // its first immediate (label, function, local, global, type); a misc or SIMD sub-opcode
	c      int64  // an i64.const's value
	s0, sn int32  // control instructions: where control goes (fn.pool[s0:s0+sn]; -1: the function returns)
}

// fn is one decoded body.
type fn struct {
	idx     uint32
	code    []instr
	leader  []int32  // per instruction: its index among the block starts, -1 if none
	touches bool     // reads or writes the countdown, or calls
	callees []int    // the functions it calls directly
	sigs    []string // the signatures it calls through a table
	ins     []state  // the dataflow's state at each block start
	pool    []int32  // the successors of the control instructions
	// Scratch, reused: each block's end and else while decoding, the
	// block starts and which need another pass while flowing.
	ends, elses, starts []int
	dirty               []bool
}

// succ is where control goes after instruction i (nil: the next one).
func (f *fn) succ(i int) []int32 { return f.pool[f.code[i].s0 : f.code[i].s0+f.code[i].sn] }

// setSucc sets instruction i's successors.
func (f *fn) setSucc(i int, to ...int32) {
	f.code[i].s0, f.code[i].sn = int32(len(f.pool)), int32(len(to))
	f.pool = append(f.pool, to...)
}

// decode reads a body's instructions and its control flow's edges into f,
// reusing its slices.
func decode(m *module, idx uint32, body []byte, f *fn) (*fn, error) {
	*f = fn{idx: idx, code: f.code[:0], pool: f.pool[:0], leader: f.leader[:0], ins: f.ins[:0], callees: f.callees[:0], sigs: f.sigs[:0],
		ends: f.ends[:0], elses: f.elses[:0], starts: f.starts[:0], dirty: f.dirty[:0]}
	r := &reader{b: body}
	for groups := r.u32(); groups > 0 && r.err == nil; groups-- {
		r.u32()
		r.byte()
	}
	type open struct{ at, elseAt int }
	stack := []open{{at: -1, elseAt: -1}}
	ends, elses := f.ends, f.elses // each block's, loop's and if's end and else, by its index
	bad := func(msg string) error { return &Error{Func: idx, At: r.pos, Msg: msg} }
	for r.err == nil && len(stack) > 0 {
		in := instr{at: int32(r.pos)}
		in.op = r.byte()
		switch wasmbin.OpImm[in.op] {
		case wasmbin.ImmInvalid:
			return nil, bad(fmt.Sprintf("unknown opcode 0x%02x", in.op))
		case wasmbin.ImmBlock:
			r.s64()
			stack = append(stack, open{at: len(f.code), elseAt: -1})
		case wasmbin.ImmBranch, wasmbin.ImmFunc, wasmbin.ImmLocal, wasmbin.ImmGlobal, wasmbin.ImmIndex, wasmbin.ImmZeroByte:
			in.a = r.u32()
		case wasmbin.ImmIndex2, wasmbin.ImmMemArg:
			in.a = r.u32()
			r.u32()
		case wasmbin.ImmBrTable:
			in.s0 = int32(len(f.pool))
			for n := r.u32(); n != ^uint32(0) && r.err == nil; n-- {
				f.pool = append(f.pool, int32(r.u32())) // labels for now
			}
			in.sn = int32(len(f.pool)) - in.s0
		case wasmbin.ImmI32:
			r.s64()
		case wasmbin.ImmI64:
			in.c = r.s64()
		case wasmbin.ImmF32:
			r.skip(4)
		case wasmbin.ImmF64:
			r.skip(8)
		case wasmbin.ImmSelectT:
			r.skip(r.u32())
		case wasmbin.ImmRefNull:
			r.byte()
		case wasmbin.ImmMisc:
			in.a = r.u32()
			if in.a < uint32(len(wasmbin.MiscImm)) {
				switch wasmbin.MiscImm[in.a] {
				case wasmbin.ImmIndex:
					r.u32()
				case wasmbin.ImmIndex2:
					r.u32()
					r.u32()
				}
			}
		case wasmbin.ImmVec:
			in.a = uint32(r.byte())
			switch wasmbin.VecImm[in.a] {
			case wasmbin.ImmMemArg:
				r.u32()
				r.u32()
			case wasmbin.ImmMemArgLane:
				r.u32()
				r.u32()
				r.byte()
			case wasmbin.ImmLane:
				r.byte()
			case wasmbin.ImmV128:
				r.skip(16)
			}
		}
		switch {
		case in.op == wasmbin.OpElse && len(stack) > 1:
			stack[len(stack)-1].elseAt = len(f.code)
		case in.op == wasmbin.OpEnd:
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if o.at >= 0 {
				for len(ends) <= o.at {
					ends, elses = append(ends, -1), append(elses, -1)
				}
				ends[o.at], elses[o.at] = len(f.code), o.elseAt
				if o.elseAt >= 0 {
					f.setSucc(o.elseAt, int32(len(f.code)))
				}
			}
		case in.op == wasmbin.OpGlobalGet || in.op == wasmbin.OpGlobalSet:
			f.touches = f.touches || in.a == m.countdown
		case in.op == wasmbin.OpCall || in.op == wasmbin.OpCallIndirect:
			f.touches = true
		}
		in.size = int32(r.pos) - in.at
		f.code = append(f.code, in)
	}
	if r.err != nil || len(stack) > 0 || r.pos != len(body) {
		return nil, bad("the body does not decode")
	}
	for len(ends) < len(f.code) {
		ends, elses = append(ends, -1), append(elses, -1)
	}
	f.ends, f.elses = ends, elses
	return f, f.edges(m, ends, elses)
}

// edges fills each control instruction's successors and the block starts.
func (f *fn) edges(m *module, ends, elses []int) error {
	var labels []int // the open blocks' opening indices, the function's (-1) first
	labels = append(labels, -1)
	target := func(l uint32) int32 {
		if int(l) >= len(labels) {
			return -2
		}
		o := labels[len(labels)-1-int(l)]
		switch {
		case o < 0:
			return -1
		case f.code[o].op == wasmbin.OpLoop:
			return int32(o)
		}
		return int32(ends[o])
	}
	f.leader = slices.Grow(f.leader, len(f.code))[:len(f.code)]
	for i := range f.leader {
		f.leader[i] = -1
	}
	mark := func(i32 int32) {
		i := int(i32)
		if i >= 0 && i < len(f.code) && f.leader[i] < 0 {
			f.leader[i] = 0
		}
	}
	mark(0)
	for i := range f.code {
		in := &f.code[i]
		switch in.op {
		case wasmbin.OpBlock, wasmbin.OpLoop:
			labels = append(labels, i)
			mark(int32(i))
		case wasmbin.OpIf:
			labels = append(labels, i)
			alt := ends[i]
			if elses[i] >= 0 {
				alt = elses[i] + 1
			}
			f.setSucc(i, int32(i+1), int32(alt))
		case wasmbin.OpEnd:
			labels = labels[:len(labels)-1]
			if len(labels) == 0 {
				f.setSucc(i, -1)
			}
		case 0x0c, wasmbin.OpBrIf: // br, br_if
			if in.op == wasmbin.OpBrIf {
				f.setSucc(i, target(in.a), int32(i+1))
			} else {
				f.setSucc(i, target(in.a))
			}
		case wasmbin.OpBrTable:
			for k, l := range f.succ(i) {
				f.pool[int(in.s0)+k] = target(uint32(l))
			}
		case wasmbin.OpReturn:
			f.setSucc(i, -1)
		}
		for _, s := range f.succ(i) {
			if s == -2 {
				return &Error{Func: f.idx, At: int(in.at), Msg: "a branch to a label that is not open"}
			}
			mark(s)
		}
		if in.sn > 0 || in.op == wasmbin.OpUnreachable || in.op == wasmbin.OpElse || in.op == wasmbin.OpEnd {
			mark(int32(i + 1))
		}
		if in.op == wasmbin.OpCall && int(in.a) >= int(m.imported) && int(in.a) < len(m.funcSig) {
			f.callees = append(f.callees, int(in.a))
		}
		if in.op == wasmbin.OpCallIndirect && !slices.Contains(f.sigs, m.sig(in.a)) {
			f.sigs = append(f.sigs, m.sig(in.a))
		}
	}
	n := int32(0)
	for i := range f.leader {
		if f.leader[i] >= 0 {
			f.leader[i], n = n, n+1
		}
	}
	f.ins = slices.Grow(f.ins, int(n))[:n]
	return nil
}
