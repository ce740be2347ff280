package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/wat"
)

// requireLimit checks that err is the refusal of limit at value.
func requireLimit(t *testing.T, err error, limit string, value uint64) {
	t.Helper()
	require.Error(t, err)
	var me *ModuleError
	require.ErrorAs(t, err, &me)
	require.Equal(t, KindInvalidModule, me.Kind)
	require.ErrorIs(t, err, ErrInvalidModule)
	require.Contains(t, me.Message, fmt.Sprintf("over the limit of %d (sandbox module limit %s)", value, limit))
}

// TestModuleLimits: each limit refuses a module just over it, with a
// message that names it, and lets the same module through by default.
func TestModuleLimits(t *testing.T) {
	t.Parallel()
	end := []byte{opEnd}
	table := func(min uint32) []byte { return cat([]byte{typeFuncref, 0}, leb(uint64(min))) }
	global := cat([]byte{typeI32, 0, opI32Const, 0, opEnd})
	passive := cat(leb(1), vec())
	elem := cat(leb(1), []byte{0}, vec()) // passive, funcref, no items
	cases := []struct {
		limit string
		lim   ModuleLimits
		value uint64
		wasm  []byte
		want  string // what the message says
	}{
		{"max_module_size", ModuleLimits{MaxModuleSize: 20}, 20, command(end, nil, nil), "module of"},
		{"max_types", ModuleLimits{MaxTypes: 1}, 1, module(sec(secType, vec(funcType(nil, nil), funcType(nil, nil)))), "2 function types"},
		{"max_functions", ModuleLimits{MaxFunctions: 1}, 1,
			module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0), leb(0))), sec(secCode, vec(fbody(opEnd), fbody(opEnd)))), "2 functions"},
		{"max_functions", ModuleLimits{MaxFunctions: 1}, 1,
			module(sec(secType, vec(funcType(nil, nil))), sec(secImport, vec(cat(str("stint"), str("a"), []byte{0}, leb(0)))),
				sec(secFunction, vec(leb(0))), sec(secCode, vec(fbody(opEnd)))), "2 functions"},
		{"max_imports", ModuleLimits{MaxImports: 1}, 1,
			module(sec(secType, vec(funcType(nil, nil))), sec(secImport, vec(cat(str("stint"), str("a"), []byte{0}, leb(0)), cat(str("stint"), str("b"), []byte{0}, leb(0))))), "2 imports"},
		{"max_globals", ModuleLimits{MaxGlobals: 1}, 1, command(end, [][]byte{sec(secGlobal, vec(global, global))}, nil), "2 globals"},
		{"max_tables", ModuleLimits{MaxTables: 1}, 1, command(end, [][]byte{sec(secTable, vec(table(1), table(1)))}, nil), "2 tables"},
		{"max_table_size", ModuleLimits{MaxTableSize: 10}, 10, command(end, [][]byte{sec(secTable, vec(table(11)))}, nil), "table 0 declares a minimum of 11 entries"},
		{"max_data_segments", ModuleLimits{MaxDataSegments: 1}, 1, command(end, nil, [][]byte{sec(secData, vec(passive, passive))}), "2 data segments"},
		{"max_element_segments", ModuleLimits{MaxElementSegments: 1}, 1, module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0))),
			sec(secTable, vec(table(1))), sec(secElement, vec(elem, elem)), sec(secCode, vec(fbody(opEnd)))), "2 element segments"},
		{"max_element_items", ModuleLimits{MaxElementItems: 3}, 3, module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0))),
			sec(secTable, vec(table(1))), sec(secElement, vec(cat(leb(1), []byte{0}, vec(leb(0), leb(0))), cat(leb(1), []byte{0}, vec(leb(0), leb(0))))),
			sec(secCode, vec(fbody(opEnd)))), "4 or more element items"},
		{"max_exports", ModuleLimits{MaxExports: 1}, 1, module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0))),
			sec(secExport, vec(cat(str("_start"), []byte{0}, leb(0)), cat(str("other"), []byte{0}, leb(0)))), sec(secCode, vec(fbody(opEnd)))), "2 exports"},
		{"max_function_size", ModuleLimits{MaxFunctionSize: 4}, 4, command([]byte{0x01, 0x01, 0x01, 0x01, opEnd}, nil, nil), "function 0 has a body of 6 bytes"},
		{"max_locals", ModuleLimits{MaxLocals: 10}, 10, module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0))),
			sec(secCode, vec(fbodyLocals([][2]uint64{{6, typeI32}, {5, typeI64}}, opEnd)))), "function 0 declares 11 or more locals"},
		{"max_br_table_targets", ModuleLimits{MaxBrTableTargets: 4}, 4,
			command([]byte{opBlock, 0x40, opI32Const, 0, opBrTable, 5, 0, 0, 0, 0, 0, 0, opEnd, opEnd}, nil, nil), "br_table with 5 targets in function 0"},
		{"max_block_depth", ModuleLimits{MaxBlockDepth: 3}, 3,
			command([]byte{opBlock, 0x40, opLoop, 0x40, opI32Const, 0, opIf, 0x40, opEnd, opEnd, opEnd, opEnd}, nil, nil), "blocks nested 4 deep in function 0"},
		{"max_branches_to_label", ModuleLimits{MaxBranchesToLabel: 3}, 3,
			command([]byte{opBlock, 0x40, opI32Const, 0, 0x0d, 0, opI32Const, 0, 0x0d, 0, opI32Const, 0, opBrTable, 1, 0, 0, opEnd, opEnd}, nil, nil),
			"4 or more branches to one block in function 0"},
	}
	for _, c := range cases {
		t.Run(c.limit, func(t *testing.T) {
			lim := c.lim.WithDefaults()
			_, err := prepareModule(c.wasm, &lim, true)
			requireLimit(t, err, c.limit, c.value)
			require.Contains(t, err.Error(), c.want)
			def := ModuleLimits{}.WithDefaults()
			_, err = prepareModule(c.wasm, &def, true)
			require.NoError(t, err, "the default limits let it through")
		})
	}
}

// TestModuleLimitsThroughCompile: Runtime.Compile applies Config.ModuleLimits.
func TestModuleLimitsThroughCompile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := New(ctx, Config{ModuleLimits: ModuleLimits{MaxBlockDepth: 2}})
	require.NoError(t, err)
	defer r.Close(ctx)
	_, err = r.Compile(ctx, wat.MustLoad("shape_nested_loops"))
	requireLimit(t, err, "max_block_depth", 2)
	require.Equal(t, KindInvalidModule, OutcomeFromError(err).Kind)
}

// brTableBomb is a function with a br_table of n targets, all to label 0.
func brTableBomb(n int) []byte {
	code := []byte{opBlock, 0x40, opI32Const, 0, opBrTable}
	code = append(code, leb(uint64(n))...)
	code = append(code, make([]byte, n+1)...)
	return command(append(code, opEnd, opEnd), nil, nil)
}

// nestedBomb is a function with n nested blocks.
func nestedBomb(n int) []byte {
	code := bytes.Repeat([]byte{opBlock, 0x40}, n)
	code = append(code, bytes.Repeat([]byte{opEnd}, n+1)...)
	return command(code, nil, nil)
}

// brIfBomb is a function with n br_if to one block.
// loopsBomb is a command whose functions hold n small loops each
// (`loop (i32.const 0) br_if 0 end`): 8,000 in one function took 50 s to
// compile in checks mode.
func loopsBomb(n, functions int) []byte {
	code := bytes.Repeat([]byte{opLoop, 0x40, opI32Const, 0, 0x0d, 0, opEnd}, n)
	body := fbody(append(code, opEnd)...)
	var fns, bodies [][]byte
	for range functions {
		fns, bodies = append(fns, leb(0)), append(bodies, body)
	}
	return module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(fns...)),
		sec(secExport, vec(cat(str("_start"), []byte{0}, leb(0)))), sec(secCode, vec(bodies...)))
}

func brIfBomb(n int) []byte {
	code := []byte{opBlock, 0x40}
	code = append(code, bytes.Repeat([]byte{opI32Const, 0, 0x0d, 0}, n)...)
	return command(append(code, opEnd, opEnd), nil, nil)
}

// TestBombsRefused: modules wazero would take seconds to minutes to
// compile, or gigabytes to decode, are refused before it sees them, with
// an error that says why. (Without the limits the first three compile in
// 12 s, 25 s and 113 s on a 2-core Xeon; the allocations would be 4 GiB
// and more.)
func TestBombsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := New(ctx, Config{})
	require.NoError(t, err)
	defer r.Close(ctx)
	maxU32 := leb(1<<32 - 1)
	cases := []struct {
		name, want string
		wasm       []byte
	}{
		{"br_table of 150k targets", "br_table with 150000 targets in function 0, over the limit of 16384 (sandbox module limit max_br_table_targets)", brTableBomb(150_000)},
		{"50k nested blocks", "blocks nested 8193 deep in function 0, over the limit of 8192 (sandbox module limit max_block_depth)", nestedBomb(50_000)},
		{"8,000 loops in a function", "1001 loops in function 0, over the limit of 1000 (sandbox module limit max_loops)", loopsBomb(8000, 1)},
		{"101 functions of 1,000 loops", "101000 loops in the module's first 101 functions, over the limit of 100000 (sandbox module limit max_module_loops)", loopsBomb(1000, 101)},
		{"65k br_if to one block", "4097 or more branches to one block in function 0, over the limit of 4096 (sandbox module limit max_branches_to_label)", brIfBomb(65536)},
		{"table of 100M entries", "table 0 declares a minimum of 100000000 entries, over the limit of 1048576 (sandbox module limit max_table_size)",
			command([]byte{opEnd}, [][]byte{sec(secTable, vec(cat([]byte{typeFuncref, 0}, leb(100_000_000))))}, nil)},
		{"2^32-1 locals", "over the limit of 50000 (sandbox module limit max_locals)",
			module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0))), sec(secCode, vec(fbodyLocals([][2]uint64{{1<<32 - 1, typeI32}}, opEnd))))},
		{"data segment of 4 GiB in 30 bytes", "data segment 0 of 4294967295 bytes runs past the section",
			command([]byte{opEnd}, nil, [][]byte{sec(secData, vec(cat(leb(1), maxU32)))})},
		{"2^32-1 function names", "malformed module: name section",
			command([]byte{opEnd}, nil, [][]byte{sec(secCustom, str("name"), []byte{1}, leb(5), maxU32)})},
		{"custom section name of 4 GiB", "malformed module: custom section",
			module(sec(secCustom, maxU32))},
		{"2^32-1 element items", "element segment 0: 4294967295 items declared",
			module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0))), sec(secTable, vec(cat([]byte{typeFuncref, 0}, leb(1)))),
				sec(secElement, vec(cat(leb(1), []byte{0}, maxU32))), sec(secCode, vec(fbody(opEnd))))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.Compile(ctx, c.wasm)
			require.Error(t, err)
			var me *ModuleError
			require.ErrorAs(t, err, &me)
			require.Equal(t, KindInvalidModule, me.Kind)
			require.Contains(t, me.Message, c.want)
		})
	}
}

// TestTableCap: a table with no maximum gets the cap as its maximum, so
// table.grow past it returns -1 and within it works; a declared maximum
// under the cap is kept.
func TestTableCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := New(ctx, Config{ModuleLimits: ModuleLimits{MaxTableSize: 1000}})
	require.NoError(t, err)
	defer r.Close(ctx)
	// _start: exit(table.grow(ref.null, delta) + 1): 0 when the grow fails.
	growProgram := func(limits []byte, delta int32) []byte {
		code := cat([]byte{opRefNull, typeFuncref, opI32Const}, sleb(int64(delta)), []byte{opMiscPrefix, 15, 0, opI32Const, 1, 0x6a, 0x10, 0, opEnd})
		return module(
			sec(secType, vec(funcType(nil, nil), funcType([]byte{typeI32}, nil))),
			sec(secImport, vec(cat(str("wasi_snapshot_preview1"), str("proc_exit"), []byte{0}, leb(1)))),
			sec(secFunction, vec(leb(0))),
			sec(secTable, vec(cat([]byte{typeFuncref}, limits))),
			sec(secMemory, vec([]byte{0, 1})),
			sec(secExport, vec(cat(str("_start"), []byte{0}, leb(1)), cat(str("memory"), []byte{2}, leb(0)))),
			sec(secCode, vec(fbody(code...))))
	}
	exitOf := func(wasm []byte) uint32 {
		t.Helper()
		mod, err := r.Compile(ctx, wasm)
		require.NoError(t, err)
		out, err := r.Run(ctx, mod, Spec{})
		require.NoError(t, err)
		require.Contains(t, []Kind{KindSucceeded, KindFailed}, out.Kind, out.String())
		return out.ExitCode
	}
	noMax := cat([]byte{0}, leb(10))
	require.EqualValues(t, 0, exitOf(growProgram(noMax, 991)), "past the cap of 1000: table.grow returns -1")
	require.EqualValues(t, 11, exitOf(growProgram(noMax, 990)), "up to the cap: it grows (returns the old size, 10)")
	require.EqualValues(t, 0, exitOf(growProgram(cat([]byte{1}, leb(10), leb(1<<27)), 991)), "a larger maximum is capped")
	require.EqualValues(t, 0, exitOf(growProgram(cat([]byte{1}, leb(10), leb(20)), 11)), "a smaller maximum is kept")
	require.EqualValues(t, 11, exitOf(growProgram(cat([]byte{1}, leb(10), leb(20)), 10)))
	// Without the cap, wazero alone lets it grow.
	plain := plainRuntime(t, nil)
	res := runPlain(t, plain, growProgram(noMax, 991), "_start", "")
	require.EqualValues(t, 11, res.exit)
}

// TestRewriteRenumbers: the interrupt and call_stack imports are added
// after the module's imports, and every reference to a function the
// module defines moves up by two: calls, ref.func, elements, exports,
// start, names.
func TestRewriteRenumbers(t *testing.T) {
	t.Parallel()
	// Function 0 is an import; 1 (_start) calls 2, which is in a table,
	// named, and the start function; a global holds ref.func 2.
	wasm := module(
		sec(secType, vec(funcType(nil, nil))),
		sec(secImport, vec(cat(str("stint"), str("progress"), []byte{0}, leb(0)))),
		sec(secFunction, vec(leb(0), leb(0))),
		sec(secTable, vec(cat([]byte{typeFuncref, 0}, leb(1)))),
		sec(secGlobal, vec(cat([]byte{typeFuncref, 0, opRefFunc}, leb(2), []byte{opEnd}))),
		sec(secExport, vec(cat(str("_start"), []byte{0}, leb(1)))),
		sec(secStart, leb(2)),
		sec(secElement, vec(cat(leb(0), []byte{opI32Const, 0, opEnd}, vec(leb(2))))),
		sec(secCode, vec(fbody(opCall, 2, opEnd), fbody(opRefFunc, 2, 0x1a, opEnd))),
		sec(secCustom, str("name"), []byte{1}, leb(11), vec(cat(leb(1), str("start")), cat(leb(2), str("f")))))
	r := plainRuntime(t, nil)
	require.True(t, compiles(r, wasm))
	p := prepareDefault(t, wasm, true)
	require.True(t, compiles(r, p.wasm))
	lim := ModuleLimits{}.WithDefaults()
	info, err := validateModule(p.wasm, &lim)
	require.NoError(t, err)
	require.EqualValues(t, 3, info.importedFuncs, "the interrupt and call_stack functions are imported last")
	require.EqualValues(t, 4, info.start, "start: 2 -> 4")
	require.EqualValues(t, 3, info.globals, "the countdown and call-stack globals are added")
	require.EqualValues(t, 3, info.numTypes, "the interrupt functions' types are added")
	cm, err := r.CompileModule(context.Background(), p.wasm)
	require.NoError(t, err)
	defer cm.Close(context.Background())
	names := map[string]bool{}
	for _, f := range cm.ExportedFunctions() {
		names[f.Name()] = true
		require.EqualValues(t, 3, f.Index(), "_start: 1 -> 3")
	}
	require.Equal(t, map[string]bool{"start": true}, names, "the name section moved with it")
	imports := cm.ImportedFunctions()
	require.Len(t, imports, 3)
	mod, name, _ := imports[1].Import()
	require.Equal(t, interruptModule+"."+interruptFunc, mod+"."+name)
	mod, name, _ = imports[2].Import()
	require.Equal(t, interruptModule+"."+callStackFunc, mod+"."+name)
	require.Contains(t, string(p.wasm), "\x00A\x00\v\x01\x04", "the element of function 2 became 4")
	require.Contains(t, string(p.wasm), "\x03\x05start\x04\x01f", "the names of functions 1 and 2 became 3 and 4")
}

// TestRewriteRefusesUnnamableGlobal: code that names a global index past
// the module's globals (which would name the stop global once added) is
// refused, wherever it is.
func TestRewriteRefusesUnnamableGlobal(t *testing.T) {
	t.Parallel()
	global := sec(secGlobal, vec(cat([]byte{typeI32, 1, opI32Const, 0, opEnd})))
	for name, wasm := range map[string][]byte{
		"global.get":      command([]byte{opGlobalGet, 1, 0x1a, opEnd}, [][]byte{global}, nil),
		"global.set":      command([]byte{opI32Const, 0, opGlobalSet, 1, opEnd}, [][]byte{global}, nil),
		"no globals":      command([]byte{opGlobalGet, 0, 0x1a, opEnd}, nil, nil),
		"data offset":     command([]byte{opEnd}, [][]byte{sec(secMemory, vec([]byte{0, 1})), global}, [][]byte{sec(secData, vec(cat(leb(0), []byte{opGlobalGet, 1, opEnd}, vec())))}),
		"global init":     command([]byte{opEnd}, [][]byte{sec(secGlobal, vec(cat([]byte{typeI32, 0, opGlobalGet, 0, opEnd})))}, nil),
		"exported global": module(sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0))), global, sec(secExport, vec(cat(str("_start"), []byte{0}, leb(0)), cat(str("g"), []byte{3}, leb(1)))), sec(secCode, vec(fbody(opEnd)))),
	} {
		t.Run(name, func(t *testing.T) {
			lim := ModuleLimits{}.WithDefaults()
			_, err := prepareModule(wasm, &lim, true)
			require.ErrorIs(t, err, ErrInvalidModule)
			require.Contains(t, err.Error(), "global")
		})
	}
}

// TestRewriteImports: imported tables and globals are refused as bad
// imports (nothing provides them); imported functions keep their indices.
func TestRewriteImports(t *testing.T) {
	t.Parallel()
	lim := ModuleLimits{}.WithDefaults()
	_, err := prepareModule(module(sec(secImport, vec(cat(str("env"), str("t"), []byte{1, typeFuncref, 0, 1})))), &lim, true)
	require.ErrorIs(t, err, ErrBadImport)
	require.Contains(t, err.Error(), "module imports table env.t, which Stint does not provide")
	_, err = prepareModule(module(sec(secImport, vec(cat(str("env"), str("g"), []byte{3, typeI32, 0})))), &lim, true)
	require.ErrorIs(t, err, ErrBadImport)
	require.Contains(t, err.Error(), "module imports global env.g")
}

// TestRewriteSections: the rewrite's version is in the bytes (so the
// compilation cache key changes with it), DWARF is dropped, the name
// section kept, and the checks are where they belong.
func TestRewriteSections(t *testing.T) {
	t.Parallel()
	// _start (function 0) calls itself and holds two loops.
	loopy := command([]byte{opLoop, 0x40, opEnd, opLoop, 0x40, opCall, 0, opEnd, opEnd}, nil,
		[][]byte{sec(secCustom, str(".debug_info"), []byte{1, 2, 3}), sec(secCustom, str("name"), []byte{1}, leb(8), vec(cat(leb(0), str("start"))))})
	entry := prepareDefault(t, loopy, false)
	loops := prepareDefault(t, loopy, true)
	require.Contains(t, string(entry.wasm), fmt.Sprintf("v%d checks=entry", rewriteVersion))
	require.Contains(t, string(loops.wasm), fmt.Sprintf("v%d checks=entry+loop", rewriteVersion))
	for _, p := range []*prepared{entry, loops} {
		require.NotContains(t, string(p.wasm), ".debug_info")
		require.Contains(t, string(p.wasm), "\x04name")
		require.True(t, compiles(plainRuntime(t, nil), p.wasm))
	}
	entryCall := []byte{opCall, 0, opEnd}     // the entry's slow path: call the interrupt import (function 0)
	loopCall := []byte{opCall, 0, opI64Const} // a loop's: then refill its counter
	require.Equal(t, 1, bytes.Count(entry.wasm, entryCall), "one check at the entry of a function that calls")
	require.Equal(t, 0, bytes.Count(entry.wasm, loopCall))
	require.Equal(t, 0, bytes.Count(loops.wasm, entryCall), "with loop checks, the entry's slow path refills the function's cache")
	require.Equal(t, 3, bytes.Count(loops.wasm, loopCall), "the entry's, and one per loop")
	require.Equal(t, 4, bytes.Count(loops.wasm, []byte{opLoop, 0x40}), "each loop wrapped")
	require.Equal(t, 5, bytes.Count(loops.wasm, []byte{opBlock, 0x40}), "twice, and the body of the function that calls once")
	// A function that calls nothing (no recursion possible) and has no
	// loop is left as it was.
	leaf := prepareDefault(t, command([]byte{opI32Const, 1, 0x1a, opEnd}, nil, nil), true)
	require.Zero(t, bytes.Count(leaf.wasm, entryCall)+bytes.Count(leaf.wasm, loopCall))
	// Rewriting is deterministic.
	require.Equal(t, loops.wasm, prepareDefault(t, loopy, true).wasm)
	// A prepared module is not prepared again: it imports stint:sandbox,
	// which no guest may (it could call interrupt with a made-up count).
	lim := ModuleLimits{}.WithDefaults()
	_, err := prepareModule(loops.wasm, &lim, true)
	var me *ModuleError
	require.ErrorAs(t, err, &me)
	require.Equal(t, KindBadImport, me.Kind)
	require.Contains(t, me.Message, "module imports stint:sandbox.interrupt")
}

// terminatingFixtures are the .wat fixtures that end on their own when
// run with no stop request, and their stdin.
var terminatingFixtures = map[string]string{
	"noop": "", "echo": "some input\n", "exit3": "", "trap": "", "recursion": "", "args_env": "",
	"badptr": "", "badptr_load": "", "bigmem": "", "checkpoint": "", "dirty": "", "memgrow": "",
	"progress": "", "stdin": "abc", "unknown_import": "",
}

// TestRewriteEquivalentFixtures: every fixture that ends computes the same
// (stdout, stderr, exit code, trap, final memory) rewritten, in both modes,
// as the original, in plain wazero.
func TestRewriteEquivalentFixtures(t *testing.T) {
	t.Parallel()
	r := plainRuntime(t, nil)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range terminatingFixtures {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		if name == "unknown_import" {
			continue // wazero cannot instantiate it at all
		}
		wasm := wat.MustLoad(name)
		want := runPlain(t, r, wasm, "_start", terminatingFixtures[name])
		for _, loops := range []bool{false, true} {
			p := prepareDefault(t, wasm, loops)
			got := runPlain(t, r, p.wasm, "_start", terminatingFixtures[name])
			if want.err == "stack overflow" {
				// The call-stack limit ends it first.
				require.Contains(t, got.err, ErrCallStack.Error(), name)
				got.err = want.err
			}
			require.Equal(t, want, got, "%s (loop checks %v)", name, loops)
		}
	}
}

// TestRewriteEquivalentGoGuests: the example Go guests compute the same
// rewritten as originally.
func TestRewriteEquivalentGoGuests(t *testing.T) {
	t.Parallel()
	cache, err := wazero.NewCompilationCacheWithDir(testwasm.CompileCacheDir(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cache.Close(context.Background()) })
	r := plainRuntime(t, cache)
	for guest, input := range map[string]string{"hello": "hello, stint\n", "primes": "30000 10000"} {
		wasm, err := os.ReadFile(testwasm.GoGuest(t, guest))
		require.NoError(t, err)
		want := runPlain(t, r, wasm, "_start", input)
		require.NotEmpty(t, want.stdout, guest)
		for _, loops := range []bool{false, true} {
			p := prepareDefault(t, wasm, loops)
			got := runPlain(t, r, p.wasm, "_start", input)
			require.Equal(t, want.stdout, got.stdout, "%s (loop checks %v)", guest, loops)
			require.Equal(t, want.stderr, got.stderr)
			require.Equal(t, want.exit, got.exit)
			require.Equal(t, want.err, got.err)
		}
	}
}

// TestRewriteEquivalentRandomPrograms: random programs (loops, calls,
// br_table, traps) compute the same results, globals' effects and memory
// rewritten as originally.
func TestRewriteEquivalentRandomPrograms(t *testing.T) {
	t.Parallel()
	r := plainRuntime(t, nil)
	n := 300
	if testing.Short() {
		n = 50
	}
	traps, starts := 0, 0
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 1))
		wasm := randProgram(rng)
		require.True(t, compiles(r, wasm), "seed %d: the generator wrote an invalid module", seed)
		args := [][2]uint64{{0, 0}, {uint64(rng.Uint32()), uint64(rng.Uint32())}, {1, 0xffffffff}}
		if bytes.Contains(wasm, []byte{secStart, 1}) {
			starts++ // roughly: the start section's header (for the log)
		}
		for _, loops := range []bool{false, true} {
			p := prepareDefault(t, wasm, loops)
			for _, a := range args {
				want := runPlain(t, r, wasm, "run", "", a[0], a[1])
				got := runPlain(t, r, p.wasm, "run", "", a[0], a[1])
				require.Equal(t, want, got, "seed %d, args %v, loop checks %v", seed, a, loops)
				if want.err != "" && !loops {
					traps++
				}
			}
		}
	}
	t.Logf("%d programs, %d with a start function, %d runs trapped", n, starts, traps)
	require.NotZero(t, starts)
}

// FuzzPrepare: prepareModule never panics; what it accepts it can
// decode again, and wazero compiles the rewrite if and only if it
// compiles the original.
func FuzzPrepare(f *testing.F) {
	for _, name := range wat.Names() {
		f.Add(wat.MustLoad(name))
	}
	for seed := range uint64(20) {
		f.Add(randProgram(rand.New(rand.NewPCG(seed, 2))))
	}
	f.Add(brTableBomb(20))
	f.Add(nestedBomb(20))
	r := plainRuntime(f, nil)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		lim := ModuleLimits{}.WithDefaults()
		for _, loops := range []bool{false, true} {
			p, err := prepareModule(wasm, &lim, loops)
			if err != nil {
				var me *ModuleError
				require.ErrorAs(t, err, &me)
				continue
			}
			again := ModuleLimits{}.WithDefaults()
			again.MaxModuleSize, again.MaxFunctionSize = 1<<30, 1<<30
			_, err = validateModule(p.wasm, &again)
			require.NoError(t, err, "the rewrite decodes")
			if len(wasm) >= 64<<10 { // compile only small inputs: it is the slow part
				continue
			}
			origErr := compileErr(r, wasm)
			rewriteErr := compileErr(r, p.wasm)
			if origErr != nil && rewriteErr == nil && strings.Contains(origErr.Error(), "custom section") {
				// wazero fails to read an empty custom section at the very
				// end of a module ("EOF"); the rewrite appends its own.
				continue
			}
			require.Equal(t, origErr == nil, rewriteErr == nil,
				"wazero compiles the rewrite iff it compiles the original: %v / %v", origErr, rewriteErr)
		}
	})
}

// TestStatsOfBuiltGuests logs the values the Go guests reach for each
// limit (the defaults' comments quote them). It needs `make wasm`.
func TestStatsOfBuiltGuests(t *testing.T) {
	files, _ := filepath.Glob("../wasm-examples/build/*.wasm")
	if len(files) == 0 {
		t.Skip("no guests in wasm-examples/build: run make wasm")
	}
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		require.NoError(t, err)
		lim := ModuleLimits{}.WithDefaults()
		info, err := validateModule(wasm, &lim)
		require.NoError(t, err)
		s := info.secs[info.codeSec]
		cr := wreader{b: wasm[s.start:s.end]}
		n, _ := cr.u32()
		var maxBody, maxLocals, maxDepth, maxBrTable, maxBranches, loops, maxLoops, maxBlocks int
		for i := uint32(0); i < n; i++ {
			size, _ := cr.u32()
			body, _ := cr.bytes(uint64(size))
			scan, err := scanBody(body, info.bodyEnv(&lim, info.importedFuncs+i, false), bodyScan{})
			require.NoError(t, err)
			maxBody, maxLocals = max(maxBody, int(size)), max(maxLocals, int(scan.locals))
			maxDepth, maxBrTable = max(maxDepth, int(scan.maxDepth)), max(maxBrTable, int(scan.maxBrTable))
			maxBranches, loops = max(maxBranches, int(scan.maxBranches)), loops+len(scan.loops)
			maxLoops, maxBlocks = max(maxLoops, len(scan.loops)), max(maxBlocks, int(scan.blocks))
		}
		t.Logf("%s: %d bytes, %d types, %d functions, %d globals, tables %+v, %d exports; largest body %d bytes, "+
			"locals %d, depth %d, br_table %d, branches to a label %d; %d loops, at most %d in a function; at most %d blocks in a function", filepath.Base(f), len(wasm), info.numTypes,
			len(info.funcTypes), info.globals, info.tables, len(info.exports), maxBody, maxLocals, maxDepth, maxBrTable, maxBranches, loops, maxLoops, maxBlocks)
	}
}

// TestAttemptDeadline: a run is timed out when its own deadline ended it,
// even if the caller was cancelled while it stopped; forced when the caller
// ended it first, by cancelling or by an earlier deadline of its own.
func TestAttemptDeadline(t *testing.T) {
	t.Parallel()
	past := time.Now().Add(-time.Second)
	caller, cancel := context.WithCancel(context.Background())
	hard, cancelHard := context.WithDeadline(caller, past)
	defer cancelHard()
	<-hard.Done()
	require.True(t, attemptDeadline(caller, hard, past))
	cancel() // the caller gives up too, later
	require.True(t, attemptDeadline(caller, hard, past), "still the deadline's doing")

	caller, cancel = context.WithCancel(context.Background())
	cancel()
	hard, cancelHard = context.WithDeadline(caller, time.Now().Add(time.Hour))
	defer cancelHard()
	require.False(t, attemptDeadline(caller, hard, time.Now().Add(time.Hour)), "cancelled by the caller")

	early, cancelEarly := context.WithDeadline(context.Background(), past.Add(-time.Second))
	defer cancelEarly()
	hard, cancelHard = context.WithDeadline(early, past)
	defer cancelHard()
	require.False(t, attemptDeadline(early, hard, past), "the caller's own deadline came first")
	require.False(t, attemptDeadline(context.Background(), context.Background(), time.Time{}))
}

// TestRewriteRedefinesLoopValuesExactly: the slow path of a loop's check
// redefines the values the loop carries (see redefine); a float carried
// through it, NaN payloads and the sign of zero included, comes out bit
// for bit, in a loop long enough for the slow path to run many times.
func TestRewriteRedefinesLoopValuesExactly(t *testing.T) {
	t.Parallel()
	// run(bits i64) i64: x f64 and y f32 from bits, carried 200,000 times
	// round a loop (read, then written), then their bits xor'ed.
	code := cat(
		[]byte{opLocalGet, 0, 0xbf, opLocalSet, 1},       // x = f64.reinterpret(bits)
		[]byte{opLocalGet, 0, 0xa7, 0xbe, opLocalSet, 2}, // y = f32.reinterpret(wrap(bits))
		[]byte{opLocalGet, 0, opLocalSet, 4},             // z = bits
		[]byte{opI32Const}, sleb(200_000), []byte{opLocalSet, 3},
		[]byte{opLoop, 0x40,
			opLocalGet, 1, opLocalSet, 1, opLocalGet, 2, opLocalSet, 2, opLocalGet, 4, opLocalSet, 4,
			opLocalGet, 3, opI32Const, 1, 0x6b, opLocalTee, 3, opBrIf, 0, opEnd},
		[]byte{opLocalGet, 1, 0xbd, opLocalGet, 2, 0xbc, 0xad, 0x85, opLocalGet, 4, 0x85, opEnd}, // i64.xor
	)
	wasm := module(
		sec(secType, vec(funcType([]byte{typeI64}, []byte{typeI64}))),
		sec(secFunction, vec(leb(0))),
		sec(secExport, vec(cat(str("run"), []byte{0}, leb(0)))),
		sec(secCode, vec(fbodyLocals([][2]uint64{{1, typeF64}, {1, typeF32}, {1, typeI32}, {1, typeI64}}, code...))),
	)
	r := plainRuntime(t, nil)
	p := prepareDefault(t, wasm, true)
	for _, bits := range []uint64{0x7ff4000000000001, 0x8000000000000000, 0xfff8dead7fa00001, 0x00000000ff800001, 1} {
		want := runPlain(t, r, wasm, "run", "", bits)
		got := runPlain(t, r, p.wasm, "run", "", bits)
		require.Empty(t, want.err)
		require.Equal(t, want, got, "bits %#x", bits)
	}
	// The rewrite does redefine them: the slow path reads each local.
	var scan bodyScan
	lim := ModuleLimits{}.WithDefaults()
	info, err := validateModule(wasm, &lim)
	require.NoError(t, err)
	body := wasm[info.secs[info.codeSec].start:]
	r2 := wreader{b: body}
	_, _ = r2.u32()
	size, _ := r2.u32()
	fb, _ := r2.bytes(uint64(size))
	scan, err = scanBody(fb, info.bodyEnv(&lim, 0, true), scan)
	require.NoError(t, err)
	require.Len(t, scan.loops, 1)
	require.Equal(t, []uint32{1, 2, 4, 3}, scan.loopSets[scan.loops[0].setsStart:scan.loops[0].setsEnd],
		"the loop's carried locals, in the order of their first access")
}
