package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
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
	end := []byte{wasmbin.OpEnd}
	table := func(min uint32) []byte {
		return wasmtest.Cat([]byte{wasmbin.TypeFuncref, 0}, wasmtest.LEB(uint64(min)))
	}
	global := wasmtest.Cat([]byte{wasmbin.TypeI32, 0, wasmbin.OpI32Const, 0, wasmbin.OpEnd})
	passive := wasmtest.Cat(wasmtest.LEB(1), wasmtest.Vec())
	elem := wasmtest.Cat(wasmtest.LEB(1), []byte{0}, wasmtest.Vec()) // passive, funcref, no items
	cases := []struct {
		limit string
		lim   ModuleLimits
		value uint64
		wasm  []byte
		want  string // what the message says
	}{
		{"max_module_size", ModuleLimits{MaxModuleSize: 20}, 20, wasmtest.Command(end, nil, nil), "module of"},
		{"max_types", ModuleLimits{MaxTypes: 1}, 1, wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil), wasmtest.FuncType(nil, nil)))), "2 function types"},
		{"max_functions", ModuleLimits{MaxFunctions: 1}, 1,
			wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd), wasmtest.FBody(wasmbin.OpEnd)))), "2 functions"},
		{"max_functions", ModuleLimits{MaxFunctions: 1}, 1,
			wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("stint"), wasmtest.Str("a"), []byte{0}, wasmtest.LEB(0)))),
				wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd)))), "2 functions"},
		{"max_imports", ModuleLimits{MaxImports: 1}, 1,
			wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("stint"), wasmtest.Str("a"), []byte{0}, wasmtest.LEB(0)), wasmtest.Cat(wasmtest.Str("stint"), wasmtest.Str("b"), []byte{0}, wasmtest.LEB(0))))), "2 imports"},
		{"max_globals", ModuleLimits{MaxGlobals: 1}, 1, wasmtest.Command(end, [][]byte{wasmtest.Sec(wasmbin.SecGlobal, wasmtest.Vec(global, global))}, nil), "2 globals"},
		{"max_tables", ModuleLimits{MaxTables: 1}, 1, wasmtest.Command(end, [][]byte{wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(table(1), table(1)))}, nil), "2 tables"},
		{"max_table_size", ModuleLimits{MaxTableSize: 10}, 10, wasmtest.Command(end, [][]byte{wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(table(11)))}, nil), "table 0 declares a minimum of 11 entries"},
		{"max_data_segments", ModuleLimits{MaxDataSegments: 1}, 1, wasmtest.Command(end, nil, [][]byte{wasmtest.Sec(wasmbin.SecData, wasmtest.Vec(passive, passive))}), "2 data segments"},
		{"max_element_segments", ModuleLimits{MaxElementSegments: 1}, 1, wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))),
			wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(table(1))), wasmtest.Sec(wasmbin.SecElement, wasmtest.Vec(elem, elem)), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd)))), "2 element segments"},
		{"max_element_items", ModuleLimits{MaxElementItems: 3}, 3, wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))),
			wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(table(1))), wasmtest.Sec(wasmbin.SecElement, wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(1), []byte{0}, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))), wasmtest.Cat(wasmtest.LEB(1), []byte{0}, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))))),
			wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd)))), "4 or more element items"},
		{"max_exports", ModuleLimits{MaxExports: 1}, 1, wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))),
			wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(0)), wasmtest.Cat(wasmtest.Str("other"), []byte{0}, wasmtest.LEB(0)))), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd)))), "2 exports"},
		{"max_function_size", ModuleLimits{MaxFunctionSize: 4}, 4, wasmtest.Command([]byte{0x01, 0x01, 0x01, 0x01, wasmbin.OpEnd}, nil, nil), "function 0 has a body of 6 bytes"},
		{"max_locals", ModuleLimits{MaxLocals: 10}, 10, wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))),
			wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBodyLocals([][2]uint64{{6, wasmbin.TypeI32}, {5, wasmbin.TypeI64}}, wasmbin.OpEnd)))), "function 0 declares 11 or more locals"},
		{"max_br_table_targets", ModuleLimits{MaxBrTableTargets: 4}, 4,
			wasmtest.Command([]byte{wasmbin.OpBlock, 0x40, wasmbin.OpI32Const, 0, wasmbin.OpBrTable, 5, 0, 0, 0, 0, 0, 0, wasmbin.OpEnd, wasmbin.OpEnd}, nil, nil), "br_table with 5 targets in function 0"},
		{"max_block_depth", ModuleLimits{MaxBlockDepth: 3}, 3,
			wasmtest.Command([]byte{wasmbin.OpBlock, 0x40, wasmbin.OpLoop, 0x40, wasmbin.OpI32Const, 0, wasmbin.OpIf, 0x40, wasmbin.OpEnd, wasmbin.OpEnd, wasmbin.OpEnd, wasmbin.OpEnd}, nil, nil), "blocks nested 4 deep in function 0"},
		{"max_branches_to_label", ModuleLimits{MaxBranchesToLabel: 3}, 3,
			wasmtest.Command([]byte{wasmbin.OpBlock, 0x40, wasmbin.OpI32Const, 0, 0x0d, 0, wasmbin.OpI32Const, 0, 0x0d, 0, wasmbin.OpI32Const, 0, wasmbin.OpBrTable, 1, 0, 0, wasmbin.OpEnd, wasmbin.OpEnd}, nil, nil),
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
	code := bytes.Repeat([]byte{wasmbin.OpLoop, 0x40, wasmbin.OpI32Const, 0, 0x0d, 0, wasmbin.OpEnd}, n)
	body := wasmtest.FBody(append(code, wasmbin.OpEnd)...)
	var fns, bodies [][]byte
	for range functions {
		fns, bodies = append(fns, wasmtest.LEB(0)), append(bodies, body)
	}
	return wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(fns...)),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(0)))), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(bodies...)))
}

func brIfBomb(n int) []byte {
	code := []byte{wasmbin.OpBlock, 0x40}
	code = append(code, bytes.Repeat([]byte{wasmbin.OpI32Const, 0, 0x0d, 0}, n)...)
	return wasmtest.Command(append(code, wasmbin.OpEnd, wasmbin.OpEnd), nil, nil)
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
	maxU32 := wasmtest.LEB(1<<32 - 1)
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
			wasmtest.Command([]byte{wasmbin.OpEnd}, [][]byte{wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(wasmtest.Cat([]byte{wasmbin.TypeFuncref, 0}, wasmtest.LEB(100_000_000))))}, nil)},
		{"2^32-1 locals", "over the limit of 50000 (sandbox module limit max_locals)",
			wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBodyLocals([][2]uint64{{1<<32 - 1, wasmbin.TypeI32}}, wasmbin.OpEnd))))},
		{"data segment of 4 GiB in 30 bytes", "data segment 0 of 4294967295 bytes runs past the section",
			wasmtest.Command([]byte{wasmbin.OpEnd}, nil, [][]byte{wasmtest.Sec(wasmbin.SecData, wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(1), maxU32)))})},
		{"2^32-1 function names", "malformed module: name section",
			wasmtest.Command([]byte{wasmbin.OpEnd}, nil, [][]byte{wasmtest.Sec(wasmbin.SecCustom, wasmtest.Str("name"), []byte{1}, wasmtest.LEB(5), maxU32)})},
		{"custom section name of 4 GiB", "malformed module: custom section",
			wasmtest.Module(wasmtest.Sec(wasmbin.SecCustom, maxU32))},
		{"2^32-1 element items", "element segment 0: 4294967295 items declared",
			wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))), wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(wasmtest.Cat([]byte{wasmbin.TypeFuncref, 0}, wasmtest.LEB(1)))),
				wasmtest.Sec(wasmbin.SecElement, wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(1), []byte{0}, maxU32))), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd))))},
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
		code := wasmtest.Cat([]byte{wasmbin.OpRefNull, wasmbin.TypeFuncref, wasmbin.OpI32Const}, wasmtest.SLEB(int64(delta)), []byte{wasmbin.OpMiscPrefix, 15, 0, wasmbin.OpI32Const, 1, 0x6a, 0x10, 0, wasmbin.OpEnd})
		return wasmtest.Module(
			wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil), wasmtest.FuncType([]byte{wasmbin.TypeI32}, nil))),
			wasmtest.Sec(wasmbin.SecImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("wasi_snapshot_preview1"), wasmtest.Str("proc_exit"), []byte{0}, wasmtest.LEB(1)))),
			wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))),
			wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(wasmtest.Cat([]byte{wasmbin.TypeFuncref}, limits))),
			wasmtest.Sec(wasmbin.SecMemory, wasmtest.Vec([]byte{0, 1})),
			wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(1)), wasmtest.Cat(wasmtest.Str("memory"), []byte{2}, wasmtest.LEB(0)))),
			wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(code...))))
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
	noMax := wasmtest.Cat([]byte{0}, wasmtest.LEB(10))
	require.EqualValues(t, 0, exitOf(growProgram(noMax, 991)), "past the cap of 1000: table.grow returns -1")
	require.EqualValues(t, 11, exitOf(growProgram(noMax, 990)), "up to the cap: it grows (returns the old size, 10)")
	require.EqualValues(t, 0, exitOf(growProgram(wasmtest.Cat([]byte{1}, wasmtest.LEB(10), wasmtest.LEB(1<<27)), 991)), "a larger maximum is capped")
	require.EqualValues(t, 0, exitOf(growProgram(wasmtest.Cat([]byte{1}, wasmtest.LEB(10), wasmtest.LEB(20)), 11)), "a smaller maximum is kept")
	require.EqualValues(t, 11, exitOf(growProgram(wasmtest.Cat([]byte{1}, wasmtest.LEB(10), wasmtest.LEB(20)), 10)))
	// Without the cap, wazero alone lets it grow: WASI and Stint's host
	// module (with no run state: stop_requested is 0, saves fail).
	plain := wasmtest.PlainRuntime(t, nil, func(ctx context.Context, r wazero.Runtime) error {
		if err := instantiateHostModule(ctx, r); err != nil {
			return err
		}
		return instantiateInterruptModule(ctx, r)
	})
	res := wasmtest.RunPlain(t, plain, growProgram(noMax, 991), "_start", "")
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
