package rewrite

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

const (
	// Version numbers what Prepare produces. Bump it on any
	// change to the rewrite's output (see the package documentation).
	Version = 24
	// rewriteSection is the custom section that carries Version.
	rewriteSection = "stint.rewrite"
	// InterruptModule and InterruptFunc name the host function the checks
	// call (the sandbox's interrupt.go).
	InterruptModule = "stint:sandbox"
	InterruptFunc   = "interrupt"
	// CallStackFunc names the host function the call-stack limit calls
	// when a call would go over it (the sandbox's callstack.go).
	CallStackFunc = "call_stack"
	// addedFuncs and AddedGlobals count the imports and globals the
	// rewrite appends.
	addedFuncs, AddedGlobals = 2, 2
	// frameBytes, frameSlotBytes and frameCodeBytes estimate a call's
	// frame on wazero's stack for the call-stack limit: frameBytes, plus
	// frameSlotBytes per parameter, local and operand stack value, plus
	// a byte per frameCodeBytes of code (wazero gives each value it
	// spills its own slot: code built for register pressure makes large
	// frames). See sandbox.ModuleLimits.MaxCallStack.
	frameBytes, frameSlotBytes, frameCodeBytes = 64, 16, 2
	// InterruptBudget is the work between two calls of the interrupt
	// function, in units of about a nanosecond of the tightest code: a
	// check weighs 1 + (the bytes of the code it guards) / 4. How often
	// that calls out, and what a call costs: docs/design/stop-checks.md, "The
	// interrupt budget".
	// 1<<17 since version 23 (1<<15 before): the rules that keep every
	// path within the bound (heavy, exitChainLimit) scale with it, and at
	// 1<<15 they cost the interpreters most of the checks' price
	// (docs/rewrite.md, The budget).
	InterruptBudget = 1 << 17
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
	// (bodyEnv.callees; see the package documentation, The bound); indirect the most of
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
	// resumable: the module imports resume.ImportModule (it was made
	// resumable: only the sandbox's transform may import it); point is
	// the global its points read (resume.ExportPoint), when hasPoint.
	resumable, hasPoint bool
	point               uint32
	elemItems           uint64 // items of the element segments read so far (max_element_items)
	codeSec             int    // index in secs, -1 if none
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
	return scan.callCount == 0 && scan.loopCount == 0 && !scan.bulk && code <= bigBody && !heavy(scan, code)
}

// heavy reports whether a function whose body scan found (code: its bytes
// of code) weighs more than BigWeight outside its loops, or has a loop
// heavier than SplitWeight, and so is split (bodyEnv.split).
// In the validation pass, which does not know what calls add yet, it is
// exact for a function that calls none of the module's.
func heavy(scan *bodyScan, code int) bool {
	if mutate == "no-split" {
		return false
	}
	if scan.loopCount > 0 && !scan.split {
		// Loops test their own passes: what must stay under BigWeight is
		// the code outside them (charged at the entry, run between the
		// entry's test and the first loop's, or after the last), and what
		// one pass weighs under SplitWeight.
		all := weight(code, scan.callCount, scan.hostCallCount, scan.callExtra)
		return all-scan.loopsW > BigWeight || scan.loopMax > SplitWeight
	}
	return weight(code, scan.callCount, scan.hostCallCount, scan.callExtra) > BigWeight
}

// uncountedWork is what a call of a function whose body scan found
// (code: its bytes of code) does that no check of its own counts: a
// function with no entry countdown (it calls no function of the module
// and is at most bigBody) is counted whole by its callers; one whose
// checks sit in its calling arm counts nothing on a path through its
// other arm, at most its whole body.
func uncountedWork(scan *bodyScan, code int) int64 {
	switch {
	case mutate == "leaf-uncharged":
		return 0
	case !scan.calls && code <= bigBody && !heavy(scan, code):
		return weight(code, scan.callCount, scan.hostCallCount, scan.callExtra)
	case scan.calls && scan.sinkStart != 0 && scan.loopCount == 0:
		return weight(code, scan.callCount, scan.hostCallCount, scan.callExtra)
	}
	return 0
}

// mutate breaks one of the rewrite's optimisations on purpose, for the
// verifier's mutation tests (verified_internal_test.go): "" in use.
var mutate string

// SetMutation sets what the rewrite breaks on purpose (mutate; "" for
// nothing), for the sandbox's benchmarks that measure what one part of
// the checks costs: the output of a mutated rewrite does not verify and
// must never run outside them. Not safe to call while a rewrite runs.
func SetMutation(m string) { mutate = m }

// testsAtEntry reports whether a function whose body scan found (code:
// its bytes of code) tests the countdown at its entry, on every path,
// before any control instruction: it calls (with the call-stack limit, so
// it has entry checks) and has no calling arm, or it is large (its entry
// countdown; a large function never gets a calling arm). It must agree
// with body(): a caller's loop leaves its own test to such a callee.
func testsAtEntry(scan *bodyScan, code int) bool {
	switch mutate {
	case "callee-tested":
		return true
	case "arm-over-tested":
		return (scan.calls && scan.sinkStart == 0) || code > bigBody
	}
	if code > bigBody || heavy(scan, code) {
		return true
	}
	return scan.calls && scan.sinkStart == 0 && CallStackLimit
}

// signature is type t's parameters and results as a key: a call_indirect
// reaches a function of any type with the same (wazero compares types by
// structure).
func (info *moduleInfo) signature(t uint32) string {
	return string(info.paramTypes[t]) + "/" + string(info.resultTypes[t])
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
