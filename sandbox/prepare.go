package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Module preparation: one pass over a module's bytes, before wazero sees
// them, that validates and rewrites.
//
// Validation. Every section is decoded in full (every vector's count
// checked against the bytes that hold it, every function body decoded
// instruction by instruction, see wasmcode.go), and the module is held to
// Config.ModuleLimits. wazero's own decoder allocates from counts before
// reading them (a 6-byte length can make it allocate 4 GiB), and its
// compiler takes quadratic time on some shapes and cannot be cancelled;
// nothing reaches it unchecked.
//
// Rewriting, so that every guest can be stopped (issue 9):
//
//   - One mutable i32 global is appended after all the module's globals,
//     initialised to 0, and exported under a name Stint owns
//     (stopExportName, or stopExportName.N if the module exports that
//     name). Appended last, it changes no other global's index; the
//     guest's code cannot name it, since every global.get/global.set and
//     constant expression is checked to name one of the original globals.
//     The host sets it to 1 when the run's hard context ends.
//   - At every function's entry, and in InterruptChecks mode at every
//     loop header (the first instruction inside each loop), the check
//     `global.get $stop; if; unreachable; end` is inserted. It leaves the
//     operand stack as it was, so it is valid anywhere. Each function's
//     body size is recomputed. No function, local or type is added, so the
//     name section stays valid; DWARF sections (.debug_*) name code offsets
//     that moved and are dropped.
//   - The start section, if any, is removed and its function exported
//     under startExportName (or startExportName.N): wazero would run it
//     inside InstantiateModule, before the host can set the global; Run
//     calls it explicitly, under the run's contexts.
//   - Tables get a maximum of at most ModuleLimits.MaxTableSize.
//   - A custom section rewriteSection carrying rewriteVersion is appended.
//     wazero's compilation cache is keyed by the module's bytes, so any
//     change to what this rewrite produces must change rewriteVersion:
//     the bytes then differ and modules cached under the old rewrite are
//     never reused.

const (
	// rewriteVersion numbers what prepareModule produces. Bump it on any
	// change to the rewrite (see above).
	rewriteVersion = 1
	// rewriteSection is the custom section that carries rewriteVersion.
	rewriteSection = "stint.rewrite"
	// stopExportName is the export of the stop global.
	stopExportName = "stint.stop"
	// startExportName is the export of the former start function.
	startExportName = "stint.start"
)

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// sectionRank orders the known sections as the binary format requires
// (DataCount sits between Element and Code); 0 for anything else.
var sectionRank = [13]int{secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secGlobal: 6, secExport: 7, secStart: 8, secElement: 9, secDataCount: 10, secCode: 11, secData: 12}

var sectionNames = [13]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count"}

// prepared is a module ready for wazero, and what Run needs to know of it.
type prepared struct {
	wasm []byte
	// stopExport names the exported stop global.
	stopExport string
	// startExport names the exported former start function; "" if the
	// module had no start section.
	startExport string
}

// tableDef is one table the module defines.
type tableDef struct {
	refType  byte
	min, max uint32
	hasMax   bool
}

// moduleInfo is what the validation pass learns.
type moduleInfo struct {
	secs            []section
	numTypes        uint32
	emptyTypes      map[uint32]bool // types with no parameters and no results
	funcTypes       []uint32        // each function's type, imported ones first
	importedFuncs   uint32
	definedFuncs    uint32
	importedGlobals uint32
	globals         uint32 // imported and defined
	tables          []tableDef
	exports         map[string]bool
	hasStart        bool
	start           uint32
	hasDataCount    bool
	dataCount       uint32
	codeSec         int // index in secs, -1 if none
}

// malformed is the error for bytes that are not a valid module.
func malformed(format string, args ...any) error {
	return &ModuleError{Kind: KindInvalidModule, Message: "malformed module: " + fmt.Sprintf(format, args...)}
}

// prepareModule validates wasm against lim and rewrites it as described
// above; loopChecks adds the check at every loop header too. The error is
// a *ModuleError.
func prepareModule(wasm []byte, lim *ModuleLimits, loopChecks bool) (*prepared, error) {
	if len(wasm) > lim.MaxModuleSize {
		return nil, overLimit(fmt.Sprintf("module of %d bytes", len(wasm)), "max_module_size", uint64(lim.MaxModuleSize))
	}
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], wasmMagic) {
		return nil, &ModuleError{Kind: KindInvalidModule, Message: "not a WebAssembly module (bad magic number)"}
	}
	if binary.LittleEndian.Uint32(wasm[4:8]) != 1 {
		return nil, &ModuleError{Kind: KindInvalidModule, Message: fmt.Sprintf(
			"WebAssembly binary version %d is not supported (only version 1)", binary.LittleEndian.Uint32(wasm[4:8]))}
	}
	info, err := validateModule(wasm, lim)
	if err != nil {
		return nil, err
	}
	return rewriteModule(wasm, info, lim, loopChecks)
}

// validateModule decodes every section of wasm and checks it against lim.
func validateModule(wasm []byte, lim *ModuleLimits) (*moduleInfo, error) {
	info := &moduleInfo{exports: map[string]bool{}, emptyTypes: map[uint32]bool{}, codeSec: -1}
	r := wreader{b: wasm, pos: 8}
	lastRank := 0
	seenName := false
	var funcCount, codeCount, dataSegs uint32
	var haveFuncSec, haveCodeSec bool
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
		s := section{id: id, start: r.pos - int(size), end: r.pos, header: header}
		if id == 13 {
			return nil, &ModuleError{Kind: KindInvalidModule, Message: "module has a tag section: exception handling is not among the WebAssembly features Stint runs"}
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
			err = info.readImports(&sr, lim)
		case secFunction:
			haveFuncSec = true
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
			for i := uint32(0); i < n && err == nil; i++ {
				_, _, _, err = sr.limits()
			}
		case secGlobal:
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
				if mut, err = sr.byte(); err == nil && mut > 1 {
					err = fmt.Errorf("global mutability 0x%02x", mut)
				}
				if err == nil {
					// A global's initialiser may read only the globals before it.
					err = sr.constExpr(info.importedGlobals + i)
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
				// Exported instead, it would become valid: refuse it as wazero would.
				err = fmt.Errorf("start function %d takes parameters or returns results", info.start)
			}
		case secElement:
			err = info.readElements(&sr, lim)
		case secDataCount:
			info.hasDataCount = true
			info.dataCount, err = sr.u32()
		case secCode:
			haveCodeSec = true
			info.codeSec = len(info.secs) - 1
			codeCount, err = info.checkCode(&sr, lim)
		case secData:
			dataSegs, err = info.readData(&sr, lim)
		}
		if err == nil && !sr.eof() {
			err = fmt.Errorf("%d bytes left over at its end", len(payload)-sr.pos)
		}
		if err != nil {
			var me *ModuleError
			if errors.As(err, &me) {
				return nil, err
			}
			return nil, malformed("section %s: %v", sectionNames[id], err)
		}
	}
	if haveFuncSec != haveCodeSec && (funcCount > 0 || codeCount > 0) || funcCount != codeCount {
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

func (info *moduleInfo) readTypes(r *wreader, lim *ModuleLimits) error {
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
		for range 2 { // parameters, results
			k, err := r.u32()
			if err != nil {
				return err
			}
			empty = empty && k == 0
			if uint64(k) > uint64(len(r.b)-r.pos) {
				return fmt.Errorf("type %d: %d value types declared in %d bytes", i, k, len(r.b)-r.pos)
			}
			for range k {
				if t, _ := r.byte(); !isValType(t) {
					return fmt.Errorf("type %d: unknown value type 0x%02x", i, t)
				}
			}
		}
		if empty {
			info.emptyTypes[i] = true
		}
	}
	info.numTypes = n
	return nil
}

func (info *moduleInfo) readImports(r *wreader, lim *ModuleLimits) error {
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
			return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf(
				"module imports table %s.%s, which Stint does not provide; a task must define its own tables", mod, field)}
		case 2: // memory: checkImports refuses it with its own message, after compiling
			if _, _, _, err := r.limits(); err != nil {
				return err
			}
		case 3: // global
			return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf(
				"module imports global %s.%s, which Stint does not provide", mod, field)}
		default:
			return fmt.Errorf("import %s.%s of unknown kind 0x%02x", mod, field, kind)
		}
	}
	return nil
}

func (info *moduleInfo) readTables(r *wreader, lim *ModuleLimits) error {
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

func (info *moduleInfo) readExports(r *wreader, lim *ModuleLimits) error {
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
		case 0, 1, 2:
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

func (info *moduleInfo) readElements(r *wreader, lim *ModuleLimits) error {
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
			if err := r.constExpr(info.globals); err != nil {
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
		for range items {
			if flag&4 == 0 {
				_, err = r.u32() // a function index
			} else {
				err = r.constExpr(info.globals)
			}
			if err != nil {
				return fmt.Errorf("element segment %d: %w", i, err)
			}
		}
	}
	return nil
}

func (info *moduleInfo) readData(r *wreader, lim *ModuleLimits) (uint32, error) {
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
			if err := r.constExpr(info.globals); err != nil {
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
func (info *moduleInfo) checkCode(r *wreader, lim *ModuleLimits) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if n != info.definedFuncs {
		return 0, fmt.Errorf("%d bodies for %d functions", n, info.definedFuncs)
	}
	var loops []int
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
		scan, err := scanBody(body, bodyEnv{lim: lim, numTypes: info.numTypes, globals: info.globals, fn: fn}, loops)
		if err != nil {
			return 0, err
		}
		loops = scan.loops
	}
	return n, nil
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

// ownedName returns base, or base.N for the smallest N from 1 that the
// module does not export.
func ownedName(exports map[string]bool, base string) string {
	name := base
	for n := 1; exports[name]; n++ {
		name = base + "." + strconv.Itoa(n)
	}
	return name
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

// rewriteModule builds the rewritten module from a validated one.
func rewriteModule(wasm []byte, info *moduleInfo, lim *ModuleLimits, loopChecks bool) (*prepared, error) {
	p := &prepared{}
	stopIndex := info.globals
	p.stopExport = ownedName(info.exports, stopExportName)
	taken := info.exports
	if info.hasStart {
		taken = map[string]bool{p.stopExport: true}
		for k := range info.exports {
			taken[k] = true
		}
		p.startExport = ownedName(taken, startExportName)
	}
	check := []byte{opGlobalGet}
	check = binary.AppendUvarint(check, uint64(stopIndex))
	check = append(check, opIf, 0x40, opUnreachable, opEnd)

	// The new global and export entries.
	newGlobal := []byte{typeI32, 1, opI32Const, 0, opEnd}
	newExports := appendName(nil, p.stopExport)
	newExports = append(newExports, 3)
	newExports = binary.AppendUvarint(newExports, uint64(stopIndex))
	added := uint64(1)
	if info.hasStart {
		newExports = appendName(newExports, p.startExport)
		newExports = append(newExports, 0)
		newExports = binary.AppendUvarint(newExports, uint64(info.start))
		added++
	}

	out := make([]byte, 0, len(wasm)+len(wasm)/16+64)
	out = append(out, wasm[:8]...)
	globalDone, exportDone := false, false
	emitPending := func(rank int) {
		if !globalDone && rank > sectionRank[secGlobal] {
			out = appendSection(out, secGlobal, append([]byte{1}, newGlobal...))
			globalDone = true
		}
		if !exportDone && rank > sectionRank[secExport] {
			out = appendSection(out, secExport, append(binary.AppendUvarint(nil, added), newExports...))
			exportDone = true
		}
	}
	for _, s := range info.secs {
		payload := wasm[s.start:s.end]
		if s.id != secCustom {
			emitPending(sectionRank[s.id])
		}
		switch s.id {
		case secCustom:
			r := wreader{b: payload}
			name, _ := r.name()
			switch {
			case name == rewriteSection,
				strings.HasPrefix(name, ".debug_"):
				continue
			}
			out = append(out, wasm[s.header:s.end]...)
		case secTable:
			out = appendSection(out, secTable, capTables(info.tables, lim.MaxTableSize))
		case secGlobal:
			r := wreader{b: payload}
			n, _ := r.u32()
			np := binary.AppendUvarint(nil, uint64(n)+1)
			np = append(np, payload[r.pos:]...)
			out = appendSection(out, secGlobal, append(np, newGlobal...))
			globalDone = true
		case secExport:
			r := wreader{b: payload}
			n, _ := r.u32()
			np := binary.AppendUvarint(nil, uint64(n)+added)
			np = append(np, payload[r.pos:]...)
			out = appendSection(out, secExport, append(np, newExports...))
			exportDone = true
		case secStart:
			continue
		case secCode:
			code, err := rewriteCode(payload, info, lim, check, loopChecks)
			if err != nil {
				return nil, err
			}
			out = appendSection(out, secCode, code)
		default:
			out = append(out, wasm[s.header:s.end]...)
		}
	}
	emitPending(len(sectionRank) + 1)
	mode := "entry"
	if loopChecks {
		mode = "entry+loop"
	}
	out = appendSection(out, secCustom, append(appendName(nil, rewriteSection),
		fmt.Sprintf("v%d checks=%s", rewriteVersion, mode)...))
	p.wasm = out
	return p, nil
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

// rewriteCode inserts check at each function's entry and, with
// loopChecks, at each loop header, fixing up the body sizes.
func rewriteCode(payload []byte, info *moduleInfo, lim *ModuleLimits, check []byte, loopChecks bool) ([]byte, error) {
	r := wreader{b: payload}
	n, _ := r.u32()
	out := make([]byte, 0, len(payload)+int(n)*(len(check)+1)+len(payload)/8)
	out = binary.AppendUvarint(out, uint64(n))
	var loops []int
	var body []byte
	for i := uint32(0); i < n; i++ {
		size, _ := r.u32()
		old, _ := r.bytes(uint64(size))
		scan, err := scanBody(old, bodyEnv{lim: lim, numTypes: info.numTypes, globals: info.globals, fn: info.importedFuncs + i}, loops)
		if err != nil {
			return nil, err // cannot happen: validated already
		}
		loops = scan.loops
		body = append(body[:0], old[:scan.codeStart]...)
		body = append(body, check...)
		from := scan.codeStart
		if loopChecks {
			for _, at := range scan.loops {
				body = append(body, old[from:at]...)
				body = append(body, check...)
				from = at
			}
		}
		body = append(body, old[from:]...)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, nil
}
