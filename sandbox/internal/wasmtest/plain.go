package wasmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Section ids the builders below use (wasmbin's).
const (
	secType, secFunction, secExport, secCode = 1, 3, 7, 10
)

// Command is a module with one type () -> (), the given extra sections
// before the export section, _start as function 0 with the given code,
// and more sections after the code.
func Command(code []byte, before, after [][]byte) []byte {
	secs := [][]byte{Sec(secType, Vec(FuncType(nil, nil))), Sec(secFunction, Vec(LEB(0)))}
	secs = append(secs, before...)
	secs = append(secs, Sec(secExport, Vec(Cat(Str("_start"), []byte{0}, LEB(0)))))
	secs = append(secs, Sec(secCode, Vec(FBody(code...))))
	secs = append(secs, after...)
	return Module(secs...)
}

// PlainResult is what a module did when run in plain wazero.
type PlainResult struct {
	Stdout, Stderr string
	Exit           uint32
	Err            string // the first line of an error that is not an exit
	Results        []uint64
	Memory         string // hex sha256 of the final memory
}

// startFailed is how wazero names a start function that failed.
var startFailed = regexp.MustCompile(`^start function\[\d+\] failed`)

// PlainRuntime is wazero as the tests use it to compare modules: WASI,
// the host modules hosts instantiates (Stint's, or stubs of them),
// close-on-context-done off, 128 MiB of memory at most.
func PlainRuntime(t testing.TB, cache wazero.CompilationCache, hosts func(context.Context, wazero.Runtime) error) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(2048) // 128 MiB: memgrow grows to it
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	t.Cleanup(func() { _ = r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	require.NoError(t, hosts(ctx, r))
	return r
}

// RunPlain instantiates wasm in r, calls fn with args, and reports what
// happened.
func RunPlain(t testing.TB, r wazero.Runtime, wasm []byte, fn string, stdin string, args ...uint64) PlainResult {
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
	res := PlainResult{}
	var results []uint64
	inst, err := r.InstantiateModule(ctx, cm, mc)
	if err == nil {
		results, err = inst.ExportedFunction(fn).Call(ctx, args...)
		if mem := inst.ExportedMemory("memory"); mem != nil && cm.ExportedMemories()["memory"] != nil {
			b, _ := mem.Read(0, mem.Size())
			sum := sha256.Sum256(b)
			res.Memory = hex.EncodeToString(sum[:])
		}
		_ = inst.Close(ctx)
	}
	var exit *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.Exit = exit.ExitCode()
	default:
		res.Err, _, _ = strings.Cut(err.Error(), "\n")
		// The rewrite moves function indices up by one.
		res.Err = startFailed.ReplaceAllString(res.Err, "start function failed")
	}
	res.Stdout, res.Stderr, res.Results = stdout.String(), stderr.String(), results
	return res
}
