package rewrite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Module preparation: one pass over a module's bytes, before wazero sees
// them, that validates and rewrites.
//
// Validation. Every section is decoded in full (every vector's count
// checked against the bytes that hold it, every function body decoded
// instruction by instruction, see wasmcode.go), and the module is held to
// Config.Limits. wazero's own decoder allocates from counts before
// reading them (a 6-byte length can make it allocate 4 GiB), and its
// compiler takes quadratic time on some shapes and cannot be cancelled;
// nothing reaches it unchecked.
//
// Rewriting, so that every guest can be stopped (issue 9). A guest's
// machine code is invisible to Go's scheduler: until it calls out to Go,
// nothing can preempt it, so it holds its P and blocks every stop-the-world
// (each garbage collection) for as long as it runs. A check that only
// reads a flag the host sets (the first design measured) is not enough:
// once a garbage collection starts, the goroutine that would set the flag
// never runs again, nor does anything else in the process. So every check
// counts down and, every InterruptBudget units of work, calls the host
// function InterruptModule.InterruptFunc, which ends the guest if its hard
// context is done and is a point where Go can preempt it.
//
// The bound (rewrite version 21, issue 23). One invariant holds the
// checks together: every unit of work is charged to the instance's one
// countdown before it runs, and the countdown is tested wherever control
// can come back: at every loop header and at the entry of every function
// that calls (the only way to recurse). So between two calls of the
// interrupt function a guest does at most B (InterruptBudget) units, plus
// the charges of one path that passes no test: a loop pass, or a function
// body, and on the way back up the code after the calls still on the
// stack (which the call-stack budget bounds). A unit is charged for at
// most 4 bytes of code. What holds it:
//
//   - One countdown per instance, a global. A function with loop checks
//     caches it in a local, writes it back before every call and at every
//     way out, and reads it again after every call (wasmtime keeps its
//     fuel so). Version 20 gave each frame its own countdown, refilled at
//     its entry: three nested loop functions reached the interrupt
//     function once per 10^11 units, and a whole runner froze behind them.
//   - Everything weighs. A check's weight is 1 + its code's bytes / 4, 32
//     more per call, 224 more per host call, and for each call what the
//     callee does that no check of its own counts (uncountedWork: a
//     function without an entry countdown counts whole where it is called,
//     one whose checks sit in its calling arm its whole body; through a
//     table, the most of any function of the call's type). No weight is
//     capped (version 20 capped them at B), and the countdown is an i64:
//     no sum of charges wraps.
//   - The count is exact: a loop's slow path refills the countdown with B
//     plus the check's weight, since the pass goes back through its check,
//     and the interrupt function is given what was left (work.go).
//
// TestBoundRandomPrograms proves the bound, that nothing runs uncharged
// and that the count is exact however a run ends, on random programs
// (bound_prop_test.go); TestBoundNestedLoops on the escape's shapes.
//
// The rewrite, piece by piece:
//
//   - The imports InterruptModule.InterruptFunc (type (i64) -> (): what
//     was left of the countdown that ran out, for the work counter,
//     work.go) and CallStackFunc (type () -> ()), their types appended to
//     the types, are appended to the imports. Every
//     function the module defines moves up by two indices (addedFuncs):
//     calls, ref.func, element segments, exports, the start section and
//     the name section are renumbered. A module that imports anything
//     from InterruptModule itself is refused (KindBadImport): it could
//     call interrupt with a made-up count (rewrite version 12).
//   - Two mutable i64 globals, the countdown and the call stack's budget
//     (Limits.MaxCallStack), are appended after all the module's
//     globals. Appended last, they change no other global's
//     index; the guest's code cannot name them, since every global.get,
//     global.set, constant expression and export is checked to name one
//     of the original globals.
//   - At the entry of every function that calls a function of the module
//     (directly or through a table: the only way to recurse):
//     the countdown `$g -= W; if $g < 0 { x = $g; $g = B; call
//     $interrupt(x) }`,
//     where B is InterruptBudget and W the function's weight: 1 + its
//     code bytes / 4 (see weight); its test is shared with the call-stack
//     limit's, next.
//   - The call-stack limit (callstack.go), in the same functions (a
//     function that calls none cannot deepen the stack past its own
//     frame), shares the countdown's test: the entry is `$g -= W; $s -=
//     F; if ($g | $s) < 0 { if $s < 0 { call $call_stack; unreachable }
//     x = $g; $g = B; call $interrupt(x) }` (entryChecks), F the function's
//     estimated frame (frameWeight: 64 bytes, 16 per parameter, local and
//     operand stack value, half a byte per byte of code); then the body
//     inside `block bt ... end` (bt: no parameters, the function's
//     results; a type is appended for multiple results with parameters),
//     followed by `global.get $s; i32.const F; i32.add; global.set $s`.
//     Every way out of the function releases its frame: the end and a
//     branch to the function's label (which now names the block, at the
//     same depth: no renumbering) reach that release; each return is
//     preceded by the same release (not turned into a branch to the
//     block: thousands of returns would be thousands of branches to one
//     label, which wazero compiles in quadratic time, and a function
//     with more than max_branches_to_label of them was refused). A trap or a
//     forced stop discards the instance, so nothing is owed then; a
//     plugin's warm instance sees the budget whole after each call. Tail
//     calls (return_call) are not among the features Stint accepts.
//   - The calling arm (rewrite version 14): in a function without loops
//     whose calls all lie in one arm of one if (the classic recursion,
//     `if base case then leaf else recurse`), with no branch in that arm
//     to a label outside the if, both checks go at the start of that arm
//     instead of the function's entry, and the arm's code goes in `block
//     bt ... end` (bt: the if's) followed by the frame's release
//     (callingArm). A path through the other arm calls nothing: it
//     cannot deepen the stack, its work is bounded by the body's size,
//     and it pays for no check and is not counted as work. The leaves of
//     a binary recursion, half its calls, then cost nothing.
//   - In InterruptChecks mode, every loop `loop bt ... end` (bt without
//     parameters) becomes `block bt (loop bt (block (loop bt [check] ...
//     end) br 2) [slow] br 0)`, where [check] is `local.get $n; i32.const
//     W; i32.sub; local.tee $n; i32.const 1; i32.lt_s; br_if 1` and [slow]
//     is `local.get $n; call $interrupt; i64.const B+W; local.set $n` ($n:
//     the local that caches the countdown, see The bound; W: the check's
//     weight, which also counts its calls). The call stays outside the loop, after a
//     forward branch: with the call inside the loop (in an if), wazero
//     spills the loop's values around it (1.4x on a one-add loop), and
//     with the slow path at the top of an outer loop (a backward branch),
//     the loop ran 2x slower; this shape costs about what a flag test
//     costs. Branches that leave a wrapped loop get three more labels to
//     leave. A loop with parameters (rare) gets `[check] if [slow] end`
//     inside it instead.
//   - Segments, in InterruptChecks mode (rewrite version 15): a loop's
//     check takes only the weight of its header segment, the code from
//     the loop's block type to the first end, else or inner loop in it;
//     each later segment of the loop (the code after each end or else
//     in it, up to the next one: where a br_table's target blocks, an
//     if's arms and what follows an inner loop start) takes its own
//     weight from the counter where it starts, `local.get $n; i32.const
//     W; i32.sub; local.set $n` (editCharge), without a test: a pass is
//     charged the segments it runs, and the test at the next loop
//     header sees them. Every instruction in a loop lies in a segment
//     that control enters only at its start (a branch lands after an end
//     or at a loop header), so no pass runs uncharged code. Charging the
//     whole body at the header overcharged Go guests about 20x (their
//     functions are one dispatch loop, a br_table over every block of
//     the function): the Go primes guest called the interrupt function
//     every ~100 ns and ran 1.7x the time of no stop mechanism; charged
//     by segment, 1.07x. Unrolled loops keep the whole body's weight
//     (times UnrollCopies) at their check and no charges inside, and so
//     do all the loops of a body with more segments than maxCharges
//     allows (the charges' code would grow it too much).
//   - Bulk operations (rewrite versions 16-19): every memory.init,
//     memory.copy, memory.fill, table.init, table.copy, table.grow and
//     table.fill, whose time grows with its size, calls a function the
//     rewrite appends after the module's own (bulkHelpers): charge,
//     before it, or fill and copy, in its place, which also do large
//     operations in pieces. The types of those functions are appended to
//     the types, their entries to the function section and their bodies
//     to the code section.
//   - The cache, in InterruptChecks mode: a function with loop checks
//     reads the countdown into $n after its entry checks, and writes it
//     back (`local.get $n; global.set $g`: writeBack) before every call
//     (call, call_indirect, the bulk functions') and at every way out,
//     with the call-stack release: the body goes in the same `block bt
//     ... end` (in a function that calls nothing too) and each return is
//     preceded by it; after every call it reads it again (reload).
//   - Unrolling, in InterruptChecks mode: a small loop, `loop BODY end`
//     with no block type (0x40), at most maxUnrollBody bytes of code, no
//     loop or call in it, and at least one branch to its own label (br,
//     br_if or br_table, at any depth: a counted loop's final br_if 0, a
//     state machine's arms), runs its check once per UnrollCopies (4)
//     passes, of weight UnrollCopies*W: its wrapped inner loop is `loop
//     [check] (block BODY br 4) x3 BODY end`, each copy's block standing
//     where the loop's label stood, so that a branch to the loop goes on
//     to the next copy, and its br 4 (reached when the body falls off its
//     end, leaving the loop) going to the wrapper's done block. The
//     copies are the body's bytes; the branches in them that leave the
//     loop (and the returns turned into branches) get one more label, the
//     copy's block, those to blocks in the body or to the loop none. A
//     one-add loop then ran 0.6x the original's time (wazero does not
//     unroll), 1.35x without it; a four-state br_table machine 0.85x,
//     1.04-1.6x without it (rewrite version 13: until 12 only loops whose
//     one branch to their label was a final br_if 0 were unrolled). The
//     copies' branches to enclosing labels count towards
//     max_branches_to_label when deciding to unroll (a label gets at
//     most about twice the limit's branches), not in the validation.
//     (In InterruptWazero mode, wazero's close-on-context-done calls out
//     to Go at every loop header itself.)
//   - Tables get a maximum of at most Limits.MaxTableSize.
//   - DWARF sections (.debug_*) name code offsets that moved: dropped.
//   - A custom section rewriteSection carrying Version is appended.
//     wazero's compilation cache is keyed by the module's bytes, so any
//     change to what this rewrite produces must change Version:
//     the bytes then differ and modules cached under the old rewrite are
//     never reused.
//
// The start section stays: its function runs inside InstantiateModule
// under the run's hard context, and its checks end it like any other.

const (
	// Version numbers what Prepare produces. Bump it on any
	// change to the rewrite (see above).
	Version = 21
	// rewriteSection is the custom section that carries Version.
	rewriteSection = "stint.rewrite"
	// InterruptModule and InterruptFunc name the host function the checks
	// call (interrupt.go).
	InterruptModule = "stint:sandbox"
	InterruptFunc   = "interrupt"
	// CallStackFunc names the host function the call-stack limit calls
	// when a call would go over it (callstack.go).
	CallStackFunc = "call_stack"
	// addedFuncs and AddedGlobals count the imports and globals the
	// rewrite appends.
	addedFuncs, AddedGlobals = 2, 2
	// frameBytes, frameSlotBytes and frameCodeBytes estimate a call's
	// frame on wazero's stack for the call-stack limit: frameBytes, plus
	// frameSlotBytes per parameter, local and operand stack value, plus
	// a byte per frameCodeBytes of code (wazero gives each value it
	// spills its own slot: code built for register pressure made frames
	// of up to 0.63 bytes per byte of code). See Limits.MaxCallStack.
	frameBytes, frameSlotBytes, frameCodeBytes = 64, 16, 2
	// InterruptBudget is the work between two calls of the interrupt
	// function, in units of about a nanosecond of the tightest code: a
	// check weighs 1 + (the bytes of the code it guards) / 4. The tightest
	// loop calls out about every 10-30 µs, at 50-100 ns a call.
	InterruptBudget = 1 << 15
)

// Section ids (wasmbin's).
const (
	secCustom    = wasmbin.SecCustom
	secType      = wasmbin.SecType
	secImport    = wasmbin.SecImport
	secFunction  = wasmbin.SecFunction
	secTable     = wasmbin.SecTable
	secMemory    = wasmbin.SecMemory
	secGlobal    = wasmbin.SecGlobal
	secExport    = wasmbin.SecExport
	secStart     = wasmbin.SecStart
	secElement   = wasmbin.SecElement
	secCode      = wasmbin.SecCode
	secData      = wasmbin.SecData
	secDataCount = wasmbin.SecDataCount
)

// sectionRank orders the known sections as the binary format requires
// (DataCount sits between Element and Code); 0 for anything else.
var sectionRank = [13]int{secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secGlobal: 6, secExport: 7, secStart: 8, secElement: 9, secDataCount: 10, secCode: 11, secData: 12}

var sectionNames = [13]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count"}

// Prepared is a module ready for wazero.
type Prepared struct {
	Wasm []byte // the rewritten module
}

// tableDef is one table the module defines.
type tableDef struct {
	refType  byte
	min, max uint32
	hasMax   bool
}

// moduleInfo is what the validation pass learns.
type moduleInfo struct {
	secs        []wasmbin.Section
	numTypes    uint32
	emptyTypes  map[uint32]bool // types with no parameters and no results
	typeParams  []uint32        // each type's number of parameters
	paramTypes  [][]byte        // each type's parameter types
	resultTypes [][]byte        // each type's result types
	typeResults []uint32        // each type's number of results
	funcTypes   []uint32        // each function's type, imported ones first
	// ownImport names the module's first import from InterruptModule
	// ("stint:sandbox.interrupt"), if any: a module's own is refused by
	// Prepare (the rewrite's output holds those it adds).
	ownImport       string
	importedFuncs   uint32
	definedFuncs    uint32
	importedGlobals uint32
	globals         uint32 // imported and defined
	tables          []tableDef
	exports         map[string]bool
	hasImports      bool
	hasGlobals      bool
	hasStart        bool
	start           uint32
	hasDataCount    bool
	hasMemory       bool // a memory section with its memory (imported memories are refused)
	bulk            bool // a body holds a bulk memory or table operation (bulkHelpers)
	// uncounted is, for each function, the work of a call of it that its
	// own checks do not count, which its callers' checks count instead
	// (bodyEnv.callees; see prepare.go, The bound); indirect the most of
	// it for a call_indirect of each type.
	uncounted, indirect []int64
	// pure and indirectPure: see bodyEnv. tabled lists the functions
	// element segments name; anyRef reports a ref.func anywhere else (a
	// global's or an element's expression, code), after which any
	// function may be in a table.
	pure, indirectPure []bool
	tested             []bool // see bodyEnv
	tabled             []uint32
	anyRef             bool
	dataCount          uint32
	elemItems          uint64 // items of the element segments read so far (max_element_items)
	codeSec            int    // index in secs, -1 if none
}

// bodyEnv is what scanBody needs to know to scan function fn.
func (info *moduleInfo) bodyEnv(lim *Limits, fn uint32, wrapLoops bool) bodyEnv {
	return bodyEnv{lim: lim, numTypes: info.numTypes, globals: info.globals, funcs: info.funcs(),
		importedFuncs: info.importedFuncs, fn: fn, wrapLoops: wrapLoops, typeParams: info.typeParams,
		typeResults: info.typeResults, funcTypes: info.funcTypes,
		params: info.typeParams[info.funcTypes[fn]], callees: info.uncounted, indirect: info.indirect,
		pure: info.pure, indirectPure: info.indirectPure, tested: info.tested}
}

// pureLeaf reports whether a function whose body scan found (code: its
// bytes of code) neither reads nor writes the countdown, nor can end a
// run but by a trap, in InterruptChecks mode: no call at all (not even to
// the host), no loop, no bulk operation, no entry countdown. A function
// with loop checks may call it without writing its cached countdown back
// or reading it again (see The bound).
func pureLeaf(scan *bodyScan, code int) bool {
	return scan.callCount == 0 && scan.loopCount == 0 && !scan.bulk && code <= bigBody
}

// uncountedWork is what a call of a function whose body scan found
// (code: its bytes of code) does that no check of its own counts: a
// function with no entry countdown (it calls no function of the module
// and is at most bigBody) is counted whole by its callers; one whose
// checks sit in its calling arm counts nothing on a path through its
// other arm, at most its whole body.
func uncountedWork(scan *bodyScan, code int) int64 {
	switch {
	case !scan.calls && code <= bigBody:
		return weight(code, scan.callCount, scan.hostCallCount, 0)
	case scan.calls && scan.sinkStart != 0 && scan.loopCount == 0:
		return weight(code, 0, 0, 0)
	}
	return 0
}

// funcs is the number of functions, imported and defined.
func (info *moduleInfo) funcs() uint32 { return info.importedFuncs + info.definedFuncs }

// malformed is the error for bytes that are not a valid module.
func malformed(format string, args ...any) error {
	return &Error{Message: "malformed module: " + fmt.Sprintf(format, args...)}
}

// Prepare validates wasm against lim and rewrites it as described
// above; loopChecks wraps every loop with its check too. The error is a
// *Error.
func Prepare(wasm []byte, lim *Limits, loopChecks bool) (*Prepared, error) {
	if len(wasm) > lim.MaxModuleSize {
		return nil, overLimit(fmt.Sprintf("module of %d bytes", len(wasm)), "max_module_size", uint64(lim.MaxModuleSize))
	}
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], wasmbin.Magic) {
		return nil, &Error{Message: "not a WebAssembly module (bad magic number)"}
	}
	if binary.LittleEndian.Uint32(wasm[4:8]) != 1 {
		return nil, &Error{Message: fmt.Sprintf(
			"WebAssembly binary version %d is not supported (only version 1)", binary.LittleEndian.Uint32(wasm[4:8]))}
	}
	info, err := validateModule(wasm, lim)
	if err != nil {
		return nil, err
	}
	if info.ownImport != "" {
		// The rewrite's own imports come after the module's: a guest that
		// named them could call interrupt with a made-up count (its work
		// units negative, past any work budget).
		return nil, &Error{BadImport: true, Message: fmt.Sprintf(
			"module imports %s: %s is Stint's own module, which its rewrite adds; guests may not import it", info.ownImport, InterruptModule)}
	}
	return rewriteModule(wasm, info, lim, loopChecks)
}

// validateModule decodes every section of wasm and checks it against lim.
func validateModule(wasm []byte, lim *Limits) (*moduleInfo, error) {
	info := &moduleInfo{exports: map[string]bool{}, emptyTypes: map[uint32]bool{}, codeSec: -1}
	r := wreader{b: wasm, pos: 8}
	lastRank := 0
	seenName := false
	var funcCount, codeCount, dataSegs uint32
	for !r.eof() {
		header := r.pos
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return nil, malformed("section header at byte %d: %v", header, err)
		}
		payload, err := r.bytes(uint64(size))
		if err != nil {
			return nil, malformed("section %d at byte %d runs past the end of the module (truncated file?)", id, header)
		}
		s := wasmbin.Section{ID: id, Start: r.pos - int(size), End: r.pos, Header: header}
		if id == 13 {
			return nil, &Error{Message: "module has a tag section: exception handling is not among the WebAssembly features Stint runs"}
		}
		if int(id) >= len(sectionRank) {
			return nil, malformed("unknown section id %d at byte %d", id, header)
		}
		if id != secCustom {
			if sectionRank[id] <= lastRank {
				return nil, malformed("section %s at byte %d is out of order", sectionNames[id], header)
			}
			lastRank = sectionRank[id]
		}
		sr := wreader{b: payload}
		info.secs = append(info.secs, s)
		switch id {
		case secCustom:
			name, err := sr.name()
			if err != nil {
				return nil, malformed("custom section at byte %d: %v", header, err)
			}
			if name == "name" {
				// wazero decodes it (allocating from its counts): it must
				// be well formed, and only one, as wazero requires.
				if seenName {
					return nil, malformed("a second name section at byte %d", header)
				}
				if !validNameSection(payload[sr.pos:]) {
					return nil, malformed("name section at byte %d", header)
				}
				seenName = true
			}
			continue
		case secType:
			err = info.readTypes(&sr, lim)
		case secImport:
			info.hasImports = true
			err = info.readImports(&sr, lim)
		case secFunction:
			funcCount, err = sr.count(lim.MaxFunctions, "functions", "max_functions")
			if err == nil && uint64(funcCount)+uint64(info.importedFuncs) > uint64(lim.MaxFunctions) {
				err = overLimit(fmt.Sprintf("%d functions", uint64(funcCount)+uint64(info.importedFuncs)), "max_functions", uint64(lim.MaxFunctions))
			}
			for i := uint32(0); i < funcCount && err == nil; i++ {
				var t uint32
				if t, err = sr.u32(); err == nil && t >= info.numTypes {
					err = fmt.Errorf("function %d has type %d; the module has %d types", info.importedFuncs+i, t, info.numTypes)
				}
				info.funcTypes = append(info.funcTypes, t)
			}
			info.definedFuncs = funcCount
		case secTable:
			err = info.readTables(&sr, lim)
		case secMemory:
			var n uint32
			if n, err = sr.u32(); err == nil && n > 1 {
				err = fmt.Errorf("%d memories (at most one)", n)
			}
			info.hasMemory = n == 1
			for i := uint32(0); i < n && err == nil; i++ {
				_, _, _, err = sr.limits()
			}
		case secGlobal:
			info.hasGlobals = true
			var n uint32
			n, err = sr.count(lim.MaxGlobals, "globals", "max_globals")
			if err == nil && uint64(n)+uint64(info.importedGlobals) > uint64(lim.MaxGlobals) {
				err = overLimit(fmt.Sprintf("%d globals", uint64(n)+uint64(info.importedGlobals)), "max_globals", uint64(lim.MaxGlobals))
			}
			for i := uint32(0); i < n && err == nil; i++ {
				var t, mut byte
				if t, err = sr.byte(); err != nil {
					break
				}
				if !isValType(t) {
					err = fmt.Errorf("global of unknown type 0x%02x", t)
					break
				}
				info.anyRef = info.anyRef || t == typeFuncref // it may hold a ref.func
				if mut, err = sr.byte(); err == nil && mut > 1 {
					err = fmt.Errorf("global mutability 0x%02x", mut)
				}
				if err == nil {
					// A global's initialiser may read only the globals before it.
					_, err = sr.constExpr(info.importedGlobals+i, info.funcs(), info.importedFuncs, nil)
				}
			}
			info.globals = info.importedGlobals + n
		case secExport:
			err = info.readExports(&sr, lim)
		case secStart:
			info.hasStart = true
			info.start, err = sr.u32()
			if err == nil && uint64(info.start) >= uint64(len(info.funcTypes)) {
				err = fmt.Errorf("start function %d does not exist", info.start)
			} else if err == nil && !info.emptyTypes[info.funcTypes[info.start]] {
				err = fmt.Errorf("start function %d takes parameters or returns results", info.start)
			}
		case secElement:
			err = info.readElements(&sr, lim)
		case secDataCount:
			info.hasDataCount = true
			info.dataCount, err = sr.u32()
		case secCode:
			info.codeSec = len(info.secs) - 1
			codeCount, err = info.checkCode(&sr, lim)
		case secData:
			dataSegs, err = info.readData(&sr, lim)
		}
		if err == nil && !sr.eof() {
			err = fmt.Errorf("%d bytes left over at its end", len(payload)-sr.pos)
		}
		if err != nil {
			var me *Error
			if errors.As(err, &me) {
				return nil, err
			}
			return nil, malformed("section %s: %v", sectionNames[id], err)
		}
	}
	if funcCount != codeCount {
		return nil, malformed("%d functions declared but %d bodies", funcCount, codeCount)
	}
	if info.hasDataCount && info.dataCount != dataSegs {
		return nil, malformed("data count section says %d segments, data section has %d", info.dataCount, dataSegs)
	}
	return info, nil
}

// count reads a vector's length, checks it against a limit and against
// the bytes left (every item takes at least one byte).
func (r *wreader) count(max uint32, what, limit string) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if n > max {
		return 0, overLimit(fmt.Sprintf("%d %s", n, what), limit, uint64(max))
	}
	if uint64(n) > uint64(len(r.b)-r.pos) {
		return 0, fmt.Errorf("%d %s declared in %d bytes", n, what, len(r.b)-r.pos)
	}
	return n, nil
}

// limits reads a table or memory's limits (no shared or 64-bit forms).
func (r *wreader) limits() (min, max uint32, hasMax bool, err error) {
	flag, err := r.byte()
	if err != nil {
		return 0, 0, false, err
	}
	if flag > 1 {
		return 0, 0, false, fmt.Errorf("limits flag 0x%02x (shared or 64-bit memories are not supported)", flag)
	}
	if min, err = r.u32(); err != nil {
		return 0, 0, false, err
	}
	if flag == 1 {
		if max, err = r.u32(); err != nil {
			return 0, 0, false, err
		}
		if max < min {
			return 0, 0, false, fmt.Errorf("maximum %d under minimum %d", max, min)
		}
	}
	return min, max, flag == 1, nil
}

func (info *moduleInfo) readTypes(r *wreader, lim *Limits) error {
	n, err := r.count(lim.MaxTypes, "function types", "max_types")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		form, err := r.byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return fmt.Errorf("type %d has form 0x%02x (only function types are supported)", i, form)
		}
		empty := true
		for j := range 2 { // parameters, results
			k, err := r.u32()
			if err != nil {
				return err
			}
			empty = empty && k == 0
			if uint64(k) > uint64(len(r.b)-r.pos) {
				return fmt.Errorf("type %d: %d value types declared in %d bytes", i, k, len(r.b)-r.pos)
			}
			from := r.pos
			for range k {
				if t, _ := r.byte(); !isValType(t) {
					return fmt.Errorf("type %d: unknown value type 0x%02x", i, t)
				}
			}
			if j == 0 {
				info.typeParams = append(info.typeParams, k)
				info.paramTypes = append(info.paramTypes, r.b[from:r.pos])
			} else {
				info.resultTypes = append(info.resultTypes, r.b[from:r.pos])
				info.typeResults = append(info.typeResults, k)
			}
		}
		if empty {
			info.emptyTypes[i] = true
		}
	}
	info.numTypes = n
	return nil
}

func (info *moduleInfo) readImports(r *wreader, lim *Limits) error {
	n, err := r.count(lim.MaxImports, "imports", "max_imports")
	if err != nil {
		return err
	}
	for range n {
		mod, err := r.name()
		if err != nil {
			return err
		}
		field, err := r.name()
		if err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		if mod == InterruptModule && info.ownImport == "" {
			info.ownImport = mod + "." + field // Prepare refuses it
		}
		switch kind {
		case 0: // function
			t, err := r.u32()
			if err != nil {
				return err
			}
			if t >= info.numTypes {
				return fmt.Errorf("import %s.%s has type %d; the module has %d types", mod, field, t, info.numTypes)
			}
			info.importedFuncs++
			info.funcTypes = append(info.funcTypes, t)
			if info.importedFuncs > lim.MaxFunctions {
				return overLimit(fmt.Sprintf("%d or more functions", info.importedFuncs), "max_functions", uint64(lim.MaxFunctions))
			}
		case 1: // table
			return &Error{BadImport: true, Message: fmt.Sprintf(
				"module imports table %s.%s, which Stint does not provide; a task must define its own tables", mod, field)}
		case 2: // memory: checkImports refuses it with its own message, after compiling
			if _, _, _, err := r.limits(); err != nil {
				return err
			}
		case 3: // global
			return &Error{BadImport: true, Message: fmt.Sprintf(
				"module imports global %s.%s, which Stint does not provide", mod, field)}
		default:
			return fmt.Errorf("import %s.%s of unknown kind 0x%02x", mod, field, kind)
		}
	}
	return nil
}

func (info *moduleInfo) readTables(r *wreader, lim *Limits) error {
	n, err := r.count(lim.MaxTables, "tables", "max_tables")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		t, err := r.byte()
		if err != nil {
			return err
		}
		if !isRefType(t) {
			return fmt.Errorf("table %d of unknown type 0x%02x", i, t)
		}
		min, max, hasMax, err := r.limits()
		if err != nil {
			return fmt.Errorf("table %d: %w", i, err)
		}
		if min > lim.MaxTableSize {
			return overLimit(fmt.Sprintf("table %d declares a minimum of %d entries", i, min), "max_table_size", uint64(lim.MaxTableSize))
		}
		info.tables = append(info.tables, tableDef{refType: t, min: min, max: max, hasMax: hasMax})
	}
	return nil
}

func (info *moduleInfo) readExports(r *wreader, lim *Limits) error {
	n, err := r.count(lim.MaxExports, "exports", "max_exports")
	if err != nil {
		return err
	}
	for range n {
		name, err := r.name()
		if err != nil {
			return err
		}
		if info.exports[name] {
			return fmt.Errorf("export %q appears twice", name)
		}
		info.exports[name] = true
		kind, err := r.byte()
		if err != nil {
			return err
		}
		idx, err := r.u32()
		if err != nil {
			return err
		}
		switch kind {
		case 0:
			if idx >= info.funcs() {
				return fmt.Errorf("export %q names function %d; the module has %d functions", name, idx, info.funcs())
			}
		case 1, 2:
		case 3:
			if idx >= info.globals {
				return fmt.Errorf("export %q names global %d; the module has %d globals", name, idx, info.globals)
			}
		default:
			return fmt.Errorf("export %q of unknown kind 0x%02x", name, kind)
		}
	}
	return nil
}

func (info *moduleInfo) readElements(r *wreader, lim *Limits) error {
	n, err := r.count(lim.MaxElementSegments, "element segments", "max_element_segments")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		flag, err := r.u32()
		if err != nil {
			return err
		}
		if flag > 7 {
			return fmt.Errorf("element segment %d has flags %d", i, flag)
		}
		if flag&2 != 0 && flag&1 == 0 { // active with a table index
			if _, err := r.u32(); err != nil {
				return err
			}
		}
		if flag&1 == 0 { // active: an offset
			if _, err := r.constExpr(info.globals, info.funcs(), info.importedFuncs, nil); err != nil {
				return fmt.Errorf("element segment %d offset: %w", i, err)
			}
		}
		if flag&3 != 0 { // an element kind (flags 1-3) or a reference type (5-7)
			k, err := r.byte()
			if err != nil {
				return err
			}
			if (flag&4 == 0 && k != 0) || (flag&4 != 0 && !isRefType(k)) {
				return fmt.Errorf("element segment %d has element type 0x%02x", i, k)
			}
		}
		items, err := r.u32()
		if err != nil {
			return err
		}
		if uint64(items) > uint64(len(r.b)-r.pos) {
			return fmt.Errorf("element segment %d: %d items declared in %d bytes", i, items, len(r.b)-r.pos)
		}
		if info.elemItems += uint64(items); info.elemItems > uint64(lim.MaxElementItems) {
			return overLimit(fmt.Sprintf("%d or more element items", info.elemItems), "max_element_items", uint64(lim.MaxElementItems))
		}
		for range items {
			if flag&4 == 0 {
				var f uint32
				if f, err = r.u32(); err == nil && f >= info.funcs() { // a function index
					err = fmt.Errorf("function %d does not exist", f)
				}
				if err == nil && len(info.tabled) < 1<<20 {
					info.tabled = append(info.tabled, f)
				} else {
					info.anyRef = true // too many to list: any function may be in a table
				}
			} else {
				info.anyRef = true
				_, err = r.constExpr(info.globals, info.funcs(), info.importedFuncs, nil)
			}
			if err != nil {
				return fmt.Errorf("element segment %d: %w", i, err)
			}
		}
	}
	return nil
}

func (info *moduleInfo) readData(r *wreader, lim *Limits) (uint32, error) {
	n, err := r.count(lim.MaxDataSegments, "data segments", "max_data_segments")
	if err != nil {
		return 0, err
	}
	for i := uint32(0); i < n; i++ {
		flag, err := r.u32()
		if err != nil {
			return 0, err
		}
		switch flag {
		case 0:
		case 1:
		case 2:
			mem, err := r.u32()
			if err != nil {
				return 0, err
			}
			if mem != 0 {
				return 0, fmt.Errorf("data segment %d is for memory %d", i, mem)
			}
		default:
			return 0, fmt.Errorf("data segment %d has flags %d", i, flag)
		}
		if flag != 1 {
			if _, err := r.constExpr(info.globals, info.funcs(), info.importedFuncs, nil); err != nil {
				return 0, fmt.Errorf("data segment %d offset: %w", i, err)
			}
		}
		size, err := r.u32()
		if err != nil {
			return 0, err
		}
		if _, err := r.bytes(uint64(size)); err != nil {
			return 0, fmt.Errorf("data segment %d of %d bytes runs past the section", i, size)
		}
	}
	return n, nil
}

// checkCode decodes every function body and checks it against lim.
func (info *moduleInfo) checkCode(r *wreader, lim *Limits) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if n != info.definedFuncs {
		return 0, fmt.Errorf("%d bodies for %d functions", n, info.definedFuncs)
	}
	var scan bodyScan
	var loops uint64
	// What setCalls needs of each defined function.
	uncounted := make([]int64, 0, n)
	pure := make([]bool, 0, n)
	tested := make([]bool, 0, n)
	for i := uint32(0); i < n; i++ {
		fn := info.importedFuncs + i
		size, err := r.u32()
		if err != nil {
			return 0, err
		}
		if size > lim.MaxFunctionSize {
			return 0, overLimit(fmt.Sprintf("function %d has a body of %d bytes", fn, size), "max_function_size", uint64(lim.MaxFunctionSize))
		}
		body, err := r.bytes(uint64(size))
		if err != nil {
			return 0, fmt.Errorf("function %d: body of %d bytes runs past the section", fn, size)
		}
		if scan, err = scanBody(body, info.bodyEnv(lim, fn, false), scan); err != nil {
			return 0, err
		}
		code := len(body) - scan.codeStart
		uncounted = append(uncounted, uncountedWork(&scan, code))
		pure = append(pure, pureLeaf(&scan, code))
		tested = append(tested, (scan.calls && scan.sinkStart == 0) || code > bigBody)
		info.anyRef = info.anyRef || scan.refFunc
		info.bulk = info.bulk || scan.bulk
		if loops += uint64(scan.loopCount); loops > uint64(lim.MaxModuleLoops) {
			return 0, overLimit(fmt.Sprintf("%d loops in the module's first %d functions", loops, i+1), "max_module_loops", uint64(lim.MaxModuleLoops))
		}
	}
	info.setCalls(uncounted, pure, tested)
	return n, nil
}

// setCalls fills what the rewrite needs to know of the functions a call
// calls (bodyEnv.callees, indirect, pure, indirectPure, tested) from what
// checkCode found of each defined function: an imported function's call
// counts as a host call where it is made (weight), through a table as
// the most a host call weighs; an imported function is neither pure nor
// tested.
func (info *moduleInfo) setCalls(uncounted []int64, pure, tested []bool) {
	info.uncounted = make([]int64, info.funcs())
	copy(info.uncounted[info.importedFuncs:], uncounted)
	// Through a table, a call may reach the functions the element
	// segments name (or any, after a ref.func elsewhere): counting every
	// function of the call's type, qsort's comparator calls were charged
	// as the host call a libc function of the same type makes, 8x their
	// work, and the interrupt calls cost 12% of the run.
	info.indirect = make([]int64, info.numTypes)
	reach := func(f uint32) {
		u := info.uncounted[f]
		if f < info.importedFuncs {
			u = HostCallWeight
		}
		t := info.funcTypes[f]
		info.indirect[t] = max(info.indirect[t], u)
	}
	if info.anyRef {
		for f := range info.funcs() {
			reach(f)
		}
	} else {
		for _, f := range info.tabled {
			reach(f)
		}
	}
	// Which calls need not sync the countdown: those of pure leaves, and
	// through a table those of a type whose every function that may be
	// in a table is one.
	info.pure = make([]bool, info.funcs())
	copy(info.pure[info.importedFuncs:], pure)
	info.indirectPure = make([]bool, info.numTypes)
	for t := range info.indirectPure {
		info.indirectPure[t] = !info.anyRef
	}
	for _, f := range info.tabled {
		if !info.pure[f] {
			info.indirectPure[info.funcTypes[f]] = false
		}
	}
	info.tabled = nil
	info.tested = make([]bool, info.funcs())
	copy(info.tested[info.importedFuncs:], tested)
}

// validNameSection reports whether a name section's payload (after its
// name) is well formed: subsections that fill it exactly, each of the
// three wazero reads (module, function and local names) made of exactly
// what it declares.
func validNameSection(p []byte) bool {
	r := wreader{b: p}
	for !r.eof() {
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return false
		}
		sub, err := r.bytes(uint64(size))
		if err != nil {
			return false
		}
		sr := wreader{b: sub}
		switch id {
		case 0:
			_, err = sr.name()
		case 1:
			err = sr.nameMap()
		case 2:
			var n uint32
			if n, err = sr.u32(); err == nil && uint64(n) > uint64(len(sub)) {
				return false
			}
			for i := uint32(0); i < n && err == nil; i++ {
				if _, err = sr.u32(); err == nil {
					err = sr.nameMap()
				}
			}
		default:
			continue
		}
		if err != nil || !sr.eof() {
			return false
		}
	}
	return true
}

// nameMap reads a vector of (index, name).
func (r *wreader) nameMap() error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	if uint64(n) > uint64(len(r.b)-r.pos) {
		return errEOF
	}
	for range n {
		if _, err := r.u32(); err != nil {
			return err
		}
		if _, err := r.name(); err != nil {
			return err
		}
	}
	return nil
}

// appendSection appends a section with its header.
func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	return append(out, payload...)
}

// appendName appends a length-prefixed name.
func appendName(out []byte, s string) []byte {
	out = binary.AppendUvarint(out, uint64(len(s)))
	return append(out, s...)
}

// weight is what a check guarding code bytes of code, with calls call
// instructions (hostCalls of them to imported functions), subtracts from
// the budget per pass. A call counts CallWeight: the callee's own checks
// count what it does only if it calls or loops long enough, so a loop
// around cheap calls must count them. A call to the host counts
// HostCallWeight more: it costs 50-250 ns (wazero's trampoline into Go),
// and counted as a wasm call, a loop around one (stop_ignore) called out
// every ~100 µs, and was stopped 2-3x later than in wazero mode.
func weight(code int, calls, hostCalls uint32, extra int64) int64 {
	w := 1 + int64(code/4) + int64(calls)*CallWeight + int64(hostCalls)*HostCallWeight + extra
	return min(w, maxWeight)
}

// maxWeight bounds one charge, so that no sum of the charges a body can
// make between two tests overflows the i64 countdown: 2^40 units (about
// 18 minutes of the tightest code), far above any real charge.
const maxWeight = 1 << 40

// CallWeight is what a call in a loop counts, HostCallWeight what a call
// to the host counts on top (see weight).
const CallWeight, HostCallWeight = 32, 224

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
		newImports = appendName(appendName(newImports, InterruptModule), name)
		newImports = append(newImports, 0)
		newImports = binary.AppendUvarint(newImports, uint64(info.numTypes+uint32(1-i))) // interrupt: (i64) -> ()
	}
	newGlobals := []byte{typeI64, 1, opI64Const}
	newGlobals = appendSleb64(newGlobals, InterruptBudget)
	newGlobals = append(newGlobals, opEnd, typeI64, 1, opI64Const)
	newGlobals = appendSleb64(newGlobals, int64(lim.MaxCallStack))
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
				out = appendSection(out, m.id, m.payload)
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
			r := wreader{b: payload}
			name, _ := r.name()
			switch {
			case name == rewriteSection, strings.HasPrefix(name, ".debug_"):
				continue
			case name == "name":
				out = appendSection(out, secCustom, w.names(payload, r.pos))
			default:
				out = append(out, wasm[s.Header:s.End]...)
			}
		case secType:
			missing[0].done = true
			out = appendSection(out, secType, appendToVector(payload, nNewTypes, newTypes))
		case secImport:
			out = appendSection(out, secImport, appendToVector(payload, addedFuncs, newImports))
		case secTable:
			out = appendSection(out, secTable, capTables(info.tables, lim.MaxTableSize))
		case secGlobal:
			var p []byte
			if p, err = w.globals(payload); err == nil {
				out = appendSection(out, secGlobal, append(p, newGlobals...))
			}
		case secExport:
			out = appendSection(out, secExport, w.exports(payload))
		case secStart:
			out = appendSection(out, secStart, binary.AppendUvarint(nil, uint64(w.shift(info.start))))
		case secElement:
			var p []byte
			if p, err = w.elements(payload); err == nil {
				out = appendSection(out, secElement, p)
			}
		case secFunction:
			out = appendSection(out, secFunction, appendToVector(payload, nHelpers, helperFuncs))
		case secCode:
			var p []byte
			if p, err = w.code(payload, nHelpers, helperBodies); err == nil {
				out = appendSection(out, secCode, p)
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
	out = appendSection(out, secCustom, append(appendName(nil, rewriteSection),
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
	r := wreader{b: payload}
	k, _ := r.u32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+len(items)+5), uint64(k)+uint64(n))
	out = append(out, payload[r.pos:]...)
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
	r := wreader{b: payload}
	n, _ := r.u32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+16), uint64(n)+AddedGlobals)
	for i := uint32(0); i < n; i++ {
		t, _ := r.bytes(2) // type, mutability
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
	r := wreader{b: payload}
	n, _ := r.u32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+8), uint64(n))
	for range n {
		from := r.pos
		_, _ = r.name()
		kind, _ := r.byte()
		at := r.pos
		idx, _ := r.u32()
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
	r := wreader{b: payload}
	n, _ := r.u32()
	out := binary.AppendUvarint(make([]byte, 0, len(payload)+16), uint64(n))
	for range n {
		from := r.pos
		flag, _ := r.u32()
		if flag&2 != 0 && flag&1 == 0 {
			_, _ = r.u32()
		}
		var err error
		if flag&1 == 0 {
			out = append(out, payload[from:r.pos]...)
			if out, err = r.constExpr(info.globals, info.funcs(), info.importedFuncs, out); err != nil {
				return nil, err
			}
			from = r.pos
		}
		if flag&3 != 0 {
			_, _ = r.byte()
		}
		items, _ := r.u32()
		out = append(out, payload[from:r.pos]...)
		for range items {
			if flag&4 == 0 {
				f, err := r.u32()
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

// names re-encodes a name section (payload: the whole custom section,
// its name ending at nameEnd), function indices renumbered in the
// function and local names.
func (w *rewriter) names(payload []byte, nameEnd int) []byte {
	out := append(make([]byte, 0, len(payload)+16), payload[:nameEnd]...)
	r := wreader{b: payload, pos: nameEnd}
	for !r.eof() {
		id, _ := r.byte()
		size, _ := r.u32()
		sub, _ := r.bytes(uint64(size))
		if id != 1 && id != 2 {
			out = append(out, id)
			out = binary.AppendUvarint(out, uint64(size))
			out = append(out, sub...)
			continue
		}
		sr := wreader{b: sub}
		n, _ := sr.u32()
		p := binary.AppendUvarint(make([]byte, 0, len(sub)+8), uint64(n))
		for range n {
			f, _ := sr.u32()
			p = binary.AppendUvarint(p, uint64(w.shift(f)))
			from := sr.pos
			if id == 1 {
				_, _ = sr.name()
			} else {
				k, _ := sr.u32()
				for range k {
					_, _ = sr.u32()
					_, _ = sr.name()
				}
			}
			p = append(p, sub[from:sr.pos]...)
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	return out
}

// code rewrites the code section: the renumbered functions, the entry
// checks and, with loopChecks, the wrapped loops; then the nAdded bodies
// of added (the bulk operations' functions, bulkHelpers).
func (w *rewriter) code(payload []byte, nAdded uint32, added []byte) ([]byte, error) {
	info := w.info
	r := wreader{b: payload}
	n, _ := r.u32()
	out := make([]byte, 0, len(payload)+len(payload)/4+int(n)*32+len(added))
	out = binary.AppendUvarint(out, uint64(n+nAdded))
	var scan bodyScan
	var body []byte
	for i := uint32(0); i < n; i++ {
		fn := info.importedFuncs + i
		size, _ := r.u32()
		old, _ := r.bytes(uint64(size))
		var err error
		if scan, err = scanBody(old, info.bodyEnv(w.lim, fn, w.loopChecks), scan); err != nil {
			return nil, err
		}
		body = w.body(body[:0], old, &scan, info.funcTypes[fn])
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return append(out, added...), nil
}

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
	out = appendSleb64(out, InterruptBudget+again)
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
	r := wreader{b: old}
	n, _ := r.u32()
	var end uint32
	for range n {
		k, _ := r.u32()
		t, _ := r.byte()
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
	out = appendSleb64(out, w)
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
	out = appendSleb64(out, w)
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
// (docs/benchmarks.md, section 4).
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
		out = appendSleb64(out, c.v)
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
	out = appendSleb64(out, wc)
	out = append(out, 0x7d, opLocalTee) // i64.sub
	out = append(out, w.counter...)
	if limited {
		out = append(out, opGlobalGet)
		out = append(out, st...)
		out = append(out, opI64Const)
		out = appendSleb64(out, wf)
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
// not counted (the work counter, interrupt.go).
func (w *rewriter) entrySlowPath(out []byte) []byte {
	cd := binary.AppendUvarint(nil, uint64(w.countdown))
	out = append(out, opGlobalGet)
	out = append(out, cd...)
	out = append(out, opI64Const)
	out = appendSleb64(out, InterruptBudget)
	out = append(out, opGlobalSet)
	out = append(out, cd...)
	out = append(out, opCall)
	return binary.AppendUvarint(out, uint64(w.interrupt))
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
	out = appendSleb64(out, weight)
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

// bulkChunk is the largest piece of a memory.copy or memory.fill done
// between two calls of the interrupt function: about 50-100 µs of
// memmove.
const bulkChunk = 1 << 20

// bulkSmall is the size below which fill and copy do the operation at
// once, without charging it.
const bulkSmall = 256

// Bulk operations (memory.init, memory.copy, memory.fill, table.init,
// table.copy, table.grow, table.fill) take time in proportion to their
// size n, not their code: a loop filling 64 MiB a pass, weighing a few
// units, outlived a 1 s attempt timeout by 29 s in InterruptChecks mode.
// The rewrite adds functions they call instead (bulkHelpers), so that a
// site grows by a call, not by the code below (inlined at every site, a
// body of 100,000 memory.fill grew 12x and wazero took 3.4 GB to compile
// it):
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
//     piece overwrites source not yet copied. One fill of 32 MiB held a
//     guest for 3 ms past its stop; a piece, 0.1 ms.
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

// unrollCopiesOf appends, for an unrolled loop l (in its wrapper, after
// its check), UnrollCopies-1 copies of its body, each in a block: `block
// BODY br 4 end`. Each copy's block stands where the loop's label stood,
// so a branch in it to the loop's label (br, br_if, br_table, at any
// depth) goes on to the next copy, unchanged; falling off the body's end
// leaves the loop, by br 4 to the wrapper's done block (the copy's
// block, the inner loop, slow, retry, done). The body's last copy, the
// original's bytes, follows as for any loop, its branches to the label
// going back to the check. The copies hold no loop: a branch in them
// targets a block in the body (unchanged), the loop, or leaves the loop,
// and its edit (edits: those after the loop's own) then gets one more
// label, the copy's block. (For `loop BODY COND br_if 0 end`, `COND;
// i32.eqz; br_if 3` in place of the block made the one-add loop 1.6x
// slower: wazero does not fuse i32.eqz of a comparison with the
// branch.)
func (w *rewriter) unrollCopiesOf(out, old []byte, l loopSite, edits []bodyEdit, release []byte) []byte {
	end := l.end - 1 // the loop's end opcode
	n := 0
	for n < len(edits) && edits[n].pos < end {
		n++
	}
	for range UnrollCopies - 1 {
		from := l.btEnd
		out = append(out, opBlock, 0x40)
		for _, e := range edits[:n] {
			out = append(out, old[from:e.pos]...)
			from = e.end
			out = w.simpleEdit(out, e, release, 1)
		}
		out = append(out, old[from:end]...)
		out = append(out, 0x0c, 4, opEnd) // br
	}
	return out
}

// bigBody is the largest code (bytes) a function that calls nothing may
// have without an entry countdown. Such a function cannot recurse, and
// within it loops have their own checks; its callers are charged its
// whole weight at each call (uncountedWork, rewrite version 21). A larger
// one has its own countdown (version 18: before it, a loop calling a 1.6
// MB straight-line function was charged 32 units a call and called out
// to Go every ~70 ms), so that no single charge of a caller grows with
// the size of the functions it calls. 2 KiB: the countdown, a
// read-modify-write of a global, costs under 1% of running such a body.
const bigBody = 2048

// callingArm appends the code of a body whose calls all lie in one arm
// of an if (bodyScan.sinkStart; its locals are out already): the entry
// checks at the start of that arm, not of the function, and the arm in
// `block bt ... end` (bt: the if's) followed by the frame's release. A
// branch in the arm to the if's label now names that block, at the same
// depth, and reaches the release; no branch in the arm goes further out
// (the scan's condition); a return in it releases first, one elsewhere
// does not. A path that takes the other arm calls nothing, so it cannot
// deepen the stack, and its work, bounded by the body's size, is charged
// by its callers (uncountedWork): the leaves of a recursion (half its
// calls, in a binary tree) pay for no check (docs/benchmarks.md, section
// 4).
func (w *rewriter) callingArm(out, old []byte, scan *bodyScan, frame int64, release []byte) []byte {
	e := 0
	copyTo := func(out []byte, from, to int, release []byte) []byte {
		for ; e < len(scan.edits) && scan.edits[e].pos < to; e++ {
			out = append(out, old[from:scan.edits[e].pos]...)
			from = scan.edits[e].end
			out = w.simpleEdit(out, scan.edits[e], release, 0)
		}
		return append(out, old[from:to]...)
	}
	out = copyTo(out, scan.codeStart, scan.sinkStart, nil)
	out = w.entryChecks(out, weight(len(old)-scan.codeStart, 0, 0, scan.callExtra), frame)
	out = append(out, opBlock)
	out = append(out, scan.sinkBT...)
	out = copyTo(out, scan.sinkStart, scan.sinkEnd, release)
	out = append(out, opEnd)
	out = append(out, release...)
	return copyTo(out, scan.sinkEnd, len(old), nil)
}

// body appends the rewrite of one body of function type typ to out.
func (w *rewriter) body(out, old []byte, scan *bodyScan, typ uint32) []byte {
	params := w.info.paramTypes[typ]
	wrap := w.loopChecks && len(scan.loops) > 0
	counter := uint32(len(params)) + scan.locals // the added local, when wrap
	w.localTypes(old, params)
	limited := scan.calls && CallStackLimit
	var frame int64
	var release []byte // what a return runs first (simpleEdit)
	w.counter = nil
	if wrap {
		w.counter = binary.AppendUvarint(nil, uint64(counter))
	}
	if limited {
		frame = w.frameWeight(scan.maxHeight, len(old)-scan.codeStart)
		release = w.stackRelease(nil, frame)
	}
	// Locals: the declared groups, then the counter's.
	if wrap {
		r := wreader{b: old}
		_, _ = r.u32()
		out = binary.AppendUvarint(out, uint64(scan.groups)+1)
		out = append(out, old[r.pos:scan.codeStart]...)
		out = append(out, 1, typeI64)
	} else {
		out = append(out, old[:scan.codeStart]...)
	}
	if limited && !wrap && scan.sinkStart != 0 {
		return w.callingArm(out, old, scan, frame, release)
	}
	entry := weight(len(old)-scan.codeStart, 0, 0, scan.callExtra)
	cached := wrap && (limited || scan.calls || len(old)-scan.codeStart > bigBody)
	if cached {
		// The countdown goes to its cache at once: no write and read
		// again of the global.
		out = w.entryChecksCached(out, entry, frame, limited)
	} else if limited {
		out = w.entryChecks(out, entry, frame)
	} else if scan.calls || len(old)-scan.codeStart > bigBody {
		// The entry countdown alone: in a function that calls nothing
		// but is large (bigBody), or that calls when benchmarks turn the
		// call-stack limit off.
		out = w.takeFromCountdown(out, appendSleb64([]byte{opI64Const}, entry))
	}
	c := w.counter
	if wrap {
		release = w.writeBack(release)
	}
	if release != nil {
		// The call-stack limit and the work flush: after the entry
		// check, the body in a block that yields the function's
		// results, so that every way out but a return (the end, a
		// branch to the function's label) reaches the release after
		// it; a return releases first.
		out = append(out, opBlock)
		out = append(out, w.blockTypes[typ]...)
	}
	if wrap && !cached {
		out = w.reload(out)
	}
	from := scan.codeStart
	for i, e := range scan.edits {
		out = append(out, old[from:e.pos]...)
		from = e.end
		switch e.kind {
		case editFunc, editLabel, editReturn, editBulk, editSync:
			out = w.simpleEdit(out, e, release, 0)
		case editCharge:
			out = chargeLocal(out, c, scan.chargeW[e.value])
		case editLoop:
			l := scan.loops[e.value]
			bt := old[l.btStart:l.btEnd]
			if l.inline {
				// A loop with parameters: the check inside it.
				out = append(out, opLoop)
				out = append(out, bt...)
				if l.callTested {
					out = loopCharge(out, c, l)
					break
				}
				out = loopCheck(out, c, l)
				out = append(out, opIf, 0x40)
				out = w.slowPath(out, c, w.loopSets(scan, int(e.value)), 0)
				out = append(out, opEnd)
				break
			}
			// block bt (done), loop bt (retry), block (slow), loop bt:
			// the original, whose first instruction is the check.
			out = append(out, opBlock)
			out = append(out, bt...)
			out = append(out, opLoop)
			out = append(out, bt...)
			out = append(out, opBlock, 0x40, opLoop)
			out = append(out, bt...)
			if l.callTested {
				out = loopCharge(out, c, l) // the slow path is never taken
			} else {
				out = loopCheck(out, c, l)
				out = append(out, opBrIf, 1) // to the end of slow
			}
			if l.unroll {
				out = w.unrollCopiesOf(out, old, l, scan.edits[i+1:], release)
			}
		case editLoopEnd:
			if l := scan.loops[e.value]; !l.inline {
				// After the original loop: leave with its results; the
				// slow path, then retry.
				out = append(out, 0x0c, 2, opEnd) // br done, end slow
				out = w.slowPath(out, c, w.loopSets(scan, int(e.value)), checkWeight(l))
				out = append(out, 0x0c, 0, opEnd, opEnd) // br retry, end retry, end done
			}
		}
	}
	if release == nil {
		return append(out, old[from:]...)
	}
	out = append(out, old[from:len(old)-1]...) // up to the function's end
	out = append(out, opEnd)                   // the block's
	out = append(out, release...)
	return append(out, opEnd)
}
