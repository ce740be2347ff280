package rewrite

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

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// TestRewriteRenumbers: the interrupt and call_stack imports are added
// after the module's imports, and every reference to a function the
// module defines moves up by two: calls, ref.func, elements, exports,
// start, names.
func TestRewriteRenumbers(t *testing.T) {
	t.Parallel()
	// Function 0 is an import; 1 (_start) calls 2, which is in a table,
	// named, and the start function; a global holds ref.func 2.
	wasm := wasmtest.Module(
		wasmtest.Sec(secType, wasmtest.Vec(wasmtest.FuncType(nil, nil))),
		wasmtest.Sec(secImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("stint"), wasmtest.Str("progress"), []byte{0}, wasmtest.LEB(0)))),
		wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0), wasmtest.LEB(0))),
		wasmtest.Sec(secTable, wasmtest.Vec(wasmtest.Cat([]byte{typeFuncref, 0}, wasmtest.LEB(1)))),
		wasmtest.Sec(secGlobal, wasmtest.Vec(wasmtest.Cat([]byte{typeFuncref, 0, opRefFunc}, wasmtest.LEB(2), []byte{opEnd}))),
		wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(1)))),
		wasmtest.Sec(secStart, wasmtest.LEB(2)),
		wasmtest.Sec(secElement, wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(0), []byte{opI32Const, 0, opEnd}, wasmtest.Vec(wasmtest.LEB(2))))),
		wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBody(opCall, 2, opEnd), wasmtest.FBody(opRefFunc, 2, 0x1a, opEnd))),
		wasmtest.Sec(secCustom, wasmtest.Str("name"), []byte{1}, wasmtest.LEB(11), wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(1), wasmtest.Str("start")), wasmtest.Cat(wasmtest.LEB(2), wasmtest.Str("f")))))
	r := plainRuntime(t, nil)
	require.True(t, compiles(r, wasm))
	p := prepareDefault(t, wasm, true)
	require.True(t, compiles(r, p.Wasm))
	lim := withDefaults(Limits{})
	info, err := validateModule(p.Wasm, &lim)
	require.NoError(t, err)
	require.EqualValues(t, 3, info.importedFuncs, "the interrupt and call_stack functions are imported last")
	require.EqualValues(t, 4, info.start, "start: 2 -> 4")
	require.EqualValues(t, 3, info.globals, "the countdown and call-stack globals are added")
	require.EqualValues(t, 3, info.numTypes, "the interrupt functions' types are added")
	cm, err := r.CompileModule(context.Background(), p.Wasm)
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
	require.Equal(t, InterruptModule+"."+InterruptFunc, mod+"."+name)
	mod, name, _ = imports[2].Import()
	require.Equal(t, InterruptModule+"."+CallStackFunc, mod+"."+name)
	require.Contains(t, string(p.Wasm), "\x00A\x00\v\x01\x04", "the element of function 2 became 4")
	require.Contains(t, string(p.Wasm), "\x03\x05start\x04\x01f", "the names of functions 1 and 2 became 3 and 4")
}

// TestRewriteRefusesUnnamableGlobal: code that names a global index past
// the module's globals (which would name the stop global once added) is
// refused, wherever it is.
func TestRewriteRefusesUnnamableGlobal(t *testing.T) {
	t.Parallel()
	global := wasmtest.Sec(secGlobal, wasmtest.Vec(wasmtest.Cat([]byte{typeI32, 1, opI32Const, 0, opEnd})))
	for name, wasm := range map[string][]byte{
		"global.get":      wasmtest.Command([]byte{opGlobalGet, 1, 0x1a, opEnd}, [][]byte{global}, nil),
		"global.set":      wasmtest.Command([]byte{opI32Const, 0, opGlobalSet, 1, opEnd}, [][]byte{global}, nil),
		"no globals":      wasmtest.Command([]byte{opGlobalGet, 0, 0x1a, opEnd}, nil, nil),
		"data offset":     wasmtest.Command([]byte{opEnd}, [][]byte{wasmtest.Sec(secMemory, wasmtest.Vec([]byte{0, 1})), global}, [][]byte{wasmtest.Sec(secData, wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(0), []byte{opGlobalGet, 1, opEnd}, wasmtest.Vec())))}),
		"global init":     wasmtest.Command([]byte{opEnd}, [][]byte{wasmtest.Sec(secGlobal, wasmtest.Vec(wasmtest.Cat([]byte{typeI32, 0, opGlobalGet, 0, opEnd})))}, nil),
		"exported global": wasmtest.Module(wasmtest.Sec(secType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0))), global, wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(0)), wasmtest.Cat(wasmtest.Str("g"), []byte{3}, wasmtest.LEB(1)))), wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBody(opEnd)))),
	} {
		t.Run(name, func(t *testing.T) {
			lim := withDefaults(Limits{})
			_, err := Prepare(wasm, &lim, true)
			requireRefused(t, err, false)
			require.Contains(t, err.Error(), "global")
		})
	}
}

// TestRewriteImports: imported tables and globals are refused as bad
// imports (nothing provides them); imported functions keep their indices.
func TestRewriteImports(t *testing.T) {
	t.Parallel()
	lim := withDefaults(Limits{})
	_, err := Prepare(wasmtest.Module(wasmtest.Sec(secImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("env"), wasmtest.Str("t"), []byte{1, typeFuncref, 0, 1})))), &lim, true)
	requireRefused(t, err, true)
	require.Contains(t, err.Error(), "module imports table env.t, which Stint does not provide")
	_, err = Prepare(wasmtest.Module(wasmtest.Sec(secImport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("env"), wasmtest.Str("g"), []byte{3, typeI32, 0})))), &lim, true)
	requireRefused(t, err, true)
	require.Contains(t, err.Error(), "module imports global env.g")
}

// TestRewriteSections: the rewrite's version is in the bytes (so the
// compilation cache key changes with it), DWARF is dropped, the name
// section kept, and the checks are where they belong.
func TestRewriteSections(t *testing.T) {
	t.Parallel()
	// _start (function 0) calls itself and holds two loops.
	loopy := wasmtest.Command([]byte{opLoop, 0x40, opEnd, opLoop, 0x40, opCall, 0, opEnd, opEnd}, nil,
		[][]byte{wasmtest.Sec(secCustom, wasmtest.Str(".debug_info"), []byte{1, 2, 3}), wasmtest.Sec(secCustom, wasmtest.Str("name"), []byte{1}, wasmtest.LEB(8), wasmtest.Vec(wasmtest.Cat(wasmtest.LEB(0), wasmtest.Str("start"))))})
	entry := prepareDefault(t, loopy, false)
	loops := prepareDefault(t, loopy, true)
	require.Contains(t, string(entry.Wasm), fmt.Sprintf("v%d checks=entry", Version))
	require.Contains(t, string(loops.Wasm), fmt.Sprintf("v%d checks=entry+loop", Version))
	for _, p := range []*Prepared{entry, loops} {
		require.NotContains(t, string(p.Wasm), ".debug_info")
		require.Contains(t, string(p.Wasm), "\x04name")
		require.True(t, compiles(plainRuntime(t, nil), p.Wasm))
	}
	entryCall := []byte{opCall, 0, opEnd}     // the entry's slow path: call the interrupt import (function 0)
	loopCall := []byte{opCall, 0, opI64Const} // a loop's: then refill its counter
	require.Equal(t, 2, bytes.Count(entry.Wasm, entryCall), "a check at the entry of a function that calls, and its exit check (rewrite version 22: the way back up is charged and tested)")
	require.Equal(t, 0, bytes.Count(entry.Wasm, loopCall))
	require.Equal(t, 0, bytes.Count(loops.Wasm, entryCall), "with loop checks, the entry's slow path refills the function's cache")
	require.Equal(t, 4, bytes.Count(loops.Wasm, loopCall), "the entry's, the exit's, and one per loop")
	require.Equal(t, 4, bytes.Count(loops.Wasm, []byte{opLoop, 0x40}), "each loop wrapped")
	require.Equal(t, 5, bytes.Count(loops.Wasm, []byte{opBlock, 0x40}), "twice, and the body of the function that calls once")
	// A function that calls nothing (no recursion possible) and has no
	// loop is left as it was.
	leaf := prepareDefault(t, wasmtest.Command([]byte{opI32Const, 1, 0x1a, opEnd}, nil, nil), true)
	require.Zero(t, bytes.Count(leaf.Wasm, entryCall)+bytes.Count(leaf.Wasm, loopCall))
	// Rewriting is deterministic.
	require.Equal(t, loops.Wasm, prepareDefault(t, loopy, true).Wasm)
	// A prepared module is not prepared again: it imports stint:sandbox,
	// which no guest may (it could call interrupt with a made-up count).
	lim := withDefaults(Limits{})
	_, err := Prepare(loops.Wasm, &lim, true)
	var me *Error
	require.ErrorAs(t, err, &me)
	require.True(t, me.BadImport)
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
		want := wasmtest.RunPlain(t, r, wasm, "_start", terminatingFixtures[name])
		for _, loops := range []bool{false, true} {
			p := prepareDefault(t, wasm, loops)
			got := wasmtest.RunPlain(t, r, p.Wasm, "_start", terminatingFixtures[name])
			if want.Err == "stack overflow" {
				// The call-stack limit ends it first.
				require.Contains(t, got.Err, errCallStack.Error(), name)
				got.Err = want.Err
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
		want := wasmtest.RunPlain(t, r, wasm, "_start", input)
		require.NotEmpty(t, want.Stdout, guest)
		for _, loops := range []bool{false, true} {
			p := prepareDefault(t, wasm, loops)
			got := wasmtest.RunPlain(t, r, p.Wasm, "_start", input)
			require.Equal(t, want.Stdout, got.Stdout, "%s (loop checks %v)", guest, loops)
			require.Equal(t, want.Stderr, got.Stderr)
			require.Equal(t, want.Exit, got.Exit)
			require.Equal(t, want.Err, got.Err)
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
				want := wasmtest.RunPlain(t, r, wasm, "run", "", a[0], a[1])
				got := wasmtest.RunPlain(t, r, p.Wasm, "run", "", a[0], a[1])
				require.Equal(t, want, got, "seed %d, args %v, loop checks %v", seed, a, loops)
				if want.Err != "" && !loops {
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
	f.Add(wasmtest.BrTableBomb(20))
	f.Add(wasmtest.NestedBomb(20))
	r := plainRuntime(f, nil)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		lim := withDefaults(Limits{})
		for _, loops := range []bool{false, true} {
			p, err := Prepare(wasm, &lim, loops)
			if err != nil {
				var me *Error
				require.ErrorAs(t, err, &me)
				continue
			}
			again := withDefaults(Limits{})
			again.MaxModuleSize, again.MaxFunctionSize = 1<<30, 1<<30
			_, err = validateModule(p.Wasm, &again)
			require.NoError(t, err, "the rewrite decodes")
			if len(wasm) >= 64<<10 { // compile only small inputs: it is the slow part
				continue
			}
			origErr := compileErr(r, wasm)
			rewriteErr := compileErr(r, p.Wasm)
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
		lim := withDefaults(Limits{})
		info, err := validateModule(wasm, &lim)
		require.NoError(t, err)
		s := info.secs[info.codeSec]
		cr := wreader{wasmbin.Reader{B: wasm[s.Start:s.End]}}
		n, _ := cr.U32()
		var maxBody, maxLocals, maxDepth, maxBrTable, maxBranches, loops, maxLoops, maxBlocks int
		for i := uint32(0); i < n; i++ {
			size, _ := cr.U32()
			body, _ := cr.Bytes(uint64(size))
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

// TestRewriteRedefinesLoopValuesExactly: the slow path of a loop's check
// redefines the values the loop carries (see redefine); a float carried
// through it, NaN payloads and the sign of zero included, comes out bit
// for bit, in a loop long enough for the slow path to run many times.
func TestRewriteRedefinesLoopValuesExactly(t *testing.T) {
	t.Parallel()
	// run(bits i64) i64: x f64 and y f32 from bits, carried 200,000 times
	// round a loop (read, then written), then their bits xor'ed.
	code := wasmtest.Cat(
		[]byte{opLocalGet, 0, 0xbf, opLocalSet, 1},       // x = f64.reinterpret(bits)
		[]byte{opLocalGet, 0, 0xa7, 0xbe, opLocalSet, 2}, // y = f32.reinterpret(wrap(bits))
		[]byte{opLocalGet, 0, opLocalSet, 4},             // z = bits
		[]byte{opI32Const}, wasmtest.SLEB(200_000), []byte{opLocalSet, 3},
		[]byte{opLoop, 0x40,
			opLocalGet, 1, opLocalSet, 1, opLocalGet, 2, opLocalSet, 2, opLocalGet, 4, opLocalSet, 4,
			opLocalGet, 3, opI32Const, 1, 0x6b, opLocalTee, 3, opBrIf, 0, opEnd},
		[]byte{opLocalGet, 1, 0xbd, opLocalGet, 2, 0xbc, 0xad, 0x85, opLocalGet, 4, 0x85, opEnd}, // i64.xor
	)
	wasm := wasmtest.Module(
		wasmtest.Sec(secType, wasmtest.Vec(wasmtest.FuncType([]byte{typeI64}, []byte{typeI64}))),
		wasmtest.Sec(secFunction, wasmtest.Vec(wasmtest.LEB(0))),
		wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("run"), []byte{0}, wasmtest.LEB(0)))),
		wasmtest.Sec(secCode, wasmtest.Vec(wasmtest.FBodyLocals([][2]uint64{{1, typeF64}, {1, typeF32}, {1, typeI32}, {1, typeI64}}, code...))),
	)
	r := plainRuntime(t, nil)
	p := prepareDefault(t, wasm, true)
	for _, bits := range []uint64{0x7ff4000000000001, 0x8000000000000000, 0xfff8dead7fa00001, 0x00000000ff800001, 1} {
		want := wasmtest.RunPlain(t, r, wasm, "run", "", bits)
		got := wasmtest.RunPlain(t, r, p.Wasm, "run", "", bits)
		require.Empty(t, want.Err)
		require.Equal(t, want, got, "bits %#x", bits)
	}
	// The rewrite does redefine them: the slow path reads each local.
	var scan bodyScan
	lim := withDefaults(Limits{})
	info, err := validateModule(wasm, &lim)
	require.NoError(t, err)
	body := wasm[info.secs[info.codeSec].Start:]
	r2 := wreader{wasmbin.Reader{B: body}}
	_, _ = r2.U32()
	size, _ := r2.U32()
	fb, _ := r2.Bytes(uint64(size))
	scan, err = scanBody(fb, info.bodyEnv(&lim, 0, true), scan)
	require.NoError(t, err)
	require.Len(t, scan.loops, 1)
	require.Equal(t, []uint32{1, 2, 4, 3}, scan.loopSets[scan.loops[0].setsStart:scan.loops[0].setsEnd],
		"the loop's carried locals, in the order of their first access")
}
