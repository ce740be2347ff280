package sandbox

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// interleavedShapes picks the shapes BenchmarkInterruptInterleaved runs, by
// name (loop, nested, brtable, tree, top, topnested, primes, c-sha256,
// c-qsort, ...): all of them when empty. For example
//
//	go test ./sandbox -run XXX -bench BenchmarkInterruptInterleaved -benchtime 20x -args -interrupt.shapes '^(top|c-)'
var interleavedShapes = flag.String("interrupt.shapes", "",
	"regexp: the shapes BenchmarkInterruptInterleaved runs (loop, nested, brtable, tree, top, topnested, primes, c-<kernel>, real-lua, real-sqlite, real-zstd); empty: all")

// funcShape is one of BenchmarkInterruptInterleaved's shapes called by
// export: fixture module's function export, called with n iterations
// (tree: a depth).
type funcShape struct{ name, module, export string }

// interleavedFuncShapes are the shapes called by export: shape_bench's, and
// bench_toploops' while loops tested at their top.
var interleavedFuncShapes = []funcShape{
	{"loop", "shape_bench", "loop"},
	{"nested", "shape_bench", "nested"},
	{"brtable", "shape_bench", "brtable"},
	{"tree", "shape_bench", "tree"},
	{"top", "bench_toploops", "top"},
	{"topnested", "bench_toploops", "topnested"},
}

// shapeFilter returns whether the -interrupt.shapes flag keeps shape.
func shapeFilter(b *testing.B) func(shape string) bool {
	if *interleavedShapes == "" {
		return func(string) bool { return true }
	}
	re, err := regexp.Compile(*interleavedShapes)
	require.NoError(b, err, "-interrupt.shapes")
	return re.MatchString
}

// runShape is one of BenchmarkInterruptInterleaved's shapes run as a whole
// WASI command: run(v, op) runs it as variant v in op's layout (layoutOf)
// and returns the thread CPU ms it took.
type runShape struct {
	name string
	run  func(v, op int) float64
}

// runLayouts is how many layouts of its machine code a run shape takes, in
// turn, one per op (-interrupt.layouts): the layout of a program's hot code
// (where its loops fall against the cache lines and the branch predictor's
// tables) moved a run by up to a tenth here, as much as a variant's cost,
// so a ratio is the median over ops of several layouts, the variants of
// one op in the same one.
var runLayouts = flag.Int("interrupt.layouts", 4, "BenchmarkInterruptInterleaved: layouts of each kernel and real program, one per op in turn")

// layouts is how many layouts a run shape takes: -interrupt.layouts, at
// least one and at most len(layoutPads).
func layouts() int { return max(1, min(*runLayouts, len(layoutPads))) }

// layoutOf is op's layout: its index in layoutPads.
func layoutOf(op int) int { return op % layouts() }

// padFirst returns the command wasm with a block that never runs, of pad
// stores, at the start of its first function (a C program's
// __wasm_call_ctors, called once): wazero lays the functions out one after
// another, so every later function's machine code moves.
func padFirst(b *testing.B, wasm []byte, pad int) []byte {
	if pad == 0 {
		return wasm
	}
	return withFirstBody(b, wasm, func(body []byte) []byte {
		// The locals: a count of groups, each a count and a type.
		groups, k, err := wasmbin.U32(body)
		require.NoError(b, err)
		for range groups {
			_, l, err := wasmbin.U32(body[k:])
			require.NoError(b, err)
			k += l + 1
		}
		dead := []byte{wasmbin.OpI32Const, 0, wasmbin.OpIf, 0x40}
		for range pad {
			dead = append(dead, wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, 0x36, 2, 0) // i32.store
		}
		dead = append(dead, wasmbin.OpEnd)
		return wasmtest.Cat(body[:k], dead, body[k:])
	})
}

// layoutRunners returns, for each variant and layout, a run of the command
// wasm (commandRunner).
func layoutRunners(b *testing.B, wasm []byte, stdin string, args ...string) [][]func() (float64, string) {
	runners := make([][]func() (float64, string), len(interruptVariants))
	for v := range interruptVariants {
		for l := range layouts() {
			runners[v] = append(runners[v], commandRunner(b, padFirst(b, wasm, layoutPads[l]), v, stdin, args...))
		}
	}
	return runners
}

// kernelShapes returns the C kernels of internal/testwasm/ckernels as
// shapes ("c-sha256", ...) that keep, or none, with a log line, when clang-14
// or wasi-libc is not installed.
func kernelShapes(b *testing.B, keep func(string) bool) []runShape {
	var shapes []runShape
	for _, k := range ckernels.Kernels {
		name := "c-" + k.Name
		if !keep(name) {
			continue
		}
		wasm, err := ckernels.Build(testwasm.CacheDir(b), k.Name)
		if errors.Is(err, ckernels.ErrUnavailable) {
			b.Logf("the C kernel shapes are left out: %v", err)
			return nil
		}
		require.NoError(b, err)
		runners := layoutRunners(b, wasm, "")
		_, want := runners[0][0]() // the variant with no stop mechanism
		require.NotEmpty(b, want, name)
		shapes = append(shapes, runShape{name, func(v, op int) float64 {
			ns, out := runners[v][layoutOf(op)]()
			if out != want {
				b.Fatalf("%s as %s printed %q, with no stop mechanism %q", name, interruptVariants[v].name, out, want)
			}
			return ns / 1e6
		}})
	}
	return shapes
}

// corpusDir holds the real programs of ../shared/corpus (beside the
// project; its README says what they are).
const corpusDir = "../../shared/corpus"

// corpusShapes returns the real programs of the corpus as shapes
// ("real-lua", "real-sqlite", "real-zstd") that keep, each with its
// workload, or none, with a log line, when the corpus is absent.
func corpusShapes(b *testing.B, keep func(string) bool) []runShape {
	if _, err := os.Stat(corpusDir); err != nil {
		b.Logf("the real programs are left out: %s is absent", corpusDir)
		return nil
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(corpusDir, name))
		require.NoError(b, err)
		return string(data)
	}
	// zstd's input: 4 MiB of text that compresses about as prose does.
	var text strings.Builder
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(read("bench.lua"))
	for text.Len() < 4<<20 {
		text.WriteString(words[r.IntN(len(words))])
		text.WriteByte(" \n"[r.IntN(2)])
	}
	var shapes []runShape
	for _, c := range []struct {
		name, wasm, stdin string
		args              []string
	}{
		{"real-lua", "lua.wasm", read("bench.lua"), []string{"lua", "-"}},
		{"real-sqlite", "sqlite3.wasm", read("sqlite-work.sql"), []string{"sqlite3", ":memory:"}},
		{"real-zstd", "zstd.wasm", text.String(), []string{"zstd", "-q", "-c", "-3"}},
	} {
		if !keep(c.name) {
			continue
		}
		wasm := []byte(read(c.wasm))
		runners := layoutRunners(b, wasm, c.stdin, c.args...)
		_, want := runners[0][0]()
		require.NotEmpty(b, want, c.name)
		shapes = append(shapes, runShape{c.name, func(v, op int) float64 {
			ns, out := runners[v][layoutOf(op)]()
			if out != want {
				b.Fatalf("%s as %s printed %d bytes unlike the %d with no stop mechanism", c.name, interruptVariants[v].name, len(out), len(want))
			}
			return ns / 1e6
		}})
	}
	return shapes
}

// commandRunner compiles the WASI command wasm as variant v and returns a
// run of it with stdin and args, timed in thread CPU ns, and its stdout.
func commandRunner(b *testing.B, wasm []byte, v int, stdin string, args ...string) func() (float64, string) {
	ctx := context.Background()
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(interruptVariants[v].coc)
	r, cm := benchCompile(b, ctx, rc, wasm, v) // interrupt_bench_test.go
	return func() (float64, string) {
		runCtx, cancel := context.WithCancel(benchWorkCtx(ctx, v))
		defer cancel()
		var out bytes.Buffer
		start := threadCPU()
		_, err := r.InstantiateModule(runCtx, cm, wazero.NewModuleConfig().WithName("").WithArgs(args...).
			WithStdin(strings.NewReader(stdin)).WithStdout(&out))
		t := threadCPU() - start
		if err != nil && !strings.Contains(err.Error(), "exit_code(0)") {
			b.Fatal(err)
		}
		return float64(t.Nanoseconds()), out.String()
	}
}
