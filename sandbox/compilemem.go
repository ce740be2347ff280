package sandbox

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// What compiling a module takes in the runner's memory, estimated from
// what it contains, so that a module whose compilation would take more
// than Config.CompileMemory is refused before wazero sees it
// (docs/security.md, "Compile memory"). wazero v1.12.0 compiles a
// module's functions one by one on CompilationWorkers goroutines; each
// worker's SSA, register allocation and machine code buffers grow to the
// largest function it compiled and stay until the module is done, and
// the machine code of every function is held twice (each function's and
// the module's executable) until then. So the peak is what the whole
// module keeps (retained, per instruction: a few bytes for most, more for
// calls and the instructions wazero guards with a trap) plus, for each
// worker, what its largest function took while compiled (transient:
// hundreds of bytes an instruction, and thousands for each one that
// branches, traps or loops: an i32.load, a call_indirect, an if). The
// coefficients are measured peak RSS with wazero v1.12.0 on amd64, with
// margins (TestCompileMemoryMeasure, docs/design/compile-memory.md):
// the estimate is over what each measured shape took (1.2 to 1.6 times
// it on the costliest), and 1.3 to 1.5 times what real programs took.

// The estimate's constant terms, in bytes.
const (
	compileMemBase    = 24 << 20 // anything: wazero's and the rewrite's fixed structures, the collector's slack
	compileMemPerByte = 6        // per byte of the module: the decoded module, its copies and the rewrite's
	compileMemPerFunc = 640      // per function: 570 measured for empty ones
	// Per variable and join (joinsCost): 116-150 measured on bodies
	// made to have many of both.
	compileMemPerJoinVar = 180
	// The quick bound's per-byte worsts (quickCompileMemory): no
	// instruction, with the least code that gives it its operands, is
	// costed more than 256 bytes kept per byte of code (trapping
	// float-to-int conversions: 416 for 2 bytes, chained with a
	// conversion back) nor 6,000 while its function compiles
	// (call_indirect: 16,000 for 3 bytes, chained on its result).
	compileMemRetainedPerCodeByte  = 256
	compileMemTransientPerCodeByte = 6000
)

// opCost is what one instruction costs: retained for the module's
// compilation, transient while its function compiles.
type opCost struct{ retained, transient uint32 }

// Instructions' costs, in bytes. plainOp is most instructions' (local and
// global access, arithmetic, comparisons, constants, SIMD arithmetic).
var (
	plainOp    = opCost{16, 350}
	callOp     = opCost{128, 1350}
	indirectOp = opCost{480, 16000} // three checks: table bounds, null, signature
	memOp      = opCost{160, 6000}  // a bounds check
	growOp     = opCost{64, 2400}   // a call out of the guest
	divOp      = opCost{256, 5800}  // signed: zero and overflow checks
	remOp      = opCost{160, 3500}  // a zero check
	truncOp    = opCost{400, 9800}  // NaN and overflow checks
	tableOp    = opCost{160, 5000}  // a bounds check
	ifOp       = opCost{64, 8000}   // a branch, and blocks for both arms and the join
	branchOp   = opCost{64, 4500}   // block, loop, else, br_if, br_table: a basic block
	targetOp   = opCost{32, 64}     // each of br_table's targets
	copyOp     = opCost{480, 23000} // memory.copy, memory.init, table.copy, table.init: checks and a call
	fillOp     = opCost{500, 40000} // memory.fill, table.fill: an inlined loop
)

// opCosts is each one-byte opcode's cost (the prefixed ones are in
// bodyCounts.misc and .vec).
var opCosts = func() (t [256]opCost) {
	for i := range t {
		t[i] = plainOp
	}
	for op := 0x28; op <= 0x3e; op++ { // loads and stores
		t[op] = memOp
	}
	for _, op := range []byte{0x6d, 0x7f} { // i32.div_s, i64.div_s
		t[op] = divOp
	}
	for _, op := range []byte{0x6e, 0x6f, 0x70, 0x80, 0x81, 0x82} { // div_u, rem_s, rem_u
		t[op] = remOp
	}
	for _, op := range []byte{0xa8, 0xa9, 0xaa, 0xab, 0xae, 0xaf, 0xb0, 0xb1} { // trunc_f32/f64_s/u
		t[op] = truncOp
	}
	t[wasmbin.OpCall], t[wasmbin.OpCallIndirect] = callOp, indirectOp
	t[0x40] = growOp                    // memory.grow
	t[0x25], t[0x26] = tableOp, tableOp // table.get, table.set
	t[wasmbin.OpIf] = ifOp
	for _, op := range []byte{wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpElse, wasmbin.OpBrIf, wasmbin.OpBrTable} {
		t[op] = branchOp
	}
	return t
}()

// bodyCounts is what one function body costs to compile.
type bodyCounts struct {
	instrs              uint64
	blocks              uint64 // block, loop and if: the places wazero may join values
	locals              uint64 // declared, its parameters not included
	retained, transient uint64 // bytes: opCost summed, and for transient the joins' (compileMemPerJoinVar)
	raw                 bool   // the module before the rewrite: bulk operations cost calls
}

func (c *bodyCounts) add(o opCost) {
	c.retained += uint64(o.retained)
	c.transient += uint64(o.transient)
}

// compileEstimate is what compileMemory found.
type compileEstimate struct {
	bytes int64 // the estimate
	exact bool  // from every instruction (else the quick bound)
}

// moduleCode is what the estimates read of a module's sections: its
// shape, its code section, and the parameters of each function it
// defines.
type moduleCode struct {
	shape  moduleShape
	code   []byte
	params []uint32 // by defined function, in the code section's order
}

// readModuleCode reads wasm's sections for the estimates; false: they do
// not decode.
func readModuleCode(wasm []byte) (m moduleCode, ok bool) {
	m.shape = readShape(wasm)
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return m, false
	}
	var typeParams, funcTypes []uint32
	for _, s := range secs {
		p := wasm[s.Start:s.End]
		switch s.ID {
		case wasmbin.SecCode:
			m.code = p
		case wasmbin.SecType:
			if typeParams, ok = readTypeParams(p); !ok {
				return m, false
			}
		case wasmbin.SecFunction:
			n, k, err := wasmbin.U32(p)
			if err != nil || uint64(n) > uint64(len(p)) {
				return m, false
			}
			funcTypes = make([]uint32, n)
			for i := range funcTypes {
				p = p[k:]
				if funcTypes[i], k, err = wasmbin.U32(p); err != nil {
					return m, false
				}
			}
		}
	}
	m.params = make([]uint32, len(funcTypes))
	for i, t := range funcTypes {
		if uint64(t) >= uint64(len(typeParams)) {
			return m, false
		}
		m.params[i] = typeParams[t]
	}
	return m, true
}

// readTypeParams returns each function type's parameter count.
func readTypeParams(p []byte) ([]uint32, bool) {
	n, k, err := wasmbin.U32(p)
	if err != nil || uint64(n) > uint64(len(p)) {
		return nil, false
	}
	p = p[k:]
	params := make([]uint32, n)
	for i := range params {
		if len(p) == 0 || p[0] != 0x60 {
			return nil, false
		}
		np, k, err := wasmbin.U32(p[1:])
		if err != nil || uint64(len(p)) < 1+uint64(k)+uint64(np) {
			return nil, false
		}
		params[i], p = np, p[1+k+int(np):]
		nr, k, err := wasmbin.U32(p)
		if err != nil || uint64(len(p)) < uint64(k)+uint64(nr) {
			return nil, false
		}
		p = p[k+int(nr):]
	}
	return params, true
}

// total adds up an estimate: the module's fixed and retained costs, and
// the workers largest transients.
func (m *moduleCode) total(retained uint64, largest []uint64) int64 {
	s := m.shape
	est := uint64(compileMemBase) + uint64(s.size)*compileMemPerByte + s.funcs*compileMemPerFunc + retained
	for _, n := range largest {
		est += n
	}
	return int64(min(est, 1<<62))
}

// joinsCost is what wazero's SSA construction may keep while it compiles
// a body of blocks blocks and vars variables (parameters and locals): a
// variable read after a join is looked up through it, and what was found
// is kept there (a map entry and a value), so at worst every variable at
// every join.
func joinsCost(blocks, vars uint64) uint64 {
	return min((blocks+1)*vars, 1<<50) * compileMemPerJoinVar
}

// quickCompileMemory bounds what compiling wasm (prepared: what wazero
// compiles) takes from its sizes alone: its code section's bytes and the
// workers largest bodies, at their worst per byte, and their locals. It
// reads each body's size and locals, not its code: microseconds for a
// Go guest of 1,800 functions. ok is false when its sections do not
// decode.
func quickCompileMemory(wasm []byte, workers int) (int64, bool) {
	m, ok := readModuleCode(wasm)
	if !ok {
		return 0, false
	}
	largest := make([]uint64, max(workers, 1))
	i := 0
	if !eachBody(m.code, func(body []byte) bool {
		locals, start, ok := readLocals(body)
		if !ok || i >= len(m.params) {
			return false
		}
		size := uint64(len(body) - start)
		// A block takes at least two bytes and its end one.
		t := size*compileMemTransientPerCodeByte + joinsCost(size/3, locals+uint64(m.params[i]))
		keepLargest(largest, t)
		i++
		return true
	}) {
		return 0, false
	}
	return m.total(m.shape.codeBytes*compileMemRetainedPerCodeByte, largest), true
}

// exactCompileMemory estimates what compiling wasm (prepared) takes from
// every instruction of its code: what each keeps, plus what the workers
// costliest functions take while compiled.
func exactCompileMemory(wasm []byte, workers int) (int64, bool) {
	return estimateCompileMemory(wasm, workers, false)
}

// rawCompileMemory is exactCompileMemory on a module before the rewrite:
// its bulk memory and table operations costed as the calls the rewrite
// makes of them.
func rawCompileMemory(wasm []byte, workers int) (int64, bool) {
	return estimateCompileMemory(wasm, workers, true)
}

func estimateCompileMemory(wasm []byte, workers int, raw bool) (int64, bool) {
	m, ok := readModuleCode(wasm)
	if !ok {
		return 0, false
	}
	var retained uint64
	largest := make([]uint64, max(workers, 1))
	i := 0
	if !eachBody(m.code, func(body []byte) bool {
		c := bodyCounts{raw: raw}
		ok := c.count(body)
		if !ok || i >= len(m.params) {
			return false
		}
		retained += c.retained
		keepLargest(largest, c.transient+joinsCost(c.blocks, c.locals+uint64(m.params[i])))
		i++
		return true
	}) {
		return 0, false
	}
	return m.total(retained, largest), true
}

// overShapeLimits reports whether wasm declares more functions, or a body
// more bytes or locals, than lim allows: the preparation refuses it then,
// naming the limit, which says more than an estimate would.
func overShapeLimits(wasm []byte, lim *ModuleLimits) bool {
	m, ok := readModuleCode(wasm)
	if !ok || m.shape.funcs > uint64(lim.MaxFunctions) {
		return true
	}
	over := false
	eachBody(m.code, func(body []byte) bool {
		locals, _, ok := readLocals(body)
		over = !ok || len(body) > int(lim.MaxFunctionSize) || locals > uint64(lim.MaxLocals)
		return !over
	})
	return over
}

// keepLargest keeps in largest the largest values it was given.
func keepLargest(largest []uint64, v uint64) {
	for i := range largest {
		if v > largest[i] {
			largest[i], v = v, largest[i]
		}
	}
}

// eachBody calls f with each function body of the code section code (its
// locals and code), until f returns false; it reports whether every body
// was read and f returned true for each.
func eachBody(code []byte, f func(body []byte) bool) bool {
	if len(code) == 0 {
		return true
	}
	n, k, err := wasmbin.U32(code)
	if err != nil {
		return false
	}
	p := code[k:]
	for range n {
		size, k, err := wasmbin.U32(p)
		if err != nil || uint64(len(p)-k) < uint64(size) {
			return false
		}
		if !f(p[k : k+int(size)]) {
			return false
		}
		p = p[k+int(size):]
	}
	return true
}

// readLocals reads a body's local declarations: how many locals, and
// where its code starts.
func readLocals(b []byte) (locals uint64, start int, ok bool) {
	groups, k, err := wasmbin.U32(b)
	if err != nil {
		return 0, 0, false
	}
	i := k
	for range groups {
		n, k, err := wasmbin.U32(b[i:])
		if err != nil || i+k >= len(b) {
			return 0, 0, false
		}
		locals += uint64(n)
		i += k + 1 // and the type
	}
	return locals, i, true
}

// compileMemory estimates what compiling wasm (prepared) takes: the quick
// bound when it is within limit (or limit is negative: no limit), else
// the exact estimate. A module whose sections do not decode (wazero
// refuses it) is estimated 0.
func (r *Runtime) compileMemory(wasm []byte) compileEstimate {
	q, ok := quickCompileMemory(wasm, r.cfg.CompilationWorkers)
	if !ok {
		return compileEstimate{}
	}
	if limit := r.cfg.CompileMemory; limit < 0 || q <= limit {
		return compileEstimate{bytes: q}
	}
	return r.exactCompileMemory(wasm, q)
}

// exactCompileMemory is exactCompileMemory with its workers, never over
// the quick bound q (both bound the same thing).
func (r *Runtime) exactCompileMemory(wasm []byte, q int64) compileEstimate {
	e, ok := exactCompileMemory(wasm, r.cfg.CompilationWorkers)
	if !ok {
		return compileEstimate{bytes: q}
	}
	return compileEstimate{bytes: min(e, q), exact: true}
}

// precheckCompileMemory refuses, before it is prepared, a module whose
// own bytes are estimated over Config.CompileMemory: the rewrite only
// adds code to what wazero compiles (but for the bulk operations, which
// become calls: costed so here, rawCompileMemory), so it would be refused
// after, and its preparation (the rewrite, the verifier) would have
// taken memory and time for nothing; the 8 MB of calls of issue 37 are
// refused here. A module over ModuleLimits.MaxModuleSize, or that does
// not decode, is left to the preparation's errors.
func (r *Runtime) precheckCompileMemory(sha string, wasm []byte) error {
	limit := r.cfg.CompileMemory
	if limit < 0 || len(wasm) > r.cfg.ModuleLimits.MaxModuleSize {
		return nil
	}
	if q, ok := quickCompileMemory(wasm, r.cfg.CompilationWorkers); !ok || q <= limit || overShapeLimits(wasm, &r.cfg.ModuleLimits) {
		return nil
	}
	est, ok := rawCompileMemory(wasm, r.cfg.CompilationWorkers)
	if !ok || est <= limit {
		return nil
	}
	r.log.Info("module refused before its preparation: compiling it is estimated over the compile memory limit (limits.compile_memory)",
		zap.String("sha256", sha), zap.Int64("estimate", est), zap.Int64("compile_memory", limit))
	return errCompileMemory(est, limit)
}

// errCompileMemory is the error for a module whose compilation is
// estimated over the limit.
func errCompileMemory(est, limit int64) *ModuleError {
	return &ModuleError{Kind: KindInvalidModule, Err: ErrCompileMemory, Message: fmt.Sprintf(
		"compiling this module is estimated to take %s of memory, over the limit of %s (limits.compile_memory): "+
			"wazero's compile memory grows with the largest functions, their locals and blocks, and the instructions it checks "+
			"(memory accesses, call_indirect, divisions, branches); split its largest functions, or raise the limit",
		sizeString(est), sizeString(limit))}
}

// sizeString is n bytes for people: 1.3 GiB, 512 MiB, 900 KiB.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.4g MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}

// Immediates of the one-byte opcodes, for countBody.
const (
	immNone   = iota
	immLEB    // one LEB128 number (br, call, local.get, i32.const, ref.func, ...)
	immLEB2   // two (call_indirect; a load's or store's align and offset)
	immTable  // br_table's targets
	immSelect // select's types
	immByte   // one byte (memory.size, memory.grow, ref.null)
	immF32    // f32.const
	immF64    // f64.const
	immMisc   // the 0xfc prefix
	immVec    // the 0xfd prefix
)

// opImm is each one-byte opcode's immediate. A block type is one byte or
// a LEB128 type index: skipped as a LEB128 number either way.
var opImm = func() (t [256]byte) {
	for op := wasmbin.OpLocalGet; op <= 0x26; op++ { // local.*, global.*, table.get, table.set
		t[op] = immLEB
	}
	for op := 0x28; op <= 0x3e; op++ { // loads and stores
		t[op] = immLEB2
	}
	for _, op := range []byte{wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf, 0x0c, wasmbin.OpBrIf, wasmbin.OpCall,
		wasmbin.OpRefFunc, wasmbin.OpI32Const, wasmbin.OpI64Const} {
		t[op] = immLEB
	}
	t[wasmbin.OpCallIndirect] = immLEB2
	t[wasmbin.OpBrTable], t[0x1c] = immTable, immSelect
	t[0x3f], t[0x40], t[wasmbin.OpRefNull] = immByte, immByte, immByte
	t[wasmbin.OpF32Const], t[wasmbin.OpF64Const] = immF32, immF64
	t[wasmbin.OpMiscPrefix], t[wasmbin.OpVecPrefix] = immMisc, immVec
	return t
}()

// skipLEB returns the index past the LEB128 number at b[i] (past len(b)
// when it does not end there).
func skipLEB(b []byte, i int) int {
	for i < len(b) && b[i]&0x80 != 0 {
		i++
	}
	return i + 1
}

// countBody costs one function body of a prepared module.
func countBody(b []byte) (c bodyCounts, ok bool) {
	ok = c.count(b)
	return c, ok
}

// count costs one function body (its locals, then its code), instruction
// by instruction; the body was validated before, so its immediates are
// skipped, not checked. False: it ends inside an instruction. About 1 ns
// a byte.
func (c *bodyCounts) count(b []byte) bool {
	locals, i, ok := readLocals(b)
	if !ok {
		return false
	}
	c.locals = locals
	for i < len(b) {
		op := b[i]
		i++
		c.instrs++
		switch opImm[op] {
		case immNone:
		case immLEB:
			i = skipLEB(b, i)
			if op == wasmbin.OpBlock || op == wasmbin.OpLoop || op == wasmbin.OpIf {
				c.blocks++
			}
		case immLEB2:
			i = skipLEB(b, skipLEB(b, i))
		case immTable:
			n, k, err := wasmbin.U32(b[i:])
			if err != nil {
				return false
			}
			i += k
			for j := uint64(0); j <= uint64(n) && i < len(b); j++ {
				c.add(targetOp)
				i = skipLEB(b, i)
			}
		case immSelect:
			n, k, err := wasmbin.U32(b[i:])
			if err != nil {
				return false
			}
			i += k + int(n)
		case immByte:
			i++
		case immF32:
			i += 4
		case immF64:
			i += 8
		case immMisc:
			i = c.misc(b, i)
			continue
		case immVec:
			i = c.vec(b, i)
			continue
		}
		c.add(opCosts[op])
	}
	return i == len(b)
}

// bulk is what a bulk operation costing o costs: a call, before the
// rewrite (which makes it one).
func (c *bodyCounts) bulk(o opCost) opCost {
	if c.raw {
		return callOp
	}
	return o
}

// misc costs the 0xfc instruction whose sub-opcode is at b[i], and
// returns the index past it.
func (c *bodyCounts) misc(b []byte, i int) int {
	sub, k, err := wasmbin.U32(b[i:])
	if err != nil {
		return len(b) + 1
	}
	i += k
	switch {
	case sub <= 7: // the saturating truncations: no checks
		c.add(plainOp)
		return i
	case sub == 8: // memory.init
		c.add(c.bulk(copyOp))
		return skipLEB(b, i) + 1
	case sub == 10: // memory.copy
		c.add(c.bulk(copyOp))
		return i + 2
	case sub == 11: // memory.fill
		c.add(c.bulk(fillOp))
		return i + 1
	case sub == 12 || sub == 14: // table.init, table.copy
		c.add(c.bulk(copyOp))
		return skipLEB(b, skipLEB(b, i))
	case sub == 15: // table.grow
		c.add(growOp)
	case sub == 17: // table.fill
		c.add(c.bulk(fillOp))
	default: // data.drop, elem.drop, table.size
		c.add(plainOp)
	}
	return skipLEB(b, i)
}

// vec costs the 0xfd instruction whose sub-opcode is at b[i], and returns
// the index past it.
func (c *bodyCounts) vec(b []byte, i int) int {
	sub, k, err := wasmbin.U32(b[i:])
	if err != nil {
		return len(b) + 1
	}
	i += k
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores
		c.add(memOp)
		return skipLEB(b, skipLEB(b, i))
	case sub >= 84 && sub <= 91: // lane loads and stores
		c.add(memOp)
		return skipLEB(b, skipLEB(b, i)) + 1
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		i += 16
	case sub >= 21 && sub <= 34: // lane extract and replace
		i++
	}
	c.add(plainOp)
	return i
}
