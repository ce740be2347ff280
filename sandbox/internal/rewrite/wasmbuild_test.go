package rewrite

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// plainRuntime is wazero as the tests use it to compare modules: WASI,
// stubs of Stint's host modules (hosts_test.go), close-on-context-done off.
func plainRuntime(t testing.TB, cache wazero.CompilationCache) wazero.Runtime {
	t.Helper()
	return wasmtest.PlainRuntime(t, cache, instantiateStubs)
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
