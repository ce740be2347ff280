package sandbox

import (
	"errors"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/rewrite"
)

// ModuleLimits bound what a module may declare (docs/security.md); a zero
// field takes its default.
type ModuleLimits struct {
	MaxModuleSize      int    // bytes of the module
	MaxTypes           uint32 // function types
	MaxFunctions       uint32 // functions, imported and defined
	MaxImports         uint32 // imports
	MaxGlobals         uint32 // globals
	MaxTables          uint32 // tables
	MaxTableSize       uint32 // entries of one table, declared and grown
	MaxDataSegments    uint32 // data segments
	MaxElementSegments uint32 // element segments
	MaxElementItems    uint32 // items of all element segments
	MaxExports         uint32 // exports
	MaxFunctionSize    uint32 // bytes of one function body
	MaxLocals          uint32 // locals one function declares
	MaxBrTableTargets  uint32 // targets of one br_table
	MaxBlockDepth      uint32 // nesting of blocks in one function
	MaxBranchesToLabel uint32 // branches to one block or loop in one function
	MaxLoops           uint32 // loops in one function
	MaxModuleLoops     uint32 // loops in the module
	MaxCallStack       uint32 // bytes of call stack a running guest may hold (KindTrapped, ErrCallStack)
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
		{"max_call_stack", l.MaxCallStack, maxCallStackLimit},
	} {
		if c.v > c.max {
			errs = append(errs, fmt.Errorf("sandbox: module limit %s of %d is over wazero's maximum of %d", c.name, c.v, c.max))
		}
	}
	return errors.Join(errs...)
}

// maxCallStackLimit is the largest ModuleLimits.MaxCallStack: 1 GiB
// (wazero itself traps a stack of about 100 MB).
const maxCallStackLimit = 1 << 30

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

// ModuleLimitNames lists the limits' names, as SetByName takes them.
func ModuleLimitNames() []string {
	var l ModuleLimits
	var names []string
	for _, f := range l.fields() {
		names = append(names, f.name)
	}
	return names
}

// SetByName sets the limit called name (max_br_table_targets, say) to v.
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
