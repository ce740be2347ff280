package rewrite

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// Helpers to write modules byte by byte in tests: bombs, malformed input
// and random programs that no .wat fixture should hold.

// The module builders (sandbox/internal/wasmtest), by the short names the
// tests use.
var (
	leb         = wasmtest.LEB
	sleb        = wasmtest.SLEB
	cat         = wasmtest.Cat
	vec         = wasmtest.Vec
	sec         = wasmtest.Sec
	str         = wasmtest.Str
	module      = wasmtest.Module
	fbody       = wasmtest.FBody
	fbodyLocals = wasmtest.FBodyLocals
	funcType    = wasmtest.FuncType
)

// command is a module with one type () -> (), the given extra sections
// before the export section, _start as function 0 with the given code,
// and more sections after the code.
func command(code []byte, before, after [][]byte) []byte {
	secs := [][]byte{sec(secType, vec(funcType(nil, nil))), sec(secFunction, vec(leb(0)))}
	secs = append(secs, before...)
	secs = append(secs, sec(secExport, vec(cat(str("_start"), []byte{0}, leb(0)))))
	secs = append(secs, sec(secCode, vec(fbody(code...))))
	secs = append(secs, after...)
	return module(secs...)
}

// plainResult is what a module did when run in plain wazero.
type plainResult struct {
	stdout, stderr string
	exit           uint32
	err            string // the first line of an error that is not an exit
	results        []uint64
	memory         string // sha256 of the final memory
}

// startFailed is how wazero names a start function that failed.
var startFailed = regexp.MustCompile(`^start function\[\d+\] failed`)

// plainRuntime is wazero as the tests use it to compare modules: WASI,
// Stint's host module (with no run state: stop_requested is 0, saves
// fail), close-on-context-done off.
func plainRuntime(t testing.TB, cache wazero.CompilationCache) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(2048) // 128 MiB: memgrow grows to it
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	t.Cleanup(func() { _ = r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	require.NoError(t, instantiateStubs(ctx, r))
	return r
}

// runPlain instantiates wasm, calls fn with args, and reports what
// happened.
func runPlain(t testing.TB, r wazero.Runtime, wasm []byte, fn string, stdin string, args ...uint64) plainResult {
	t.Helper()
	// A rewrite that loops where the original did not is stopped by its
	// checks (the original always ends).
	// The timeout bounds the run only: compiling a Go guest under the race
	// detector with a cold cache on a loaded machine can take most of it.
	cm, err := r.CompileModule(context.Background(), wasm)
	require.NoError(t, err)
	defer cm.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr strings.Builder
	mc := wazero.NewModuleConfig().WithName("").WithStdout(&stdout).WithStderr(&stderr).
		WithStdin(strings.NewReader(stdin)).WithStartFunctions().WithArgs("task")
	res := plainResult{}
	var results []uint64
	inst, err := r.InstantiateModule(ctx, cm, mc)
	if err == nil {
		results, err = inst.ExportedFunction(fn).Call(ctx, args...)
		if mem := inst.ExportedMemory("memory"); mem != nil && cm.ExportedMemories()["memory"] != nil {
			b, _ := mem.Read(0, mem.Size())
			res.memory = sha(b)
		}
		_ = inst.Close(ctx)
	}
	var exit *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.exit = exit.ExitCode()
	default:
		res.err, _, _ = strings.Cut(err.Error(), "\n")
		// The rewrite moves function indices up by one.
		res.err = startFailed.ReplaceAllString(res.err, "start function failed")
	}
	res.stdout, res.stderr, res.results = stdout.String(), stderr.String(), results
	return res
}

// prepareDefault prepares wasm with the default limits.
func prepareDefault(t testing.TB, wasm []byte, loopChecks bool) *Prepared {
	t.Helper()
	lim := withDefaults(Limits{})
	p, err := Prepare(wasm, &lim, loopChecks)
	require.NoError(t, err)
	return p
}

// compiles reports whether plain wazero compiles wasm.
func compiles(r wazero.Runtime, wasm []byte) bool { return compileErr(r, wasm) == nil }

// compileErr is plain wazero's error compiling wasm.
func compileErr(r wazero.Runtime, wasm []byte) error {
	cm, err := r.CompileModule(context.Background(), wasm)
	if err != nil {
		return err
	}
	return cm.Close(context.Background())
}

// withDefaults is l with every zero field set to DefaultLimits' value, as
// sandbox.ModuleLimits.WithDefaults does.
func withDefaults(l Limits) Limits {
	v, d := reflect.ValueOf(&l).Elem(), reflect.ValueOf(DefaultLimits())
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			v.Field(i).Set(d.Field(i))
		}
	}
	return l
}

// requireRefused checks that err is the rewrite's refusal: of an import
// (badImport) or of an invalid module.
func requireRefused(t *testing.T, err error, badImport bool) {
	t.Helper()
	var re *Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, badImport, re.BadImport, err.Error())
}
