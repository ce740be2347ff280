package rewrite

// Limits bound what a module may declare; Prepare refuses a module over
// any of them. It is sandbox.ModuleLimits field for field (the sandbox
// converts one into the other), where each limit, its default and why it
// is there are documented. Every field must be set: Prepare has no
// defaults.
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
