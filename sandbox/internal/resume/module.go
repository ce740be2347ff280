package resume

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// The names the transformed module imports and exports (doc.go: the
// protocol with the host).
const (
	ImportModule = "stint:resume" // the host module of push and pop
	PushFunc     = "push"         // (i64) -> (): save one value of a frame
	PopFunc      = "pop"          // () -> (i64): read one value back, last saved first

	ExportRewinding = "stint:resume.rewinding" // mutable i32: 1 while the guest rewinds
	ExportUnwinding = "stint:resume.unwinding" // mutable i32: 1 once the guest unwinds
	ExportPoint     = "stint:resume.point"     // mutable i32: 1 asks the next point to act
	// ExportHostPoints names the point global again in a module that
	// imports a blocking function (Transform's blocking): its every call
	// is a point, and its host function may make the guest unwind.
	ExportHostPoints = "stint:resume.host-points"
	// ExportGlobalPrefix, followed by a global's index, names each of the
	// module's own mutable globals, so that a snapshot can read and restore them.
	ExportGlobalPrefix = "stint:resume.global."
)

// Version changes whenever the code Transform produces changes: a
// snapshot names it and is refused by another.
const Version = 15

// addedFuncs is how many functions the transform imports (push, pop):
// every function defined by the module moves up by as many.
const addedFuncs = 2

// An Error says why a module cannot be made resumable.
type Error struct{ Message string }

func (e *Error) Error() string { return "not resumable: " + e.Message }

func refuse(format string, args ...any) error { return &Error{Message: fmt.Sprintf(format, args...)} }

type funcType struct{ params, results []byte }

type global struct {
	typ     byte
	mutable bool
}

// module is what the transform knows of the module it rewrites.
type module struct {
	wasm         []byte
	types        []funcType
	funcs        []uint32 // every function's type, imports first
	imported     uint32   // imported functions
	globals      []global // imports first
	importedGlob uint32
	tables       []byte // every table's element type, imports first
	typeKeys     map[string]uint32
	newTypes     []byte // encoded types appended to the type section
	nNewTypes    uint32
	instrumented []bool // by function index
	blocking     []bool // by imported function's index: its calls are points (Import)
	blockingRef  bool   // a blocking import is taken as a value (ref)
	push, pop    uint32 // the added imports' function indices
	pushT, popT  uint32 // and their types
	rw, uw, pt   uint32 // the added globals (exported)
	skip         uint32 // and one the guest keeps to itself (callSite)
	// The added functions (helper): their types and bodies, in order, and
	// their indices by what they do.
	helperTypes  []uint32
	helperBodies [][]byte
	helperIdx    map[string]uint32
}

func (m *module) funcType(idx uint32) (funcType, error) {
	if int(idx) >= len(m.funcs) {
		return funcType{}, fmt.Errorf("call of function %d of %d", idx, len(m.funcs))
	}
	return m.types[m.funcs[idx]], nil
}

func (m *module) tableType(idx uint32) byte {
	if int(idx) < len(m.tables) {
		return m.tables[idx]
	}
	return wasmbin.TypeFuncref
}

// isBlocking reports whether function f is a blocking import (Import).
func (m *module) isBlocking(f uint32) bool { return f < m.imported && m.blocking[f] }

// ref is shift for a function taken as a value (a table's element,
// ref.func): a blocking import taken so could be called through a table,
// a call the guest could not make again when it resumes, and Transform
// refuses the module (blockingRef).
func (m *module) ref(f uint32) uint32 {
	if m.isBlocking(f) {
		m.blockingRef = true
	}
	return m.shift(f)
}

// shift moves a function index past the added imports.
func (m *module) shift(f uint32) uint32 {
	if f >= m.imported {
		return f + addedFuncs
	}
	return f
}

// typeIndex is the index of the function type params -> results, added
// to the module if it has none.
func (m *module) typeIndex(params, results []byte) uint32 {
	key := typeKey(params, results)
	if i, ok := m.typeKeys[key]; ok {
		return i
	}
	i := uint32(len(m.types)) + m.nNewTypes
	m.typeKeys[key] = i
	m.newTypes = append(m.newTypes, 0x60)
	m.newTypes = binary.AppendUvarint(m.newTypes, uint64(len(params)))
	m.newTypes = append(m.newTypes, params...)
	m.newTypes = binary.AppendUvarint(m.newTypes, uint64(len(results)))
	m.newTypes = append(m.newTypes, results...)
	m.nNewTypes++
	return i
}

// typeKey is the key of a function type in typeKeys.
func typeKey(params, results []byte) string {
	return strconv.Itoa(len(params)) + ":" + string(params) + string(results)
}

// blockType appends the block type params -> results.
func (m *module) blockType(out, params, results []byte) []byte {
	switch {
	case len(params) == 0 && len(results) == 0:
		return append(out, 0x40)
	case len(params) == 0 && len(results) == 1:
		return append(out, results[0])
	}
	return wasmbin.AppendSLEB(out, int64(m.typeIndex(params, results)))
}

// blockSig decodes a block type.
func (m *module) blockSig(bt int64) (params, results []byte, err error) {
	switch {
	case bt == -64: // 0x40
		return nil, nil, nil
	case bt < 0:
		return nil, []byte{byte(bt & 0x7f)}, nil
	case bt < int64(len(m.types)):
		return m.types[bt].params, m.types[bt].results, nil
	}
	return nil, nil, fmt.Errorf("block type %d", bt)
}

// vector re-encodes a vector's payload with n more items appended.
func vector(payload []byte, n uint32, items []byte) ([]byte, error) {
	r := reader{wasmbin.Reader{B: payload}}
	old, err := r.U32()
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(nil, uint64(old)+uint64(n))
	out = append(out, payload[r.Pos:]...)
	return append(out, items...), nil
}

// An Import names an imported function by its module and name. A call of
// one given to Transform as blocking is a point: a host function that
// blocks (a sleep) can make its caller unwind, and the call is made again
// when the guest resumes (doc.go).
type Import struct{ Module, Name string }

// Resumable is a module made resumable.
type Resumable struct {
	Wasm    []byte   // the module
	Globals []string // the exports of its own mutable globals, for a snapshot
}

// Transform returns wasm made resumable (doc.go), the calls of the
// imports in blocking points. wasm must be a module that wazero and the
// rewrite accept; a module the transform does not support is refused with
// an *Error.
func Transform(wasm []byte, blocking ...Import) (*Resumable, error) {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return nil, errors.New("resume: malformed module")
	}
	m := &module{wasm: wasm, typeKeys: map[string]uint32{}, helperIdx: map[string]uint32{}}
	var codeSec []byte
	for _, s := range secs {
		p := wasm[s.Start:s.End]
		var err error
		switch s.ID {
		case 1:
			err = m.readTypes(p)
		case 2:
			err = m.readImports(p, blocking)
		case 3:
			err = m.readFuncs(p)
		case 4:
			err = m.readTables(p)
		case 6:
			err = m.readGlobals(p)
		case 8:
			return nil, refuse("it has a start function, which would run again when it resumes")
		case 10:
			codeSec = p
		}
		if err != nil {
			return nil, fmt.Errorf("resume: section %d: %w", s.ID, err)
		}
	}
	for i := range m.types {
		ft := m.types[i]
		m.typeKeys[typeKey(ft.params, ft.results)] = uint32(i)
	}
	bodies, err := splitCode(codeSec)
	if err != nil {
		return nil, err
	}
	if len(bodies) != len(m.funcs)-int(m.imported) {
		return nil, errors.New("resume: function and code sections disagree")
	}
	if err := m.findInstrumented(bodies); err != nil {
		return nil, err
	}
	m.pushT = m.typeIndex([]byte{i64}, nil)
	m.popT = m.typeIndex(nil, []byte{i64})
	m.push, m.pop = m.imported, m.imported+1
	n := uint32(len(m.globals))
	m.rw, m.uw, m.pt, m.skip = n, n+1, n+2, n+3

	code, err := m.code(bodies)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), wasm[:8]...)
	seen := map[byte]bool{}
	for _, s := range secs {
		p := wasm[s.Start:s.End]
		seen[s.ID] = true
		switch s.ID {
		case 1:
			p, err = vector(p, m.nNewTypes, m.newTypes)
		case 3:
			var ts []byte
			for _, t := range m.helperTypes {
				ts = binary.AppendUvarint(ts, uint64(t))
			}
			p, err = vector(p, uint32(len(m.helperTypes)), ts)
		case 2:
			p, err = vector(p, 2, m.importItems())
		case 6:
			p, err = m.globalSection(p)
		case 7:
			p, err = m.exportSection(p)
		case 9:
			p, err = m.elementSection(p)
		case 10:
			p = code
		case 0:
			p = m.customSection(p)
		}
		if err != nil {
			return nil, fmt.Errorf("resume: section %d: %w", s.ID, err)
		}
		out = m.insertMissing(out, seen, rank(s.ID))
		out = wasmbin.AppendSection(out, s.ID, p)
	}
	out = m.insertMissing(out, seen, 99)
	if !seen[1] {
		return nil, refuse("it has no type section")
	}
	if m.blockingRef {
		return nil, refuse("a blocking host function is in a table or taken by ref.func: a call of it through a table could not be made again on resume")
	}
	res := &Resumable{Wasm: out}
	for g := m.importedGlob; g < uint32(len(m.globals)); g++ {
		if m.globals[g].mutable {
			res.Globals = append(res.Globals, ExportGlobalPrefix+strconv.Itoa(int(g)))
		}
	}
	return res, nil
}

// insertMissing appends the sections the transform needs that the module
// lacks (imports, globals, exports), if their place comes before a
// section of rank next.
func (m *module) insertMissing(out []byte, seen map[byte]bool, next int) []byte {
	for _, id := range []byte{2, 6, 7} {
		if seen[id] || next <= rank(id) || next == 0 {
			continue
		}
		seen[id] = true
		p, _ := map[byte]func([]byte) ([]byte, error){
			2: func(p []byte) ([]byte, error) { return vector(p, 2, m.importItems()) },
			6: m.globalSection, 7: m.exportSection,
		}[id]([]byte{0})
		out = wasmbin.AppendSection(out, id, p)
	}
	return out
}

// importItems encodes the two added imports.
func (m *module) importItems() []byte {
	var imp []byte
	imp = wasmbin.AppendName(imp, ImportModule)
	imp = wasmbin.AppendName(imp, PushFunc)
	imp = append(imp, 0x00)
	imp = binary.AppendUvarint(imp, uint64(m.pushT))
	imp = wasmbin.AppendName(imp, ImportModule)
	imp = wasmbin.AppendName(imp, PopFunc)
	imp = append(imp, 0x00)
	return binary.AppendUvarint(imp, uint64(m.popT))
}

// rank is a section's place in a module's order (custom sections: 0).
func rank(id byte) int {
	order := map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}
	return order[id]
}

func (m *module) readTypes(p []byte) error {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return err
	}
	for range n {
		if b, err := r.Byte(); err != nil || b != 0x60 {
			return errors.New("bad function type")
		}
		var ft funcType
		for k := range 2 {
			c, err := r.U32()
			if err != nil {
				return err
			}
			ts, err := r.Bytes(uint64(c))
			if err != nil {
				return err
			}
			if k == 0 {
				ft.params = ts
			} else {
				ft.results = ts
			}
		}
		m.types = append(m.types, ft)
	}
	return nil
}

func (m *module) readImports(p []byte, blocking []Import) error {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return err
	}
	for range n {
		from := r.Pos
		if err := r.name(); err != nil {
			return err
		}
		mid := r.Pos
		if err := r.name(); err != nil {
			return err
		}
		imp := Import{Module: nameAt(p, from, mid), Name: nameAt(p, mid, r.Pos)}
		kind, err := r.Byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0:
			t, err := r.U32()
			if err != nil || int(t) >= len(m.types) {
				return fmt.Errorf("import of type %d", t)
			}
			m.funcs = append(m.funcs, t)
			m.blocking = append(m.blocking, slices.Contains(blocking, imp))
			m.imported++
		case 1:
			t, _ := r.Byte()
			m.tables = append(m.tables, t)
			if err := skipLimits(&r); err != nil {
				return err
			}
		case 2:
			if err := skipLimits(&r); err != nil {
				return err
			}
		case 3:
			t, _ := r.Byte()
			mut, err := r.Byte()
			if err != nil {
				return err
			}
			m.globals = append(m.globals, global{typ: t, mutable: mut == 1})
			m.importedGlob++
		default:
			return fmt.Errorf("import kind %d", kind)
		}
	}
	return nil
}

// nameAt is the name encoded in p[from:to] (its length, then its bytes).
func nameAt(p []byte, from, to int) string {
	r := reader{wasmbin.Reader{B: p[:to], Pos: from}}
	n, _ := r.U32()
	return string(p[to-int(n) : to])
}

func skipLimits(r *reader) error {
	flag, err := r.Byte()
	if err != nil {
		return err
	}
	if _, err := r.U32(); err != nil {
		return err
	}
	if flag&1 != 0 {
		_, err = r.U32()
	}
	return err
}

func (m *module) readFuncs(p []byte) error {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return err
	}
	for range n {
		t, err := r.U32()
		if err != nil || int(t) >= len(m.types) {
			return fmt.Errorf("function of type %d", t)
		}
		m.funcs = append(m.funcs, t)
	}
	return nil
}

func (m *module) readTables(p []byte) error {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return err
	}
	for range n {
		t, err := r.Byte()
		if err != nil {
			return err
		}
		m.tables = append(m.tables, t)
		if err := skipLimits(&r); err != nil {
			return err
		}
	}
	return nil
}

func (m *module) readGlobals(p []byte) error {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return err
	}
	for range n {
		t, _ := r.Byte()
		mut, err := r.Byte()
		if err != nil {
			return err
		}
		if _, err := r.constExpr(nil, m.shift); err != nil {
			return err
		}
		m.globals = append(m.globals, global{typ: t, mutable: mut == 1})
	}
	return nil
}

// globalSection renumbers ref.func in p and appends the three state globals.
func (m *module) globalSection(p []byte) ([]byte, error) {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(nil, uint64(n)+4)
	for range n {
		out = append(out, r.B[r.Pos:r.Pos+2]...)
		r.Pos += 2
		if out, err = r.constExpr(out, m.ref); err != nil {
			return nil, err
		}
	}
	for range 4 {
		out = append(out, i32, 1, wasmbin.OpI32Const, 0, wasmbin.OpEnd)
	}
	return out, nil
}

// exportSection renumbers functions in p and exports the state globals
// and every mutable global the module defines.
func (m *module) exportSection(p []byte) ([]byte, error) {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	var items []byte
	count := n
	for range n {
		from := r.Pos
		if err := r.name(); err != nil {
			return nil, err
		}
		kind, _ := r.Byte()
		at := r.Pos
		idx, err := r.U32()
		if err != nil {
			return nil, err
		}
		items = append(items, r.B[from:at]...)
		if kind == 0 {
			idx = m.shift(idx)
		}
		items = binary.AppendUvarint(items, uint64(idx))
	}
	add := func(name string, g uint32) {
		items = wasmbin.AppendName(items, name)
		items = append(items, 3)
		items = binary.AppendUvarint(items, uint64(g))
		count++
	}
	add(ExportRewinding, m.rw)
	add(ExportUnwinding, m.uw)
	add(ExportPoint, m.pt)
	if slices.Contains(m.blocking, true) {
		add(ExportHostPoints, m.pt)
	}
	for g := m.importedGlob; g < uint32(len(m.globals)); g++ {
		if m.globals[g].mutable {
			add(ExportGlobalPrefix+strconv.Itoa(int(g)), g)
		}
	}
	return append(binary.AppendUvarint(nil, uint64(count)), items...), nil
}

// elementSection renumbers the functions elements name.
func (m *module) elementSection(p []byte) ([]byte, error) {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(nil, uint64(n))
	for range n {
		from := r.Pos
		flags, err := r.U32()
		if err != nil || flags > 7 {
			return nil, fmt.Errorf("element segment flags %d", flags)
		}
		if flags&3 == 2 {
			if _, err := r.U32(); err != nil { // table
				return nil, err
			}
		}
		if flags&1 == 0 { // active: an offset
			if _, err := r.constExpr(nil, m.shift); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 { // elemkind or reftype
			if _, err := r.Byte(); err != nil {
				return nil, err
			}
		}
		out = append(out, r.B[from:r.Pos]...)
		c, err := r.U32()
		if err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(c))
		for range c {
			if flags&4 != 0 {
				if out, err = r.constExpr(out, m.ref); err != nil {
					return nil, err
				}
			} else {
				f, err := r.U32()
				if err != nil {
					return nil, err
				}
				out = binary.AppendUvarint(out, uint64(m.ref(f)))
			}
		}
	}
	return out, nil
}

// customSection renumbers the functions of a name section's function
// and local names; other custom sections are kept as they are.
func (m *module) customSection(p []byte) []byte {
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil || uint64(n) > uint64(len(p)-r.Pos) || string(p[r.Pos:r.Pos+int(n)]) != "name" {
		return p
	}
	if out, ok := wasmbin.RenumberNames(p, r.Pos+int(n), m.shift); ok {
		return out
	}
	return p
}

// splitCode cuts the code section into its bodies.
func splitCode(p []byte) ([][]byte, error) {
	if p == nil {
		return nil, nil
	}
	r := reader{wasmbin.Reader{B: p}}
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	bodies := make([][]byte, 0, n)
	for range n {
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		b, err := r.Bytes(uint64(size))
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	return bodies, nil
}
