package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
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
			_, err := prepareModule(c.wasm, &lim, true, false)
			requireLimit(t, err, c.limit, c.value)
			require.Contains(t, err.Error(), c.want)
			def := ModuleLimits{}.WithDefaults()
			_, err = prepareModule(c.wasm, &def, true, false)
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
		{"br_table of 150k targets", "br_table with 150000 targets in function 0, over the limit of 16384 (sandbox module limit max_br_table_targets)", wasmtest.BrTableBomb(150_000)},
		{"50k nested blocks", "blocks nested 8193 deep in function 0, over the limit of 8192 (sandbox module limit max_block_depth)", wasmtest.NestedBomb(50_000)},
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
	require.EqualValues(t, 11, res.Exit)
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
