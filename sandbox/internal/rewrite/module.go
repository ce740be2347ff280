package rewrite

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// The rewrite of a module's sections around its function bodies.

// rewriter holds what rewriting a validated module needs.
type rewriter struct {
	info       *moduleInfo
	lim        *Limits
	loopChecks bool
	interrupt  uint32 // the added imports' function indices
	callStack  uint32
	countdown  uint32 // the added globals' indices
	stackLeft  uint32
	// counter is the local index (LEB128) that caches the countdown in
	// the body being rewritten, nil if it has none (no loop checks).
	counter []byte
	// blockTypes is, for each type, the block type of a block that
	// yields its results (see resultBlockTypes).
	blockTypes [][]byte
	// The body being rewritten's local types: its parameters', then its
	// declared groups' (each group's type, and the index after it).
	params     []byte
	groupTypes []byte
	groupEnds  []uint32
	sets       []uint32 // loopSets' result
	// The added functions bulk operations call (bulkHelpers): charge, and
	// fill and copy in a module with a memory.
	charge, fill, copy uint32
	// needsExit says, for each function (by index), whether it gets the
	// exit check (exitChecks); fn is the function being rewritten.
	needsExit []bool
	fn        uint32
}

// loopSets lists the locals loop l's slow path redefines: those it
// writes, then those the loops around it write (up to outerLoopSets
// levels out, at most maxLoopSets in all). Redefining only its own would
// leave an outer loop's values, which live across the inner loop's slow
// path, stored to the stack at every pass of the outer loop.
func (w *rewriter) loopSets(scan *bodyScan, l int) []uint32 {
	w.sets = append(w.sets[:0], scan.loopSets[scan.loops[l].setsStart:scan.loops[l].setsEnd]...)
	for o, level := scan.loops[l].outer, 0; o >= 0 && level < outerLoopSets && len(w.sets) < maxLoopSets; o, level = scan.loops[o].outer, level+1 {
		for _, x := range scan.loopSets[scan.loops[o].setsStart:scan.loops[o].setsEnd] {
			if len(w.sets) < maxLoopSets && !slices.Contains(w.sets, x) {
				w.sets = append(w.sets, x)
			}
		}
	}
	return w.sets
}

// RedefineLoops is off only in benchmarks, to measure the loop checks
// as Version 5 made them (without redefine) side by side.
var RedefineLoops = true

// CallStackLimit is off only in benchmarks, to measure the call-stack
// limit's cost side by side with the rewrite without it.
var CallStackLimit = true

// outerLoopSets is how many levels of loops around a loop loopSets
// looks at.
const outerLoopSets = 4

// shift moves a function index past the added imports.
func (w *rewriter) shift(f uint32) uint32 {
	if f >= w.info.importedFuncs && f < w.info.funcs() {
		return f + addedFuncs
	}
	return f
}

// rewriteModule builds the rewritten module from a validated one.
func rewriteModule(wasm []byte, info *moduleInfo, lim *Limits, loopChecks bool) (*Prepared, error) {
	w := &rewriter{info: info, lim: lim, loopChecks: loopChecks, interrupt: info.importedFuncs, callStack: info.importedFuncs + 1,
		countdown: info.globals, stackLeft: info.globals + 1}
	newTypes, nNewTypes := []byte{0x60, 0, 0, 0x60, 1, typeI64, 0}, uint32(2) // () -> (), (i64) -> ()
	w.blockTypes, newTypes, nNewTypes = resultBlockTypes(info, newTypes, nNewTypes)
	// The bulk operations' functions, after the module's own, in a module
	// that has bulk operations.
	var helperFuncs, helperBodies []byte
	var nHelpers uint32
	if info.bulk {
		w.charge = info.importedFuncs + addedFuncs + info.definedFuncs
		w.fill, w.copy = w.charge+1, w.charge+2
		var types []byte
		types, helperFuncs, helperBodies, nHelpers = w.bulkHelpers(info.numTypes + nNewTypes)
		newTypes, nNewTypes = append(newTypes, types...), nNewTypes+2
	}
	var newImports []byte
	for i, name := range []string{InterruptFunc, CallStackFunc} {
		newImports = wasmbin.AppendName(wasmbin.AppendName(newImports, InterruptModule), name)
		newImports = append(newImports, 0)
		newImports = binary.AppendUvarint(newImports, uint64(info.numTypes+uint32(1-i))) // interrupt: (i64) -> ()
	}
	newGlobals := []byte{typeI64, 1, opI64Const}
	newGlobals = wasmbin.AppendSLEB(newGlobals, InterruptBudget)
	newGlobals = append(newGlobals, opEnd, typeI64, 1, opI64Const)
	newGlobals = wasmbin.AppendSLEB(newGlobals, int64(lim.MaxCallStack))
	newGlobals = append(newGlobals, opEnd)

	out := make([]byte, 0, len(wasm)+len(wasm)/8+256)
	out = append(out, wasm[:8]...)
	// Sections the module lacks are added before the first that ranks
	// after them.
	missing := []struct {
		id      byte
		done    bool
		payload []byte
	}{
		{secType, hasSection(info, secType), catN(nNewTypes, newTypes)},
		{secImport, info.hasImports, catN(addedFuncs, newImports)},
		{secGlobal, info.hasGlobals, catN(AddedGlobals, newGlobals)},
	}
	emitMissing := func(rank int) {
		for i := range missing {
			if m := &missing[i]; !m.done && rank > sectionRank[m.id] {
				out = wasmbin.AppendSection(out, m.id, m.payload)
				m.done = true
			}
		}
	}
	for _, s := range info.secs {
		payload := wasm[s.Start:s.End]
		if s.ID != secCustom {
			emitMissing(sectionRank[s.ID])
		}
		var err error
		switch s.ID {
		case secCustom:
			r := wreader{wasmbin.Reader{B: payload}}
			name, _ := r.name()
			switch {
			case name == rewriteSection, strings.HasPrefix(name, ".debug_"):
				continue
			case name == "name":
				names, _ := wasmbin.RenumberNames(payload, r.Pos, w.shift) // validated: well formed
				out = wasmbin.AppendSection(out, secCustom, names)
			default:
				out = append(out, wasm[s.Header:s.End]...)
			}
		case secType:
			missing[0].done = true
			out = wasmbin.AppendSection(out, secType, appendToVector(payload, nNewTypes, newTypes))
		case secImport:
			out = wasmbin.AppendSection(out, secImport, appendToVector(payload, addedFuncs, newImports))
		case secTable:
			out = wasmbin.AppendSection(out, secTable, capTables(info.tables, lim.MaxTableSize))
		case secGlobal:
			var p []byte
			if p, err = w.globals(payload); err == nil {
				out = wasmbin.AppendSection(out, secGlobal, append(p, newGlobals...))
			}
		case secExport:
			out = wasmbin.AppendSection(out, secExport, w.exports(payload))
		case secStart:
			out = wasmbin.AppendSection(out, secStart, binary.AppendUvarint(nil, uint64(w.shift(info.start))))
		case secElement:
			var p []byte
			if p, err = w.elements(payload); err == nil {
				out = wasmbin.AppendSection(out, secElement, p)
			}
		case secFunction:
			out = wasmbin.AppendSection(out, secFunction, appendToVector(payload, nHelpers, helperFuncs))
		case secCode:
			var p []byte
			if p, err = w.code(payload, nHelpers, helperBodies); err == nil {
				out = wasmbin.AppendSection(out, secCode, p)
			}
		default:
			out = append(out, wasm[s.Header:s.End]...)
		}
		if err != nil {
			return nil, malformed("section %s: %v", sectionNames[s.ID], err) // cannot happen: validated already
		}
	}
	emitMissing(len(sectionRank) + 1)
	mode := "entry"
	if loopChecks {
		mode = "entry+loop"
	}
	out = wasmbin.AppendSection(out, secCustom, append(wasmbin.AppendName(nil, rewriteSection),
		fmt.Sprintf("v%d checks=%s", Version, mode)...))
	return &Prepared{Wasm: out}, nil
}

// hasSection reports whether the module has a section with id.
func hasSection(info *moduleInfo, id byte) bool {
	for _, s := range info.secs {
		if s.ID == id {
			return true
		}
	}
	return false
}

// catN is a vector of n items, encoded in items.
func catN(n uint32, items []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(n)), items...)
}

// appendToVector returns a vector's payload with n items (encoded in
// items) appended.
func appendToVector(payload []byte, n uint32, items []byte) []byte {
	r := wreader{wasmbin.Reader{B: payload}}
	k, _ := r.U32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+len(items)+5), uint64(k)+uint64(n))
	out = append(out, payload[r.Pos:]...)
	return append(out, items...)
}

// resultBlockTypes returns, for each of the module's types, the block
// type of a block without parameters that yields the type's results
// (what the call-stack limit wraps a function's body in): empty, one
// value type, the type itself when it has no parameters, else a type
// appended to newTypes (() -> its results, one per distinct list).
func resultBlockTypes(info *moduleInfo, newTypes []byte, n uint32) ([][]byte, []byte, uint32) {
	bts := make([][]byte, info.numTypes)
	added := map[string]uint32{}
	for t := range info.numTypes {
		res := info.resultTypes[t]
		switch {
		case len(res) == 0:
			bts[t] = []byte{0x40}
		case len(res) == 1:
			bts[t] = []byte{res[0]}
		case info.typeParams[t] == 0:
			bts[t] = appendSleb32(nil, int32(t))
		default:
			idx, ok := added[string(res)]
			if !ok {
				idx = info.numTypes + n
				added[string(res)] = idx
				newTypes = append(newTypes, 0x60, 0)
				newTypes = binary.AppendUvarint(newTypes, uint64(len(res)))
				newTypes = append(newTypes, res...)
				n++
			}
			bts[t] = appendSleb32(nil, int32(idx))
		}
	}
	return bts, newTypes, n
}

// capTables encodes tables with a maximum of at most maxSize each.
func capTables(tables []tableDef, maxSize uint32) []byte {
	out := binary.AppendUvarint(nil, uint64(len(tables)))
	for _, t := range tables {
		max := maxSize
		if t.hasMax && t.max < max {
			max = t.max
		}
		out = append(out, t.refType, 1)
		out = binary.AppendUvarint(out, uint64(t.min))
		out = binary.AppendUvarint(out, uint64(max))
	}
	return out
}

// globals re-encodes a global section's payload (ref.func renumbered),
// AddedGlobals more counted: the caller appends them.
func (w *rewriter) globals(payload []byte) ([]byte, error) {
	r := wreader{wasmbin.Reader{B: payload}}
	n, _ := r.U32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+16), uint64(n)+AddedGlobals)
	for i := uint32(0); i < n; i++ {
		t, _ := r.Bytes(2) // type, mutability
		out = append(out, t...)
		var err error
		if out, err = r.constExpr(w.info.importedGlobals+i, w.info.funcs(), w.info.importedFuncs, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// exports re-encodes an export section's payload, functions renumbered.
func (w *rewriter) exports(payload []byte) []byte {
	r := wreader{wasmbin.Reader{B: payload}}
	n, _ := r.U32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+8), uint64(n))
	for range n {
		from := r.Pos
		_, _ = r.name()
		kind, _ := r.Byte()
		at := r.Pos
		idx, _ := r.U32()
		out = append(out, payload[from:at]...)
		if kind == 0 {
			idx = w.shift(idx)
		}
		out = binary.AppendUvarint(out, uint64(idx))
	}
	return out
}

// elements re-encodes an element section's payload, functions renumbered.
func (w *rewriter) elements(payload []byte) ([]byte, error) {
	info := w.info
	r := wreader{wasmbin.Reader{B: payload}}
	n, _ := r.U32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+16), uint64(n))
	for range n {
		from := r.Pos
		flag, _ := r.U32()
		if flag&2 != 0 && flag&1 == 0 {
			_, _ = r.U32()
		}
		var err error
		if flag&1 == 0 {
			out = append(out, payload[from:r.Pos]...)
			if out, err = r.constExpr(info.globals, info.funcs(), info.importedFuncs, out); err != nil {
				return nil, err
			}
			from = r.Pos
		}
		if flag&3 != 0 {
			_, _ = r.Byte()
		}
		items, _ := r.U32()
		out = append(out, payload[from:r.Pos]...)
		for range items {
			if flag&4 == 0 {
				f, err := r.U32()
				if err != nil {
					return nil, err
				}
				out = binary.AppendUvarint(out, uint64(w.shift(f)))
			} else if out, err = r.constExpr(info.globals, info.funcs(), info.importedFuncs, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// code rewrites the code section: the renumbered functions, the entry
// checks and, with loopChecks, the wrapped loops; then the nAdded bodies
// of added (the bulk operations' functions, bulkHelpers).
func (w *rewriter) code(payload []byte, nAdded uint32, added []byte) ([]byte, error) {
	info := w.info
	r := wreader{wasmbin.Reader{B: payload}}
	n, _ := r.U32()
	out := make([]byte, 0, len(payload)+len(payload)/4+int(n)*32+len(added))
	out = binary.AppendUvarint(out, uint64(n+nAdded))
	var scan bodyScan
	var body []byte
	if err := w.exitChecks(payload); err != nil {
		return nil, err
	}
	for i := uint32(0); i < n; i++ {
		fn := info.importedFuncs + i
		size, _ := r.U32()
		old, _ := r.Bytes(uint64(size))
		var err error
		w.fn = fn
		if scan, err = w.scanFull(old, fn, scan); err != nil {
			return nil, err
		}
		body = w.body(body[:0], old, &scan, info.funcTypes[fn])
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return append(out, added...), nil
}

// scanFull scans body of function fn as the rewrite does: split if it is
// heavy.
func (w *rewriter) scanFull(body []byte, fn uint32, scan bodyScan) (bodyScan, error) {
	env := w.info.bodyEnv(w.lim, fn, w.loopChecks)
	scan, err := scanBody(body, env, scan)
	if err == nil && heavy(&scan, len(body)-scan.codeStart) {
		env.split = true
		scan, err = scanBody(body, env, scan)
	}
	return scan, err
}

// exitChainLimit is the most work a chain of calls may do on its way back
// up, after the interrupt function refilled the countdown below it, with no
// exit check (exitChecks).
const exitChainLimit = InterruptBudget / 8

// exitChecks decides which functions get the exit check (needsExit): every
// function in a cycle of the call graph (a recursion, direct or through a
// table: its way back up has no bound), and any other whose code after its
// calls, with the most its callees do on their way back up, would pass
// exitChainLimit. The rest, where most calls are, skip it. The verifier
// checks the outcome (its "way back up").
func (w *rewriter) exitChecks(payload []byte) error {
	info := w.info
	nf := int(info.funcs())
	w.needsExit = make([]bool, nf)
	// The graph's nodes: the functions, then one per signature a
	// call_indirect uses (its edges: the functions of that signature that
	// may be in a table), so that its size is linear in the module's.
	sigNode := map[string]uint32{}
	rest := make([]int64, nf)
	edges := make([][]uint32, nf)
	calls := make([]bool, nf)
	r := wreader{wasmbin.Reader{B: payload}}
	n, _ := r.U32()
	// The functions a call_indirect may reach, by signature.
	bySig := map[string][]uint32{}
	sig := info.signature
	if info.anyRef {
		for f := info.importedFuncs; f < info.funcs(); f++ {
			bySig[sig(info.funcTypes[f])] = append(bySig[sig(info.funcTypes[f])], f)
		}
	} else {
		for _, f := range info.tabled {
			if f >= info.importedFuncs {
				bySig[sig(info.funcTypes[f])] = append(bySig[sig(info.funcTypes[f])], f)
			}
		}
	}
	var scan bodyScan
	for i := uint32(0); i < n; i++ {
		fn := info.importedFuncs + i
		size, _ := r.U32()
		old, _ := r.Bytes(uint64(size))
		var err error
		if scan, err = w.scanFull(old, fn, scan); err != nil {
			return err
		}
		calls[fn] = scan.calls
		rest[fn] = scan.restWeight(len(old)) + ExitWeight
		edges[fn] = append(edges[fn], scan.calleeFuncs...)
		for _, t := range scan.indirectTypes {
			v, ok := sigNode[sig(t)]
			if !ok {
				v = uint32(len(edges))
				sigNode[sig(t)] = v
				edges, rest, calls = append(edges, bySig[sig(t)]), append(rest, 0), append(calls, false)
			}
			if !slices.Contains(edges[fn], v) {
				edges[fn] = append(edges[fn], v)
			}
		}
	}
	nf = len(edges)
	// Tarjan's strongly connected components; chain is, once a function's
	// component is done, the most work its way back up does unchecked.
	index, low := make([]int, nf), make([]int, nf)
	onStack := make([]bool, nf)
	chain := make([]int64, nf)
	var stack []uint32
	next := 1
	var visit func(f uint32)
	visit = func(f uint32) {
		index[f], low[f] = next, next
		next++
		stack = append(stack, f)
		onStack[f] = true
		for _, g := range edges[f] {
			switch {
			case index[g] == 0:
				visit(g)
				low[f] = min(low[f], low[g])
			case onStack[g]:
				low[f] = min(low[f], index[g])
			}
		}
		if low[f] != index[f] {
			return
		}
		var comp []uint32
		for {
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[g] = false
			comp = append(comp, g)
			if g == f {
				break
			}
		}
		recursive := len(comp) > 1 || slices.Contains(edges[f], f)
		for _, g := range comp {
			var below int64
			for _, h := range edges[g] {
				below = max(below, chain[h])
			}
			c := rest[g] + below
			switch {
			case int(g) >= len(w.needsExit): // a signature's node: the most of its functions
				c = below
			case !calls[g]:
				c = 0 // a leaf: its callers count it whole
			case recursive || c > exitChainLimit:
				w.needsExit[g], c = true, 0
			}
			chain[g] = c
		}
	}
	for f := info.importedFuncs; f < info.funcs(); f++ {
		if index[f] == 0 {
			visit(f)
		}
	}
	w.needsExit = w.needsExit[:info.funcs()]
	return nil
}
