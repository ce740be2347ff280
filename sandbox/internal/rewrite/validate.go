package rewrite

import (
	"errors"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/resume"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Validation: every section decoded in full and held to the Limits.

// validateModule decodes every section of wasm and checks it against lim.
func validateModule(wasm []byte, lim *Limits) (*moduleInfo, error) {
	info := &moduleInfo{exports: map[string]bool{}, emptyTypes: map[uint32]bool{}, codeSec: -1}
	r := wreader{wasmbin.Reader{B: wasm, Pos: 8}}
	lastRank := 0
	seenName := false
	var funcCount, codeCount, dataSegs uint32
	for !r.EOF() {
		header := r.Pos
		id, _ := r.Byte()
		size, err := r.U32()
		if err != nil {
			return nil, malformed("section header at byte %d: %v", header, err)
		}
		payload, err := r.Bytes(uint64(size))
		if err != nil {
			return nil, malformed("section %d at byte %d runs past the end of the module (truncated file?)", id, header)
		}
		s := wasmbin.Section{ID: id, Start: r.Pos - int(size), End: r.Pos, Header: header}
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
		sr := wreader{wasmbin.Reader{B: payload}}
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
				if !validNameSection(payload[sr.Pos:]) {
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
				if t, err = sr.U32(); err == nil && t >= info.numTypes {
					err = fmt.Errorf("function %d has type %d; the module has %d types", info.importedFuncs+i, t, info.numTypes)
				}
				info.funcTypes = append(info.funcTypes, t)
			}
			info.definedFuncs = funcCount
		case secTable:
			err = info.readTables(&sr, lim)
		case secMemory:
			var n uint32
			if n, err = sr.U32(); err == nil && n > 1 {
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
				if t, err = sr.Byte(); err != nil {
					break
				}
				if !isValType(t) {
					err = fmt.Errorf("global of unknown type 0x%02x", t)
					break
				}
				info.anyRef = info.anyRef || t == typeFuncref // it may hold a ref.func
				if mut, err = sr.Byte(); err == nil && mut > 1 {
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
			info.start, err = sr.U32()
			if err == nil && uint64(info.start) >= uint64(len(info.funcTypes)) {
				err = fmt.Errorf("start function %d does not exist", info.start)
			} else if err == nil && !info.emptyTypes[info.funcTypes[info.start]] {
				err = fmt.Errorf("start function %d takes parameters or returns results", info.start)
			}
		case secElement:
			err = info.readElements(&sr, lim)
		case secDataCount:
			info.hasDataCount = true
			info.dataCount, err = sr.U32()
		case secCode:
			info.codeSec = len(info.secs) - 1
			codeCount, err = info.checkCode(&sr, lim)
		case secData:
			dataSegs, err = info.readData(&sr, lim)
		}
		if err == nil && !sr.EOF() {
			err = fmt.Errorf("%d bytes left over at its end", len(payload)-sr.Pos)
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
	n, err := r.U32()
	if err != nil {
		return 0, err
	}
	if n > max {
		return 0, overLimit(fmt.Sprintf("%d %s", n, what), limit, uint64(max))
	}
	if uint64(n) > uint64(len(r.B)-r.Pos) {
		return 0, fmt.Errorf("%d %s declared in %d bytes", n, what, len(r.B)-r.Pos)
	}
	return n, nil
}

// limits reads a table or memory's limits (no shared or 64-bit forms).
func (r *wreader) limits() (min, max uint32, hasMax bool, err error) {
	flag, err := r.Byte()
	if err != nil {
		return 0, 0, false, err
	}
	if flag > 1 {
		return 0, 0, false, fmt.Errorf("limits flag 0x%02x (shared or 64-bit memories are not supported)", flag)
	}
	if min, err = r.U32(); err != nil {
		return 0, 0, false, err
	}
	if flag == 1 {
		if max, err = r.U32(); err != nil {
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
		form, err := r.Byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return fmt.Errorf("type %d has form 0x%02x (only function types are supported)", i, form)
		}
		empty := true
		for j := range 2 { // parameters, results
			k, err := r.U32()
			if err != nil {
				return err
			}
			empty = empty && k == 0
			if uint64(k) > uint64(len(r.B)-r.Pos) {
				return fmt.Errorf("type %d: %d value types declared in %d bytes", i, k, len(r.B)-r.Pos)
			}
			from := r.Pos
			for range k {
				if t, _ := r.Byte(); !isValType(t) {
					return fmt.Errorf("type %d: unknown value type 0x%02x", i, t)
				}
			}
			if j == 0 {
				info.typeParams = append(info.typeParams, k)
				info.paramTypes = append(info.paramTypes, r.B[from:r.Pos])
			} else {
				info.resultTypes = append(info.resultTypes, r.B[from:r.Pos])
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
		kind, err := r.Byte()
		if err != nil {
			return err
		}
		if mod == InterruptModule && info.ownImport == "" {
			info.ownImport = mod + "." + field // Prepare refuses it
		}
		if mod == resume.ImportModule {
			info.resumable = true // the sandbox refuses it from a guest
		}
		switch kind {
		case 0: // function
			t, err := r.U32()
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
		case 2: // memory: the sandbox's checkImports refuses it with its own message
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
		t, err := r.Byte()
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
		kind, err := r.Byte()
		if err != nil {
			return err
		}
		idx, err := r.U32()
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
			if name == resume.ExportPoint {
				info.point, info.hasPoint = idx, true
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
		flag, err := r.U32()
		if err != nil {
			return err
		}
		if flag > 7 {
			return fmt.Errorf("element segment %d has flags %d", i, flag)
		}
		if flag&2 != 0 && flag&1 == 0 { // active with a table index
			if _, err := r.U32(); err != nil {
				return err
			}
		}
		if flag&1 == 0 { // active: an offset
			if _, err := r.constExpr(info.globals, info.funcs(), info.importedFuncs, nil); err != nil {
				return fmt.Errorf("element segment %d offset: %w", i, err)
			}
		}
		if flag&3 != 0 { // an element kind (flags 1-3) or a reference type (5-7)
			k, err := r.Byte()
			if err != nil {
				return err
			}
			if (flag&4 == 0 && k != 0) || (flag&4 != 0 && !isRefType(k)) {
				return fmt.Errorf("element segment %d has element type 0x%02x", i, k)
			}
		}
		items, err := r.U32()
		if err != nil {
			return err
		}
		if uint64(items) > uint64(len(r.B)-r.Pos) {
			return fmt.Errorf("element segment %d: %d items declared in %d bytes", i, items, len(r.B)-r.Pos)
		}
		if info.elemItems += uint64(items); info.elemItems > uint64(lim.MaxElementItems) {
			return overLimit(fmt.Sprintf("%d or more element items", info.elemItems), "max_element_items", uint64(lim.MaxElementItems))
		}
		for range items {
			if flag&4 == 0 {
				var f uint32
				if f, err = r.U32(); err == nil && f >= info.funcs() { // a function index
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
		flag, err := r.U32()
		if err != nil {
			return 0, err
		}
		switch flag {
		case 0:
		case 1:
		case 2:
			mem, err := r.U32()
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
		size, err := r.U32()
		if err != nil {
			return 0, err
		}
		if _, err := r.Bytes(uint64(size)); err != nil {
			return 0, fmt.Errorf("data segment %d of %d bytes runs past the section", i, size)
		}
	}
	return n, nil
}

// checkCode decodes every function body and checks it against lim.
func (info *moduleInfo) checkCode(r *wreader, lim *Limits) (uint32, error) {
	n, err := r.U32()
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
		size, err := r.U32()
		if err != nil {
			return 0, err
		}
		if size > lim.MaxFunctionSize {
			return 0, overLimit(fmt.Sprintf("function %d has a body of %d bytes", fn, size), "max_function_size", uint64(lim.MaxFunctionSize))
		}
		body, err := r.Bytes(uint64(size))
		if err != nil {
			return 0, fmt.Errorf("function %d: body of %d bytes runs past the section", fn, size)
		}
		if scan, err = scanBody(body, info.bodyEnv(lim, fn, false), scan); err != nil {
			return 0, err
		}
		code := len(body) - scan.codeStart
		uncounted = append(uncounted, uncountedWork(&scan, code))
		pure = append(pure, pureLeaf(&scan, code))
		tested = append(tested, testsAtEntry(&scan, code))
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
	// as the host call a libc function of the same type makes, many times
	// their work.
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
	// A call_indirect reaches a function of any type with the same
	// signature (wazero compares types by structure): what holds for one
	// type holds for all the types of its signature.
	if mutate != "indirect-by-index" {
		canon, first := make([]uint32, info.numTypes), map[string]uint32{}
		for t := range info.numTypes {
			k := info.signature(t)
			if c, ok := first[k]; ok {
				canon[t] = c
			} else {
				first[k], canon[t] = t, t
			}
		}
		for t, c := range canon {
			info.indirect[c] = max(info.indirect[c], info.indirect[t])
			info.indirectPure[c] = info.indirectPure[c] && info.indirectPure[t]
		}
		for t, c := range canon {
			info.indirect[t], info.indirectPure[t] = info.indirect[c], info.indirectPure[c]
		}
	}
	info.tested = make([]bool, info.funcs())
	copy(info.tested[info.importedFuncs:], tested)
}

// validNameSection reports whether a name section's payload (after its
// name) is well formed: subsections that fill it exactly, each of the
// three wazero reads (module, function and local names) made of exactly
// what it declares.
func validNameSection(p []byte) bool {
	r := wreader{wasmbin.Reader{B: p}}
	for !r.EOF() {
		id, _ := r.Byte()
		size, err := r.U32()
		if err != nil {
			return false
		}
		sub, err := r.Bytes(uint64(size))
		if err != nil {
			return false
		}
		sr := wreader{wasmbin.Reader{B: sub}}
		switch id {
		case 0:
			_, err = sr.name()
		case 1:
			err = sr.nameMap()
		case 2:
			var n uint32
			if n, err = sr.U32(); err == nil && uint64(n) > uint64(len(sub)) {
				return false
			}
			for i := uint32(0); i < n && err == nil; i++ {
				if _, err = sr.U32(); err == nil {
					err = sr.nameMap()
				}
			}
		default:
			continue
		}
		if err != nil || !sr.EOF() {
			return false
		}
	}
	return true
}

// nameMap reads a vector of (index, name).
func (r *wreader) nameMap() error {
	n, err := r.U32()
	if err != nil {
		return err
	}
	if uint64(n) > uint64(len(r.B)-r.Pos) {
		return errEOF
	}
	for range n {
		if _, err := r.U32(); err != nil {
			return err
		}
		if _, err := r.name(); err != nil {
			return err
		}
	}
	return nil
}
