package rewrite

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox/internal/verify"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// verifyParams are the verifier's parameters for a mode.
func verifyParams(loops bool) verify.Params {
	return verify.Params{Budget: InterruptBudget, Loops: loops}
}

// fixtureModules lists the .wasm fixtures and, where present, the corpus
// of real programs beside the project.
func fixtureModules(t *testing.T) []string {
	var out []string
	for _, g := range []string{"../../../internal/testwasm/wat/*.wasm", "../../../wasm-examples/build/*.wasm", "../../../../shared/corpus/*.wasm",
		"../../../internal/testwasm/ckernels/build/*.wasm"} {
		m, _ := filepath.Glob(g)
		out = append(out, m...)
	}
	return out
}

// TestVerifierAcceptsFixtures: every fixture and real program the rewrite
// accepts, it makes verifiable, in both modes.
func TestVerifierAcceptsFixtures(t *testing.T) {
	for _, path := range fixtureModules(t) {
		wasm, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, loops := range []bool{true, false} {
			lim := withDefaults(Limits{})
			lim.MaxModuleSize = 1 << 30
			prep, err := Prepare(wasm, &lim, loops)
			if err != nil {
				continue
			}
			if err := verify.Module(prep.Wasm, verifyParams(loops)); err != nil {
				t.Errorf("%s (loops %v): %v", filepath.Base(path), loops, err)
			}
		}
	}
}

// BenchmarkVerify: the verifier's time beside the rewrite's and wazero's
// compile, on the real programs of the corpus:
//
//	go test ./sandbox/internal/rewrite -run XXX -bench BenchmarkVerify -benchtime 5x
func BenchmarkVerify(b *testing.B) {
	for _, path := range fixtureModules(nil) {
		if filepath.Dir(path) != "../../../../shared/corpus" {
			continue
		}
		wasm, _ := os.ReadFile(path)
		lim := withDefaults(Limits{})
		lim.MaxModuleSize = 1 << 30
		prep, err := Prepare(wasm, &lim, true)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("prepare/"+filepath.Base(path), func(b *testing.B) {
			for b.Loop() {
				_, _ = Prepare(wasm, &lim, true)
			}
		})
		b.Run("verify/"+filepath.Base(path), func(b *testing.B) {
			for b.Loop() {
				_ = verify.Module(prep.Wasm, verifyParams(true))
			}
		})
		// wazero's compile of what Stint runs (the rewritten module) and of
		// the module as built, each into a compilation cache of its own:
		// the time, and the cache's bytes (issue 42's compile gap).
		for _, c := range []struct {
			name string
			wasm []byte
		}{{"compile", prep.Wasm}, {"compile-original", wasm}} {
			b.Run(c.name+"/"+filepath.Base(path), func(b *testing.B) {
				var cached int64
				for b.Loop() {
					dir := b.TempDir()
					cache, err := wazero.NewCompilationCacheWithDir(dir)
					if err != nil {
						b.Fatal(err)
					}
					r := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfig().WithCompilationCache(cache))
					if _, err := r.CompileModule(context.Background(), c.wasm); err != nil {
						b.Fatal(err)
					}
					_ = r.Close(context.Background())
					cached = dirBytes(b, dir)
				}
				b.ReportMetric(float64(cached), "cache-bytes")
				b.ReportMetric(float64(len(c.wasm)), "module-bytes")
			})
		}
	}
}

// shapeModule builds a module of the given types (each "P/R": parameter
// and result value types as bytes), functions (type index and body
// code), exporting function len(funcs)-1 as _start; table lists the
// functions of a table (none: no table); memory adds one page.
func shapeModule(types [][2][]byte, funcs []struct {
	typ  uint32
	code []byte
}, table []uint32, memory bool) []byte {
	var ts, fs, bodies, elems [][]byte
	for _, t := range types {
		ts = append(ts, wasmtest.FuncType(t[0], t[1]))
	}
	for _, f := range funcs {
		fs = append(fs, wasmtest.LEB(uint64(f.typ)))
		bodies = append(bodies, wasmtest.FBody(f.code...))
	}
	secs := [][]byte{wasmtest.Sec(secType, wasmtest.Vec(ts...)), wasmtest.Sec(secFunction, wasmtest.Vec(fs...))}
	if table != nil {
		secs = append(secs, wasmtest.Sec(secTable, wasmtest.Vec([]byte{typeFuncref, 0, byte(len(table))})))
	}
	if memory {
		secs = append(secs, wasmtest.Sec(secMemory, wasmtest.Vec([]byte{0, 1})))
	}
	secs = append(secs, wasmtest.Sec(secExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(uint64(len(funcs)-1))))))
	if table != nil {
		for _, f := range table {
			elems = append(elems, wasmtest.LEB(uint64(f)))
		}
		secs = append(secs, wasmtest.Sec(secElement, wasmtest.Vec(wasmtest.Cat([]byte{0, opI32Const, 0, opEnd}, wasmtest.Vec(elems...)))))
	}
	secs = append(secs, wasmtest.Sec(secCode, wasmtest.Vec(bodies...)))
	return wasmtest.Module(secs...)
}

type shapeFunc = struct {
	typ  uint32
	code []byte
}

// repeat is b n times.
func repeat(n int, b ...byte) []byte { return bytes.Repeat(b, n) }

var (
	voidT = [2][]byte{nil, nil}
	i32T  = [2][]byte{{typeI32}, nil}
	i32i  = [2][]byte{{typeI32}, {typeI32}}
)

// Shapes that each expose one broken optimisation (verifierShapes).
var verifierShapes = map[string][]byte{
	// The red team's first: a loop whose first act calls a function of
	// more than 2 KiB whose only call sits in an arm that is not taken.
	"calling arm over 2 KiB": shapeModule([][2][]byte{i32T, voidT}, []shapeFunc{
		{0, wasmtest.Cat([]byte{opLocalGet, 0, opIf, 0x40, opI32Const, 0, opCall, 0, opEnd}, repeat(2200, 0x01), []byte{opEnd})},
		{1, []byte{opLoop, 0x40, opI32Const, 0, opCall, 0, 0x0c, 0, opEnd, opEnd}},
	}, nil, false),
	// The same with a small callee.
	"calling arm": shapeModule([][2][]byte{i32T, voidT}, []shapeFunc{
		{0, []byte{opLocalGet, 0, opIf, 0x40, opI32Const, 0, opCall, 0, opEnd, opEnd}},
		{1, []byte{opLoop, 0x40, opI32Const, 0, opCall, 0, 0x0c, 0, opEnd, opEnd}},
	}, nil, false),
	// The red team's second: one body of many calls of a leaf of 2 KiB
	// of dependent loads.
	"run of leaf calls": shapeModule([][2][]byte{i32i, voidT}, []shapeFunc{
		{0, wasmtest.Cat([]byte{opLocalGet, 0}, repeat(600, 0x28, 2, 0), []byte{opEnd})},
		{1, wasmtest.Cat([]byte{opI32Const, 0}, repeat(20000, opCall, 0), []byte{0x1a, opEnd})},
		{1, []byte{opLoop, 0x40, opCall, 1, 0x0c, 0, opEnd, opEnd}},
	}, nil, true),
	// A loop that calls a small leaf.
	"loop calling a leaf": shapeModule([][2][]byte{i32i, voidT}, []shapeFunc{
		{0, wasmtest.Cat([]byte{opLocalGet, 0}, repeat(100, opI32Const, 1, 0x6a), []byte{opEnd})},
		{1, []byte{opLoop, 0x40, opI32Const, 0, opCall, 0, 0x1a, 0x0c, 0, opEnd, opEnd}},
	}, nil, false),
	// A recursion that unwinds through work after its call.
	"recursion unwinding": shapeModule([][2][]byte{i32T, voidT}, []shapeFunc{
		{0, wasmtest.Cat([]byte{opLocalGet, 0, opIf, 0x40, opLocalGet, 0, opI32Const, 1, 0x6b, opCall, 0, opEnd},
			repeat(50, opI32Const, 1, 0x1a), []byte{opEnd})},
		{1, []byte{opI32Const, 0x7f, opCall, 0, opEnd}},
	}, nil, false),
	// Two functions that call each other with almost nothing but the call.
	"tiny recursion": shapeModule([][2][]byte{i32T, voidT}, []shapeFunc{
		{0, []byte{opLocalGet, 0, opCall, 1, opEnd}},
		{0, []byte{opLocalGet, 0, opCall, 0, opEnd}},
		{1, []byte{opI32Const, 0x7f, opCall, 0, opEnd}},
	}, nil, false),
	// A loop calling through a table a function whose type is another
	// index of the same signature.
	"call_indirect of a twin type": shapeModule([][2][]byte{voidT, voidT}, []shapeFunc{
		{1, wasmtest.Cat(repeat(300, opI32Const, 1, 0x1a), []byte{opEnd})},
		{0, []byte{opLoop, 0x40, opI32Const, 0, 0x11, 0, 0, 0x0c, 0, opEnd, opEnd}},
	}, []uint32{0}, false),
	// A loop and nothing else.
	"loop": shapeModule([][2][]byte{voidT}, []shapeFunc{
		{0, []byte{opLoop, 0x40, 0x0c, 0, opEnd, opEnd}},
	}, nil, false),
}

// TestVerifierMutations: each of the rewrite's optimisations broken on
// purpose (mutate) makes output the verifier refuses on at least one
// shape, and every shape's output verifies with none broken.
func TestVerifierMutations(t *testing.T) {
	mutations := map[string]string{
		"callee-tested":     "calling arm",                  // a callee wrongly taken as testing at its entry
		"arm-over-tested":   "calling arm over 2 KiB",       // the calling arm in a function taken as tested (the red team's)
		"leaf-uncharged":    "loop calling a leaf",          // a leaf's work not charged where it is called
		"no-loop-test":      "loop",                         // a loop's test dropped
		"no-exit-check":     "recursion unwinding",          // the test on the way back up dropped
		"no-split":          "run of leaf calls",            // a long straight run of calls left in one segment
		"no-entry-weight":   "tiny recursion",               // the entry checks' own code not charged
		"indirect-by-index": "call_indirect of a twin type", // call_indirect's reach by type index, not signature
	}
	lim := withDefaults(Limits{})
	for name, wasm := range verifierShapes {
		for _, loops := range []bool{true, false} {
			prep, err := Prepare(wasm, &lim, loops)
			require.NoError(t, err, name)
			require.NoError(t, verify.Module(prep.Wasm, verifyParams(loops)), "%s (loops %v)", name, loops)
		}
	}
	for m, shape := range mutations {
		t.Run(m, func(t *testing.T) {
			mutate = m
			defer func() { mutate = "" }()
			prep, err := Prepare(verifierShapes[shape], &lim, true)
			require.NoError(t, err)
			err = verify.Module(prep.Wasm, verifyParams(true))
			require.Error(t, err, "the verifier accepts the output with %s broken (shape %q)", m, shape)
			t.Log(err)
		})
	}
}

// dirBytes is the size of the regular files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
