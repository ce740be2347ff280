package rewrite

// Limits bound what a module may declare; Prepare refuses a module over
// any of them. It is sandbox.ModuleLimits field for field (the sandbox
// converts one into the other), where each limit and why it is there are
// documented. Every field must be set: Prepare has no defaults of its own
// (DefaultLimits are those a zero sandbox.ModuleLimits field takes).
type Limits struct {
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
	MaxBranchesToLabel uint32 // branches to one label in one function
	MaxLoops           uint32 // loops in one function
	MaxModuleLoops     uint32 // loops in the module
	MaxCallStack       uint32 // estimated bytes of call stack (see bound.go)
}

// DefaultLimits returns the module limits' defaults: the one definition of
// sandbox.DefaultModuleLimits, here so that the rewrite's tests use the
// same ones.
func DefaultLimits() Limits {
	return Limits{
		MaxModuleSize:      64 << 20,
		MaxTypes:           16384,
		MaxFunctions:       1 << 18,
		MaxImports:         10_000,
		MaxGlobals:         16384,
		MaxTables:          8,
		MaxTableSize:       1 << 20,
		MaxDataSegments:    1 << 20,
		MaxElementSegments: 100_000,
		MaxElementItems:    1 << 18,
		MaxExports:         100_000,
		MaxFunctionSize:    4 << 20,
		MaxLocals:          50_000,
		MaxBrTableTargets:  16384,
		MaxBlockDepth:      8192,
		MaxBranchesToLabel: 4096,
		MaxLoops:           1000,
		MaxModuleLoops:     100_000,
		MaxCallStack:       4 << 20,
	}
}
