package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// The measurement behind compileMemory's coefficients (compilemem.go,
// docs/design/compile-memory.md): skipped unless
// STINT_COMPILE_MEMORY is set, as it takes minutes and gigabytes:
//
//	STINT_COMPILE_MEMORY=1 go test ./sandbox -run '^TestCompileMemoryMeasure$' -v -timeout 2h
//
// Each module is compiled in a child process (this test binary again,
// TestCompileMemoryChild), and the child's peak RSS (VmHWM) less that of
// a child that compiles an empty command is what compiling it took. The
// generated shapes (compileMemShapes) are compiled by wazero alone,
// configured as a Runtime configures it (two compilation workers), on
// their own bytes: what the estimate bounds is wazero's compilation of
// the bytes it is given, whatever the rewrite made of a module. Real
// programs, named in STINT_COMPILE_MEMORY instead of 1 (colon-separated
// .wasm files), are prepared as a Runtime prepares them (validation,
// rewrite, verifier, memory image: its peak is logged), then, from the
// RSS left after a collection (the peak reset through clear_refs), what
// the rewrite made of them is compiled by wazero alone and estimated.
// STINT_COMPILE_MEMORY_SHAPES picks some of the shapes by their first
// word or their name (comma-separated); STINT_COMPILE_MEMORY_MODE=prepared
// measures the shapes as the real programs are.

const (
	compileMemEnv      = "STINT_COMPILE_MEMORY"
	compileMemShapeEnv = "STINT_COMPILE_MEMORY_SHAPES"
	compileMemChildEnv = "STINT_COMPILE_MEMORY_CHILD"
	compileMemModeEnv  = "STINT_COMPILE_MEMORY_MODE" // wazero or runner
)

// TestCompileMemoryChild compiles the module STINT_COMPILE_MEMORY_CHILD
// names, with wazero alone or with a Runtime (STINT_COMPILE_MEMORY_MODE),
// and prints how long it took and its peak RSS.
func TestCompileMemoryChild(t *testing.T) {
	path := os.Getenv(compileMemChildEnv)
	if path == "" {
		t.Skip("the child of TestCompileMemoryMeasure")
	}
	wasm, err := os.ReadFile(path)
	require.NoError(t, err)
	ctx := context.Background()
	var start time.Time
	switch os.Getenv(compileMemModeEnv) {
	case "prepared":
		// Prepared as a Runtime prepares it, then the peak is reset
		// (clear_refs) and the prepared bytes compiled by wazero alone.
		lim := measureLimits()
		in, _, err := prepareInput(wasm, &lim, true, true, false)
		require.NoError(t, err)
		fmt.Printf("prepare-peak %d\n", vmStatus(t, "VmHWM:"))
		wasm = in.wasm
		in = compileInput{}
		runtime.GC()
		debug.FreeOSMemory()
		require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
		fmt.Printf("compile-base %d\n", vmStatus(t, "VmRSS:"))
		fallthrough
	case "wazero":
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(false))
		start = time.Now()
		_, err = rt.CompileModule(experimental.WithCompilationWorkers(ctx, defaultCompilationWorkers), wasm)
		fmt.Printf("compiled-in %d\n", time.Since(start).Milliseconds())
		require.NoError(t, rt.Close(ctx))
	default:
		r, nerr := New(ctx, Config{CompileMemory: -1, CompileTimeout: time.Hour, ModuleLimits: measureLimits()})
		require.NoError(t, nerr)
		start = time.Now()
		_, err = r.Compile(ctx, wasm)
		fmt.Printf("compiled-in %d\n", time.Since(start).Milliseconds())
		require.NoError(t, r.Close(ctx))
	}
	if err != nil {
		fmt.Printf("compile-error %v\n", err)
	}
	// The peak RSS of this process's memory since its exec (getrusage's
	// ru_maxrss would count the parent's at the fork), or since the
	// reset.
	fmt.Printf("vmhwm %d\n", vmStatus(t, "VmHWM:"))
}

// vmStatus is a field of /proc/self/status, in KiB.
func vmStatus(t *testing.T, field string) int64 {
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// measuredShape is one module the measurement compiles.
type measuredShape struct {
	name string
	wasm []byte
}

// calleeModule is a module whose function 0 is _start, of type 0, with
// no code: bodies are the other functions (of type ty), with the types,
// and more sections (table, memory, global) before the export section.
func shapeModule(types [][]byte, ty int, bodies [][]byte, before ...[]byte) []byte {
	n := len(bodies) + 1
	fsec := append(wasmtest.LEB(uint64(n)), 0)
	for range bodies {
		fsec = append(fsec, wasmtest.LEB(uint64(ty))...)
	}
	var code bytes.Buffer
	code.Write(wasmtest.LEB(uint64(n)))
	code.Write(wasmtest.FBody(wasmbin.OpEnd))
	for _, b := range bodies {
		code.Write(b)
	}
	secs := [][]byte{wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(types...)), wasmtest.Sec(wasmbin.SecFunction, fsec)}
	secs = append(secs, before...)
	secs = append(secs, wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(0)))), wasmtest.Sec(wasmbin.SecCode, code.Bytes()))
	return wasmtest.Module(secs...)
}

// shapeFuncs is total bytes of code in functions of funcSize bytes each.
func shapeFuncs(total, funcSize int, body func(size int) []byte) [][]byte {
	var bodies [][]byte
	for left := total; left > 0; left -= funcSize {
		bodies = append(bodies, body(min(funcSize, left)))
	}
	return bodies
}

// unitShape is a generated module: functions of type ty whose bodies are
// head, unit repeated, tail.
type unitShape struct {
	name             string
	types            [][]byte // type 0 is () -> (), _start's
	ty               int
	table, mem, glob bool // a table holding function 1, a memory, a mutable i32 global
	locals           [][2]uint64
	head, unit, tail []byte
}

// module is the shape in functions of funcSize bytes, total in all.
func (u unitShape) module(total, funcSize int) []byte {
	bodies := shapeFuncs(total, funcSize, func(n int) []byte {
		code := wasmtest.Cat(u.head, bytes.Repeat(u.unit, max((n-len(u.head)-len(u.tail))/len(u.unit), 1)), u.tail, []byte{wasmbin.OpEnd})
		return wasmtest.FBodyLocals(u.locals, code...)
	})
	var before [][]byte
	if u.table {
		before = append(before, wasmtest.Sec(wasmbin.SecTable, wasmtest.Vec(wasmtest.Cat([]byte{wasmbin.TypeFuncref, 0}, wasmtest.LEB(1)))))
	}
	if u.mem {
		before = append(before, wasmtest.Sec(wasmbin.SecMemory, wasmtest.Vec(wasmtest.Cat([]byte{0}, wasmtest.LEB(1)))))
	}
	if u.glob {
		before = append(before, wasmtest.Sec(wasmbin.SecGlobal, wasmtest.Vec(wasmtest.Cat([]byte{wasmbin.TypeI32, 1, wasmbin.OpI32Const}, wasmtest.SLEB(0), []byte{wasmbin.OpEnd}))))
	}
	m := shapeModule(u.types, u.ty, bodies, before...)
	if u.table {
		m = insertBeforeCode(m, wasmtest.Sec(wasmbin.SecElement, wasmtest.Vec(wasmtest.Cat([]byte{0, wasmbin.OpI32Const, 0, wasmbin.OpEnd}, wasmtest.Vec(wasmtest.LEB(1))))))
	}
	return m
}

// compileMemShapes are the generated modules the measurement compiles:
// each instruction of those wazero compiles at a cost, as densely as it
// can be written, in 2 KB functions (1 MB of them) and in one function of
// 256 KB; a few also in one of 1 MB, in two (compiled at once), and in
// one of 4 MB (max_function_size).
func compileMemShapes() []measuredShape {
	void := wasmtest.FuncType(nil, nil)
	i32i32 := wasmtest.FuncType([]byte{wasmbin.TypeI32}, []byte{wasmbin.TypeI32})
	toI32 := wasmtest.FuncType(nil, []byte{wasmbin.TypeI32})
	four := wasmtest.FuncType([]byte{wasmbin.TypeI32, wasmbin.TypeI32, wasmbin.TypeI32, wasmbin.TypeI32}, []byte{wasmbin.TypeI32})
	var chain []byte
	for i := 1; i < 1000; i++ {
		chain = wasmtest.Cat(chain, []byte{wasmbin.OpLocalGet}, wasmtest.LEB(uint64(i)), []byte{wasmbin.OpLocalSet}, wasmtest.LEB(uint64(i+1)))
	}
	brTable64 := []byte{wasmbin.OpLocalGet, 0, wasmbin.OpBrTable, 64}
	for i := range 64 {
		brTable64 = append(brTable64, byte(i))
	}
	brTable64 = append(brTable64, 0)
	units := []unitShape{
		{name: "local_add", types: [][]byte{void, i32i32}, ty: 1, unit: []byte{wasmbin.OpLocalGet, 0, wasmbin.OpI32Const, 1, 0x6a, wasmbin.OpLocalSet, 0}, tail: []byte{wasmbin.OpLocalGet, 0}},
		{name: "global_add", types: [][]byte{void}, glob: true, unit: []byte{wasmbin.OpGlobalGet, 0, wasmbin.OpI32Const, 1, 0x6a, wasmbin.OpGlobalSet, 0}},
		{name: "locals", types: [][]byte{void, i32i32}, ty: 1, locals: [][2]uint64{{1000, wasmbin.TypeI32}}, unit: chain, tail: []byte{wasmbin.OpLocalGet, 0}},
		{name: "call", types: [][]byte{void}, unit: []byte{wasmbin.OpCall, 0}},
		{name: "call4", types: [][]byte{void, four}, ty: 1,
			unit: []byte{wasmbin.OpLocalGet, 0, wasmbin.OpLocalGet, 1, wasmbin.OpLocalGet, 2, wasmbin.OpLocalGet, 3, wasmbin.OpCall, 1, wasmbin.OpLocalSet, 0}, tail: []byte{wasmbin.OpLocalGet, 0}},
		{name: "call_indirect", types: [][]byte{void, toI32}, ty: 1, table: true, head: []byte{wasmbin.OpI32Const, 0}, unit: []byte{wasmbin.OpCallIndirect, 1, 0}},
		{name: "load", types: [][]byte{void, toI32}, ty: 1, mem: true, head: []byte{wasmbin.OpI32Const, 0}, unit: []byte{0x28, 2, 0}},
		{name: "store", types: [][]byte{void}, mem: true, unit: []byte{wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, 0x36, 2, 0}},
		{name: "memory_grow", types: [][]byte{void, toI32}, ty: 1, mem: true, head: []byte{wasmbin.OpI32Const, 0}, unit: []byte{0x40, 0}},
		{name: "memory_size", types: [][]byte{void}, mem: true, unit: []byte{0x3f, 0, 0x1a}},
		{name: "memory_fill", types: [][]byte{void}, mem: true, unit: []byte{wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpMiscPrefix, 11, 0}},
		{name: "v128_load", types: [][]byte{void}, mem: true, unit: []byte{wasmbin.OpI32Const, 0, wasmbin.OpVecPrefix, 0, 4, 0, 0x1a}},
		{name: "div", types: [][]byte{void, i32i32}, ty: 1, head: []byte{wasmbin.OpLocalGet, 0}, unit: []byte{wasmbin.OpLocalGet, 0, 0x6d}},
		{name: "trunc", types: [][]byte{void, i32i32}, ty: 1, head: []byte{wasmbin.OpLocalGet, 0, 0xb2}, unit: []byte{0xa8, 0xb2}, tail: []byte{0xa8}},
		{name: "memory_copy", types: [][]byte{void}, mem: true, unit: []byte{wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpMiscPrefix, 10, 0, 0}},
		{name: "table_fill", types: [][]byte{void}, table: true, unit: []byte{wasmbin.OpI32Const, 0, wasmbin.OpRefNull, wasmbin.TypeFuncref, wasmbin.OpI32Const, 0, wasmbin.OpMiscPrefix, 17, 0}},
		{name: "table_copy", types: [][]byte{void}, table: true, unit: []byte{wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpMiscPrefix, 14, 0, 0}},
		{name: "br_table", types: [][]byte{void, i32i32}, ty: 1, head: bytes.Repeat([]byte{wasmbin.OpBlock, 0x40}, 64), unit: brTable64,
			tail: append(bytes.Repeat([]byte{wasmbin.OpEnd}, 64), wasmbin.OpLocalGet, 0)},
		{name: "rem_u", types: [][]byte{void, i32i32}, ty: 1, head: []byte{wasmbin.OpLocalGet, 0}, unit: []byte{wasmbin.OpLocalGet, 0, 0x70}},
		{name: "trunc_f64_u", types: [][]byte{void, i32i32}, ty: 1, head: []byte{wasmbin.OpLocalGet, 0, 0xb8}, unit: []byte{0xab, 0xb8}, tail: []byte{0xab}},
		{name: "table_get", types: [][]byte{void}, table: true, unit: []byte{wasmbin.OpI32Const, 0, 0x25, 0, 0x1a}},
		{name: "unreachable", types: [][]byte{void}, unit: []byte{wasmbin.OpBlock, 0x40, wasmbin.OpUnreachable, wasmbin.OpEnd}},
		{name: "block", types: [][]byte{void, i32i32}, ty: 1, unit: []byte{wasmbin.OpBlock, 0x40, wasmbin.OpEnd}, tail: []byte{wasmbin.OpLocalGet, 0}},
		{name: "br_if", types: [][]byte{void, i32i32}, ty: 1, unit: []byte{wasmbin.OpBlock, 0x40, wasmbin.OpLocalGet, 0, wasmbin.OpBrIf, 0, wasmbin.OpEnd}, tail: []byte{wasmbin.OpLocalGet, 0}},
		{name: "if", types: [][]byte{void, i32i32}, ty: 1, unit: []byte{wasmbin.OpLocalGet, 0, wasmbin.OpIf, 0x40, wasmbin.OpEnd}, tail: []byte{wasmbin.OpLocalGet, 0}},
		{name: "if_else", types: [][]byte{void, i32i32}, ty: 1, unit: []byte{wasmbin.OpLocalGet, 0, wasmbin.OpIf, 0x40, wasmbin.OpLocalGet, 0, wasmbin.OpLocalSet, 0, wasmbin.OpElse, wasmbin.OpEnd}, tail: []byte{wasmbin.OpLocalGet, 0}},
		{name: "select", types: [][]byte{void, i32i32}, ty: 1, unit: []byte{wasmbin.OpLocalGet, 0, wasmbin.OpLocalGet, 0, wasmbin.OpLocalGet, 0, 0x1b, wasmbin.OpLocalSet, 0}, tail: []byte{wasmbin.OpLocalGet, 0}},
	}
	var out []measuredShape
	add := func(u unitShape, total, funcSize int) {
		out = append(out, measuredShape{fmt.Sprintf("%s %dK/%dK", u.name, total>>10, funcSize>>10), u.module(total, funcSize)})
	}
	for _, u := range units {
		add(u, 1<<20, 2<<10)
		switch u.name {
		case "br_if", "if", "if_else", "block", "unreachable", "br_table":
			// wazero compiles these in time quadratic in their number
			// in one function: 256 KB of if took over a minute.
			add(u, 64<<10, 64<<10)
		default:
			add(u, 256<<10, 256<<10)
		}
	}
	for _, u := range units {
		switch u.name {
		case "call", "call_indirect", "load", "local_add":
			add(u, 1<<20, 1<<20)
			add(u, 2<<20, 1<<20)
		}
		if u.name == "call" {
			add(u, 4<<20, 4<<20-64)
			add(u, 8<<20, 4<<20-64)
		}
	}
	// Joins before reads of many locals: wazero's SSA builder looks a
	// variable up through every join before its read, and keeps what it
	// found in each (a map entry, a value).
	for _, kl := range [][2]int{{1000, 1000}, {2000, 2000}, {4000, 2000}, {2000, 4000}} {
		out = append(out, measuredShape{fmt.Sprintf("joins %dx%d", kl[0], kl[1]), joinsModule("if", kl[0], kl[1])})
	}
	for _, kl := range [][2]int{{2000, 2000}} {
		out = append(out, measuredShape{fmt.Sprintf("joins_block %dx%d", kl[0], kl[1]), joinsModule("block", kl[0], kl[1])})
	}
	for _, kl := range [][2]int{{1000, 2000}, {1000, 4000}} {
		out = append(out, measuredShape{fmt.Sprintf("joins_loop %dx%d", kl[0], kl[1]), joinsModule("loop", kl[0], kl[1])})
	}
	// Empty functions: the function count alone.
	for _, n := range []int{50_000, 200_000} {
		out = append(out, measuredShape{fmt.Sprintf("empty %d funcs", n), funcBomb(n)})
	}
	return out
}

// joinsModule is a command whose one function has joins of a kind (if:
// ifs in a row; block: blocks in a row, each left by a br_if; loop:
// loops nested joins deep), then reads each of its locals i32 locals
// (inside the innermost loop).
func joinsModule(kind string, joins, locals int) []byte {
	var code []byte
	for range joins {
		switch kind {
		case "if":
			code = append(code, wasmbin.OpLocalGet, 0, wasmbin.OpIf, 0x40, wasmbin.OpEnd)
		case "block":
			code = append(code, wasmbin.OpBlock, 0x40, wasmbin.OpLocalGet, 0, wasmbin.OpBrIf, 0, wasmbin.OpEnd)
		case "loop":
			code = append(code, wasmbin.OpLoop, 0x40)
		}
	}
	code = append(code, wasmbin.OpLocalGet, 1)
	for i := 2; i <= locals; i++ {
		code = append(code, wasmbin.OpLocalGet)
		code = append(code, wasmtest.LEB(uint64(i))...)
		code = append(code, 0x6a) // i32.add
	}
	if kind == "loop" {
		code = append(code, wasmbin.OpLocalSet, 0)
		code = append(code, bytes.Repeat([]byte{wasmbin.OpEnd}, joins)...)
		code = append(code, wasmbin.OpLocalGet, 0)
	}
	return shapeModule([][]byte{wasmtest.FuncType(nil, nil), wasmtest.FuncType([]byte{wasmbin.TypeI32}, []byte{wasmbin.TypeI32})}, 1,
		[][]byte{wasmtest.FBodyLocals([][2]uint64{{uint64(locals), wasmbin.TypeI32}}, append(code, wasmbin.OpEnd)...)})
}

// insertBeforeCode puts section s before wasm's code section.
func insertBeforeCode(wasm, s []byte) []byte {
	secs, _ := wasmbin.Sections(wasm)
	for _, sc := range secs {
		if sc.ID == wasmbin.SecCode {
			return wasmtest.Cat(wasm[:sc.Header], s, wasm[sc.Header:])
		}
	}
	panic("no code section")
}

// childPeak compiles the module at path in a child process (mode wazero
// or runner) and returns its peak RSS in bytes, and what it printed.
func childPeak(t *testing.T, mode, path string) (int64, string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompileMemoryChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), compileMemChildEnv+"="+path, compileMemModeEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	peak := int64(-1)
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "vmhwm "); ok {
			kb, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			peak = kb << 10
		}
		if v, ok := strings.CutPrefix(l, "compile-base "); ok {
			kb, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			peak -= kb << 10 // printed before vmhwm
		}
	}
	require.NotEqual(t, int64(-1), peak, "the child printed no peak: %s", out)
	return peak, string(out)
}

func TestCompileMemoryMeasure(t *testing.T) {
	env := os.Getenv(compileMemEnv)
	if env == "" {
		t.Skip("set STINT_COMPILE_MEMORY=1 (or to .wasm files, colon-separated) to measure compile memory; it takes minutes and GBs")
	}
	dir := t.TempDir()
	type measured struct {
		measuredShape
		mode string // wazero: the shape's own bytes; runner: the module's, rewrite and all
	}
	var shapes []measured
	if env == "1" {
		only := map[string]bool{}
		for _, s := range strings.Split(os.Getenv(compileMemShapeEnv), ",") {
			if s != "" {
				only[s] = true
			}
		}
		mode := "wazero"
		if os.Getenv(compileMemModeEnv) == "prepared" { // the shapes as a Runtime prepares them
			mode = "prepared"
		}
		for _, s := range compileMemShapes() {
			if len(only) == 0 || only[strings.Fields(s.name)[0]] || only[s.name] {
				shapes = append(shapes, measured{s, mode})
			}
		}
	} else {
		for _, p := range filepath.SplitList(env) {
			wasm, err := os.ReadFile(p)
			require.NoError(t, err)
			shapes = append(shapes, measured{measuredShape{filepath.Base(p), wasm}, "prepared"})
		}
	}
	noop := filepath.Join(dir, "noop.wasm")
	require.NoError(t, os.WriteFile(noop, shapeModule([][]byte{wasmtest.FuncType(nil, nil)}, 0, nil), 0o600))
	base := map[string]int64{}
	for _, mode := range []string{"wazero", "runner"} {
		base[mode], _ = childPeak(t, mode, noop)
		t.Logf("baseline (an empty command, %s): %d MB", mode, base[mode]>>20)
	}
	// prepared: the peak is over the RSS the compilation started from.
	fmt.Printf("| module | bytes compiled | code bytes | functions | instructions | largest body | retained MB | largest transient MB | scan ms | compile ms | peak RSS over the baseline | quick bound | estimate | estimate / measured |\n")
	fmt.Printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for i, s := range shapes {
		path := filepath.Join(dir, strconv.Itoa(i)+".wasm")
		require.NoError(t, os.WriteFile(path, s.wasm, 0o600))
		peak, out := childPeak(t, s.mode, path)
		ms := "?"
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "compiled-in "); ok {
				ms = v
			}
			if v, ok := strings.CutPrefix(l, "prepare-peak "); ok {
				kb, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err)
				t.Logf("%s: preparation's peak RSS %d MB over the baseline", s.name, (kb<<10-base["runner"])>>20)
			}
			if strings.HasPrefix(l, "compile-error") {
				t.Logf("%s: %s", s.name, l)
			}
		}
		wasm := s.wasm
		if s.mode == "prepared" {
			wasm = mustPrepareForMeasure(t, s.wasm)
		}
		sh := readShape(wasm)
		instrs, retained, largest, transient, took := codeStats(wasm)
		q, ok := quickCompileMemory(wasm, defaultCompilationWorkers)
		require.True(t, ok)
		e, ok := exactCompileMemory(wasm, defaultCompilationWorkers)
		require.True(t, ok)
		used := peak
		if s.mode != "prepared" {
			used -= base[s.mode]
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %d | %d | %d | %.1f | %s | %d MB | %d MB | %d MB | %.2f |\n", s.name, len(wasm), sh.codeBytes, sh.funcs,
			instrs, largest, retained>>20, transient>>20, float64(took.Microseconds())/1000, ms, used>>20, q>>20, e>>20, float64(e)/float64(max(used, 1<<20)))
	}
}

// measureLimits are the default module limits but for branches to one
// label, which Go's compiler (cmd/compile, built for wasip1) goes over.
func measureLimits() ModuleLimits {
	l := DefaultModuleLimits()
	l.MaxBranchesToLabel = 1 << 20
	return l
}

// mustPrepareForMeasure is wasm as the default Runtime hands it to wazero.
func mustPrepareForMeasure(t *testing.T, wasm []byte) []byte {
	lim := measureLimits()
	in, _, err := prepareInput(wasm, &lim, true, true, false)
	require.NoError(t, err)
	return in.wasm
}

// codeStats sums wasm's bodies' instructions and retained costs, and
// keeps the largest body's size and the costliest transient.
func codeStats(wasm []byte) (instrs, retained, largest, transient uint64, took time.Duration) {
	m, ok := readModuleCode(wasm)
	if !ok {
		panic("sections do not decode")
	}
	start := time.Now()
	i := 0
	if !eachBody(m.code, func(b []byte) bool {
		c, ok := countBody(b)
		instrs += c.instrs
		retained += c.retained
		largest = max(largest, uint64(len(b)))
		transient = max(transient, c.transient+joinsCost(c.blocks, c.locals+uint64(m.params[i])))
		i++
		return ok
	}) {
		panic("code does not decode")
	}
	return instrs, retained, largest, transient, time.Since(start)
}
