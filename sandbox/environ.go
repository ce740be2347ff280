package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// A guest's environment is served by Stint's own environ_sizes_get and
// environ_get, which replace wazero's in the WASI module (hostImports) and
// read the run's guestEnv through its runState. wazero's way in,
// ModuleConfig.WithEnv, copies the whole environment at every variable:
// 10,000 variables took 2.6 s to set, 40,000 over a minute, outside any
// timeout. A guestEnv is built once per run, in time linear in its size
// (plus a sort of its keys), under the run's watch; a plugin's once when
// it is loaded.

// wasiErrnoFault is WASI preview 1's EFAULT: a pointer out of memory.
const wasiErrnoFault = 21

// guestEnv is an environment as the guest sees it: "key=value" entries,
// sorted by key, each NUL-terminated in environ_get's buffer.
type guestEnv struct {
	keys, vals []string
	size       uint32 // bytes of the NUL-terminated entries
}

// envCheckEvery is how many variables newGuestEnv handles between two
// looks at the run's hard context.
const envCheckEvery = 4096

// errEnvTooLarge refuses an environment whose entries do not fit WASI's
// 32-bit sizes.
var errEnvTooLarge = errors.New("environment over 4 GiB")

// checkEnvVar reports a variable the guest could not be given: a key
// empty or with '=' or NUL, a value with NUL (WASI passes NUL-terminated
// "key=value" strings).
func checkEnvVar(k, v string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("env key %q: must be non-empty without '=' or NUL", k)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("env %s: value must not contain NUL", k)
	}
	return nil
}

// newGuestEnv builds env's guestEnv (nil for an empty one). It checks
// every variable and returns hard's error if hard ends first.
func newGuestEnv(hard context.Context, env map[string]string) (*guestEnv, error) {
	if len(env) == 0 {
		return nil, nil
	}
	e := &guestEnv{keys: make([]string, 0, len(env)), vals: make([]string, len(env))}
	var size uint64
	for k, v := range env {
		if len(e.keys)%envCheckEvery == envCheckEvery-1 && hard != nil && hard.Err() != nil {
			return nil, hard.Err()
		}
		if err := checkEnvVar(k, v); err != nil {
			return nil, err
		}
		e.keys = append(e.keys, k)
		size += uint64(len(k)) + uint64(len(v)) + 2 // '=' and NUL
	}
	if size > 1<<32-1 || uint64(len(env))*4 > 1<<32-1 {
		return nil, errEnvTooLarge
	}
	e.size = uint32(size)
	sort.Strings(e.keys)
	if hard != nil && hard.Err() != nil {
		return nil, hard.Err()
	}
	for i, k := range e.keys {
		e.vals[i] = env[k]
	}
	return e, nil
}

// exportEnviron adds Stint's environ_sizes_get and environ_get to b (the
// WASI module), replacing wazero's.
func exportEnviron(b wazero.HostModuleBuilder) {
	i32 := api.ValueTypeI32
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(environSizesGet), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("result.environc", "result.environv_len").
		Export("environ_sizes_get")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(environGet), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("environ", "environ_buf").
		Export("environ_get")
}

// newWASIBuilder is wazero's WASI preview 1 module with Stint's environ
// functions.
func newWASIBuilder(rt wazero.Runtime) wazero.HostModuleBuilder {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	exportEnviron(b)
	return b
}

// envOf is the environment of the run or call ctx belongs to (nil: none).
func envOf(ctx context.Context) *guestEnv {
	if st := stateOf(ctx); st != nil {
		return st.env
	}
	return nil
}

// environSizesGet writes the number of variables and the size of their
// NUL-terminated entries, as WASI's environ_sizes_get.
func environSizesGet(ctx context.Context, m api.Module, stack []uint64) {
	e := envOf(ctx)
	var n, size uint32
	if e != nil {
		n, size = uint32(len(e.keys)), e.size
	}
	mem := m.Memory()
	if mem == nil || !mem.WriteUint32Le(uint32(stack[0]), n) || !mem.WriteUint32Le(uint32(stack[1]), size) {
		stack[0] = wasiErrnoFault
		return
	}
	stack[0] = 0
}

// environGet writes the pointers to the entries at environ and the
// NUL-terminated "key=value" entries at buf, as WASI's environ_get.
func environGet(ctx context.Context, m api.Module, stack []uint64) {
	environ, buf := uint32(stack[0]), uint32(stack[1])
	e := envOf(ctx)
	stack[0] = 0
	if e == nil {
		return
	}
	mem := m.Memory()
	if mem == nil {
		stack[0] = wasiErrnoFault
		return
	}
	ptrs, ok1 := mem.Read(environ, uint32(len(e.keys))*4)
	data, ok2 := mem.Read(buf, e.size)
	if !ok1 || !ok2 {
		stack[0] = wasiErrnoFault
		return
	}
	at := 0
	for i, k := range e.keys {
		binary.LittleEndian.PutUint32(ptrs[4*i:], buf+uint32(at))
		at += copy(data[at:], k)
		data[at] = '='
		at++
		at += copy(data[at:], e.vals[i])
		data[at] = 0
		at++
	}
}
