package resume

import (
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Which functions can be on the stack when a guest suspends: those with
// a point of their own (a loop, a call_indirect, a call of a blocking
// import, a place in a cycle of the call graph, where a recursion needs
// its entry to be a point), and
// those that call one of them. The others finish in bounded time without
// reaching a point and are left as they are.

// bodyFacts is what a first pass learns of one body.
type bodyFacts struct {
	loops, indirect bool
	blocking        bool // it calls a blocking import (Import)
	callees         []uint32
	codeStart       int
}

// scanBody decodes body (function fn) up to its end.
func (m *module) scanBody(body []byte) (bodyFacts, error) {
	var f bodyFacts
	r := reader{wasmbin.Reader{B: body}}
	groups, err := r.U32()
	if err != nil {
		return f, err
	}
	for range groups {
		if _, err := r.U32(); err != nil {
			return f, err
		}
		if _, err := r.Byte(); err != nil {
			return f, err
		}
	}
	f.codeStart = r.Pos
	for !r.EOF() {
		in, err := r.next()
		if err != nil {
			return f, err
		}
		switch in.op {
		case wasmbin.OpLoop:
			f.loops = true
		case wasmbin.OpCallIndirect:
			f.indirect = true
		case wasmbin.OpCall:
			rr := reader{wasmbin.Reader{B: body, Pos: in.imm}}
			c, _ := rr.U32()
			f.callees = append(f.callees, c)
			f.blocking = f.blocking || m.isBlocking(c)
		case wasmbin.OpMiscPrefix:
			switch in.sub {
			case 9, 12, 13, 14, 15, 17: // data.drop, table.init, elem.drop, table.copy, table.grow, table.fill
				return f, refuse("it changes its tables or drops a segment at run time, which a snapshot does not hold yet")
			}
		case 0x26: // table.set
			return f, refuse("it changes its tables at run time (table.set), which a snapshot does not hold yet")
		}
	}
	return f, nil
}

// findInstrumented sets m.instrumented.
func (m *module) findInstrumented(bodies [][]byte) error {
	n := len(m.funcs)
	m.instrumented = make([]bool, n)
	callers := make([][]uint32, n)
	facts := make([]bodyFacts, len(bodies))
	for i, b := range bodies {
		f, err := m.scanBody(b)
		if err != nil {
			return err
		}
		facts[i] = f
		fn := m.imported + uint32(i)
		if f.loops || f.indirect || f.blocking {
			m.instrumented[fn] = true
		}
		for _, c := range f.callees {
			if int(c) >= n {
				return refuse("a call of function %d, of %d", c, n)
			}
			callers[c] = append(callers[c], fn)
		}
	}
	for _, fn := range m.inCycles(facts) {
		m.instrumented[fn] = true
	}
	// Callers of instrumented functions, to a fixed point.
	var work []uint32
	for f, on := range m.instrumented {
		if on {
			work = append(work, uint32(f))
		}
	}
	for len(work) > 0 {
		f := work[len(work)-1]
		work = work[:len(work)-1]
		for _, c := range callers[f] {
			if !m.instrumented[c] {
				m.instrumented[c] = true
				work = append(work, c)
			}
		}
	}
	return nil
}

// inCycles lists the defined functions on a cycle of the direct call
// graph (Tarjan's algorithm, iterative).
func (m *module) inCycles(facts []bodyFacts) []uint32 {
	n := len(facts)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var st []int
	var out []uint32
	next := 0
	type frame struct{ v, edge int }
	for root := range n {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		st = append(st, root)
		onStack[root] = true
		for len(call) > 0 {
			fr := &call[len(call)-1]
			v := fr.v
			if fr.edge < len(facts[v].callees) {
				c := int(facts[v].callees[fr.edge]) - int(m.imported)
				fr.edge++
				if c < 0 {
					continue
				}
				if index[c] < 0 {
					index[c], low[c] = next, next
					next++
					st = append(st, c)
					onStack[c] = true
					call = append(call, frame{c, 0})
				} else if onStack[c] {
					low[v] = min(low[v], index[c])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			var comp []int
			for {
				w := st[len(st)-1]
				st = st[:len(st)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			self := false
			for _, c := range facts[v].callees {
				if int(c)-int(m.imported) == v {
					self = true
				}
			}
			if len(comp) > 1 || self {
				for _, w := range comp {
					out = append(out, m.imported+uint32(w))
				}
			}
		}
	}
	return out
}
