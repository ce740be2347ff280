package sandbox

import (
	"errors"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/rewrite"
)

// ModuleLimits bound what a module may declare. Stint checks them in one
// pass over the module's bytes before wazero compiles it (wazero's
// compilation cannot be cancelled, and some shapes take it seconds to
// minutes), and refuses a module over any of them as KindInvalidModule
// with a message that names the limit, e.g. "br_table with 150000 targets
// in function 3, over the limit of 65536 (sandbox module limit
// max_br_table_targets)". A zero field takes its default. The defaults let
// every real Go, Rust and C guest through with a wide margin (the largest
// values measured on the example Go guests are given for each) and refuse
// compile bombs. They bound each function's compile time to about half a
// second on a 2-core Xeon; a module's total compile time is the compile
// budget's to bound.
type ModuleLimits struct {
	// MaxModuleSize is the largest module, in bytes. Default 64 MiB
	// (a Go hello is 2.6 MB, a large Go program 20-40 MB).
	MaxModuleSize int
	// MaxTypes is the number of function types. wazero keeps about 135
	// bytes of each in the compiled module. Default 16,384 (Go guests: 14,
	// C: 15).
	MaxTypes uint32
	// MaxFunctions is the number of functions, imported and defined. A
	// compiled function holds about 230 bytes even when empty (Go heap
	// and machine code), and compiling one takes about 7 µs: 1,000,000
	// empty functions (a 4 MB module) held 230 MB and took 7 s to compile.
	// Default 262,144: about 60 MB and 2 s at most (Go guests: about
	// 1,850 in 2.6 MB, so about 45,000 for the largest module
	// MaxModuleSize allows; C: 59; wazero allows 2^27).
	MaxFunctions uint32
	// MaxImports is the number of imports. Default 10,000 (Go guests:
	// 22).
	MaxImports uint32
	// MaxGlobals is the number of globals. wazero keeps about 51 bytes of
	// each in the compiled module and 88 in every instance, outside
	// linear memory. Default 16,384: 1.4 MiB per instance at most (Go
	// guests: 8, C: 1; wazero allows 2^27). The rewrite adds two.
	MaxGlobals uint32
	// MaxTables is the number of tables. Default 8 (Go, Rust and C use
	// one).
	MaxTables uint32
	// MaxTableSize caps the entries of each table, declared and grown. A
	// table whose declared minimum is over it is refused; a table with no
	// maximum, or a larger one, gets this maximum, so that table.grow
	// past it returns -1. Tables live outside linear memory and
	// Config.MaxMemoryBytes does not bound them: each entry takes 8 bytes
	// of the runner's memory, so the default of 1,048,576 entries is 8 MiB
	// per table and 64 MiB for MaxTables tables at most, per running task.
	// (Go guests declare about 5,900 entries and no maximum; wazero alone
	// allows 2^27 per table declared and 2^32-1 grown.)
	MaxTableSize uint32
	// MaxDataSegments is the number of data segments. Default 1,048,576
	// (the Go primes guest has 31,456: Go emits one per run of non-zero
	// bytes, about 12 per KB of module).
	MaxDataSegments uint32
	// MaxElementSegments is the number of element segments. Default
	// 100,000 (Go guests: 1).
	MaxElementSegments uint32
	// MaxElementItems is the number of items (function references) of
	// all element segments together. wazero keeps about 40 bytes of each
	// in the compiled module and, for a passive segment, about 40 more in
	// every instance, outside linear memory, and evaluates each at
	// instantiation, where no context reaches: one passive segment of 60
	// million items (a 60 MB module) took a runner to 6.5 GB. Default
	// 262,144: about 10 MiB compiled and 10 MiB per instance at most, 50
	// ms to instantiate (Go guests: about 1,800, one per function; C:
	// a few, one per function whose address is taken).
	MaxElementItems uint32
	// MaxExports is the number of exports. Default 100,000 (Go guests:
	// 2). The rewrite adds one or two.
	MaxExports uint32
	// MaxFunctionSize is the largest function body, in bytes. Default
	// 4 MiB (Go guests: 29 KB). wazero compiles long bodies in about
	// linear time (3 MB of straight-line code: 0.7 s).
	MaxFunctionSize uint32
	// MaxLocals is the number of locals one function declares (its
	// parameters not included). Default 50,000 (Go guests: 17; 50,000
	// locals all used compiled in 1.6 s).
	MaxLocals uint32
	// MaxBrTableTargets is the number of targets of one br_table
	// instruction. wazero compiles br_table in time quadratic in its
	// targets (150,000 took 12 s, 16,384 0.35 s). Default 16,384 (Go
	// guests: 895).
	MaxBrTableTargets uint32
	// MaxBlockDepth is how deeply blocks (block, loop, if) may nest in one
	// function, the function's own body counted. wazero compiles deep
	// nesting in quadratic time (50,000 took 25 s, 8,192 0.5 s). Default
	// 8,192 (Go guests: 550; a C switch of N cases nests about N deep).
	MaxBlockDepth uint32
	// MaxBranchesToLabel is the number of branches (br, br_if and each
	// br_table target) to one block or loop in one function. wazero adds
	// each to its target's predecessors in time linear in their number:
	// 16,384 br_if to one block took 4.6 s to compile, 65,536 took 113 s,
	// in a 262 KB module, 4,096 0.4 s. Default 4,096 (Go guests: 292).
	MaxBranchesToLabel uint32
	// MaxLoops is the number of loops in one function. wazero compiles
	// many loops in one function in more than quadratic time, and Stint's
	// loop checks (InterruptChecks) make each loop cost more: a function
	// of 8,000 small loops (96 KB) took 50 s to compile in checks mode
	// (2.6 s in wazero mode), 4,000 took 8.3 s, 1,000 0.33 s, on the
	// Intel Xeon VM. Default 1,000 (Go guests: 3).
	MaxLoops uint32
	// MaxModuleLoops is the number of loops in the whole module. Past
	// MaxLoops a loop costs its compilation about 0.25 ms in checks mode
	// (15-20 s per MB of loop-dense code), so that 64 MiB of it would
	// keep a core busy for about 20 minutes after the compile budget
	// refused it (wazero cannot stop a compilation). Default 100,000
	// (about 25 s of compilation; Go guests: about 1,250).
	MaxModuleLoops uint32
	// MaxCallStack bounds the call stack a running guest can make the
	// runner hold (wazero keeps it in Go memory, outside the memory
	// limit, and alone lets it reach about 100 MB), in estimated bytes:
	// each call of a function that calls others takes, until it returns,
	// 64 bytes, plus 16 per parameter, local and value its operand stack
	// may hold, plus half a byte per byte of its code; a call that would
	// take the total over the limit ends the run as KindTrapped ("call
	// stack over its limit", ErrCallStack). Functions that call nothing
	// are not counted (they cannot deepen the stack past their own
	// frame). The rewrite builds it into the module's code, so it is a
	// runtime-wide limit, not a per-task one. Default 4 MiB (the Go
	// guests need 32-64 KiB; a simple Go recursion gets about 35,000
	// deep); at most MaxCallStackLimit.
	MaxCallStack uint32
}

// DefaultModuleLimits returns the module limits a zero field takes.
func DefaultModuleLimits() ModuleLimits { return ModuleLimits(rewrite.DefaultLimits()) }

// WithDefaults returns l with every zero field set to its default.
func (l ModuleLimits) WithDefaults() ModuleLimits {
	d := DefaultModuleLimits()
	or := func(v *uint32, def uint32) {
		if *v == 0 {
			*v = def
		}
	}
	if l.MaxModuleSize == 0 {
		l.MaxModuleSize = d.MaxModuleSize
	}
	or(&l.MaxTypes, d.MaxTypes)
	or(&l.MaxFunctions, d.MaxFunctions)
	or(&l.MaxImports, d.MaxImports)
	or(&l.MaxGlobals, d.MaxGlobals)
	or(&l.MaxTables, d.MaxTables)
	or(&l.MaxTableSize, d.MaxTableSize)
	or(&l.MaxDataSegments, d.MaxDataSegments)
	or(&l.MaxElementSegments, d.MaxElementSegments)
	or(&l.MaxElementItems, d.MaxElementItems)
	or(&l.MaxExports, d.MaxExports)
	or(&l.MaxFunctionSize, d.MaxFunctionSize)
	or(&l.MaxLocals, d.MaxLocals)
	or(&l.MaxBrTableTargets, d.MaxBrTableTargets)
	or(&l.MaxBlockDepth, d.MaxBlockDepth)
	or(&l.MaxBranchesToLabel, d.MaxBranchesToLabel)
	or(&l.MaxLoops, d.MaxLoops)
	or(&l.MaxModuleLoops, d.MaxModuleLoops)
	or(&l.MaxCallStack, d.MaxCallStack)
	return l
}

// Validate reports limits that cannot work.
func (l ModuleLimits) Validate() error {
	var errs []error
	if l.MaxModuleSize < 0 {
		errs = append(errs, fmt.Errorf("sandbox: module limit max_module_size must not be negative, got %d", l.MaxModuleSize))
	}
	// wazero's own ceilings: past them a larger limit means nothing (and
	// the call stack's budget is an i32).
	for _, c := range []struct {
		name   string
		v, max uint32
	}{
		{"max_functions", l.MaxFunctions, 1 << 27},
		{"max_globals", l.MaxGlobals, 1<<27 - addedGlobals}, // the rewrite adds some
		{"max_table_size", l.MaxTableSize, 1 << 27},
		{"max_element_items", l.MaxElementItems, 1 << 27},
		{"max_call_stack", l.MaxCallStack, MaxCallStackLimit},
	} {
		if c.v > c.max {
			errs = append(errs, fmt.Errorf("sandbox: module limit %s of %d is over wazero's maximum of %d", c.name, c.v, c.max))
		}
	}
	return errors.Join(errs...)
}

// MaxCallStackLimit is the largest ModuleLimits.MaxCallStack: 1 GiB
// (wazero itself traps a stack of about 100 MB).
const MaxCallStackLimit = 1 << 30

// overLimit is the error for a module over one of its limits.
func overLimit(what, limit string, value uint64) error {
	return &ModuleError{Kind: KindInvalidModule, Message: fmt.Sprintf("%s, over the limit of %d (sandbox module limit %s)", what, value, limit)}
}

// fields names each limit as its errors do (max_br_table_targets),
// for SetByName and ModuleLimitNames.
func (l *ModuleLimits) fields() []struct {
	name string
	u32  *uint32
	i    *int
} {
	type f = struct {
		name string
		u32  *uint32
		i    *int
	}
	return []f{
		{"max_module_size", nil, &l.MaxModuleSize},
		{"max_types", &l.MaxTypes, nil},
		{"max_functions", &l.MaxFunctions, nil},
		{"max_imports", &l.MaxImports, nil},
		{"max_globals", &l.MaxGlobals, nil},
		{"max_tables", &l.MaxTables, nil},
		{"max_table_size", &l.MaxTableSize, nil},
		{"max_data_segments", &l.MaxDataSegments, nil},
		{"max_element_segments", &l.MaxElementSegments, nil},
		{"max_element_items", &l.MaxElementItems, nil},
		{"max_exports", &l.MaxExports, nil},
		{"max_function_size", &l.MaxFunctionSize, nil},
		{"max_locals", &l.MaxLocals, nil},
		{"max_br_table_targets", &l.MaxBrTableTargets, nil},
		{"max_block_depth", &l.MaxBlockDepth, nil},
		{"max_branches_to_label", &l.MaxBranchesToLabel, nil},
		{"max_loops", &l.MaxLoops, nil},
		{"max_module_loops", &l.MaxModuleLoops, nil},
		{"max_call_stack", &l.MaxCallStack, nil},
	}
}

// ModuleLimitNames lists the limits' names, as SetByName takes them and as
// the errors of a module over one name them.
func ModuleLimitNames() []string {
	var l ModuleLimits
	var names []string
	for _, f := range l.fields() {
		names = append(names, f.name)
	}
	return names
}

// SetByName sets the limit called name (max_br_table_targets, say: see
// ModuleLimitNames) to v.
func (l *ModuleLimits) SetByName(name string, v uint64) error {
	for _, f := range l.fields() {
		if f.name != name {
			continue
		}
		switch {
		case v == 0:
			return fmt.Errorf("sandbox: module limit %s must be positive", name)
		case f.u32 != nil && v > 1<<32-1, f.i != nil && v > 1<<31-1:
			return fmt.Errorf("sandbox: module limit %s of %d is too large", name, v)
		case f.u32 != nil:
			*f.u32 = uint32(v)
		default:
			*f.i = int(v)
		}
		return nil
	}
	return fmt.Errorf("sandbox: no module limit %q; the limits are %v", name, ModuleLimitNames())
}
