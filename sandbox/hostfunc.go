package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/sandbox/internal/resume"
)

// ValueType is a host function signature's value type (I32, I64, F32, F64).
type ValueType = api.ValueType

// The value types of host function signatures.
const (
	I32 = api.ValueTypeI32
	I64 = api.ValueTypeI64
	F32 = api.ValueTypeF32
	F64 = api.ValueTypeF64
)

// HostModuleDef is a set of host functions an embedder gives guests under one
// import module name (Config.HostModules). A plugin imports from it only if
// its Manifest grants the module; a task (Runtime.Run) may import any
// registered module.
type HostModuleDef struct {
	// Name is the import module name ("env", "kv", ...). It must not be
	// one Stint provides itself (ReservedModules).
	Name string
	// Funcs are the module's functions, each with a unique name.
	Funcs []HostFunc
}

// HostFunc is one host function: its import name, its wasm signature and
// the Go function that runs it.
type HostFunc struct {
	// Name is the function's import name.
	Name string
	// Params and Results are its wasm signature. A module that imports the
	// function with another signature is refused when it is compiled.
	Params, Results []ValueType
	// Func runs the call (see HostFuncImpl).
	Func HostFuncImpl
	// NonBlocking promises that Func waits on nothing (no I/O, channel or
	// contended lock): calls then skip a hand-off (docs/plugins.md, "Host functions").
	NonBlocking bool
}

// HostFuncImpl runs one call of a host function on the guest's goroutine.
// stack holds the parameters on entry and must hold the results on return
// (max(len(Params), len(Results)) slots). ctx is the call's hard context: a
// function that may block must return once it is done. A returned error or
// a panic ends the guest with a trap (KindTrapped, Outcome.Err wraps a
// *HostError), never the host. It must not keep guest memory past its
// return nor call back into the guest. docs/plugins.md ("Host functions").
type HostFuncImpl func(ctx context.Context, call Call, stack []uint64) error

// ReservedModules returns the import module names Stint provides itself;
// an embedder's HostModuleDef may not use them.
func ReservedModules() []string {
	return []string{HostModule, PluginModule, wasi_snapshot_preview1.ModuleName, interruptModule, ExtismModule, resume.ImportModule}
}

// HostError is what ends a guest whose host function failed: the function
// returned an error, or panicked.
type HostError struct {
	Module, Func string // the host function
	Err          error  // the error it returned (nil if it panicked)
	Panic        any    // the value it panicked with (nil if it returned an error)
	Stack        []byte // the Go stack of the panic
}

// Error implements error.
func (e *HostError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("host function %s.%s panicked: %v", e.Module, e.Func, e.Panic)
	}
	return fmt.Sprintf("host function %s.%s failed: %v", e.Module, e.Func, e.Err)
}

// Unwrap returns the function's error.
func (e *HostError) Unwrap() error { return e.Err }

// ErrBadHostModule is wrapped by the errors of Config.Validate for a host
// module that cannot be registered.
var ErrBadHostModule = errors.New("bad host module")

// Call is what a host function knows of the call it serves: the guest's
// memory (bounds-checked) and the call's identity. It is only valid during
// the host function's call.
type Call struct {
	mod api.Module
	st  *runState
	fn  *hostFuncInfo
}

// Plugin is the called plugin's Manifest.Name ("" for a task).
func (c Call) Plugin() string {
	if c.st == nil || c.st.ident == nil {
		return ""
	}
	return c.st.ident.plugin
}

// Task is the task id of the call (CallOptions.Task, Spec.Task), "" if none.
func (c Call) Task() string {
	if c.st == nil || c.st.ident == nil {
		return ""
	}
	return c.st.ident.task
}

// Labels are the call's labels (CallOptions.Labels, Spec.Labels), read-only.
func (c Call) Labels() map[string]string {
	if c.st == nil || c.st.ident == nil {
		return nil
	}
	return c.st.ident.labels
}

// Config returns a configuration value the plugin's manifest grants
// (Manifest.Config); false if it grants no such key.
func (c Call) Config(key string) (string, bool) {
	if c.st == nil || c.st.ident == nil {
		return "", false
	}
	v, ok := c.st.ident.config[key]
	return v, ok
}

// MemorySize is the guest's memory size in bytes (0 if it has none).
func (c Call) MemorySize() uint32 { return memSize(c.mod) }

// Read returns the n bytes of guest memory at ptr, or a *BadPointerError
// if they are not all inside it. The slice is the guest's memory itself:
// valid only until the host function returns; copy it to keep it.
func (c Call) Read(ptr, n uint32) ([]byte, error) {
	if mem := c.mod.Memory(); mem != nil {
		if b, ok := mem.Read(ptr, n); ok {
			return b, nil
		}
	}
	return nil, c.badPointer(ptr, n)
}

// ReadString returns a copy of the n bytes at ptr as a string.
func (c Call) ReadString(ptr, n uint32) (string, error) {
	b, err := c.Read(ptr, n)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Write copies data into guest memory at ptr, or returns a
// *BadPointerError (writing nothing) if it does not fit inside it.
func (c Call) Write(ptr uint32, data []byte) error {
	if mem := c.mod.Memory(); mem != nil {
		if uint64(ptr)+uint64(len(data)) <= uint64(mem.Size()) && mem.Write(ptr, data) {
			return nil
		}
	}
	return c.badPointer(ptr, uint32(min(uint64(len(data)), 1<<32-1)))
}

// ReadUint32 reads a little-endian uint32 at ptr.
func (c Call) ReadUint32(ptr uint32) (uint32, error) {
	b, err := c.Read(ptr, 4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

// WriteUint32 writes v little-endian at ptr.
func (c Call) WriteUint32(ptr, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return c.Write(ptr, b[:])
}

func (c Call) badPointer(ptr, n uint32) error {
	e := &BadPointerError{Ptr: ptr, Len: n, MemSize: memSize(c.mod)}
	if c.fn != nil {
		e.Module, e.Func = c.fn.module, c.fn.name
	}
	return e
}

// callIdentity is who a call is for: what Call reports to host functions.
type callIdentity struct {
	plugin string
	task   string
	labels map[string]string
	config map[string]string
}

// hostFuncInfo is one registered host function.
type hostFuncInfo struct {
	module, name    string
	params, results []ValueType
	impl            HostFuncImpl
	nonBlocking     bool // HostFunc.NonBlocking
}

// goModuleFunc is the function wazero calls: no reflection, one context
// lookup, the impl under a recover.
func (h *hostFuncInfo) goModuleFunc(ctx context.Context, m api.Module, stack []uint64) {
	err := h.invoke(ctx, Call{mod: m, st: stateOf(ctx), fn: h}, stack)
	if err == nil {
		return
	}
	if ctx.Err() != nil {
		hardExit(ctx) // ended by the stop: forced or timed out, like any blocking path
	}
	panic(err)
}

func (h *hostFuncInfo) invoke(ctx context.Context, c Call, stack []uint64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if exit, ok := p.(*sys.ExitError); ok {
				panic(exit) // a stop (hardExit) from something the function called
			}
			err = &HostError{Module: h.module, Func: h.name, Panic: p, Stack: debug.Stack()}
		}
	}()
	if err = h.impl(ctx, c, stack); err != nil {
		var he *HostError
		if !errors.As(err, &he) {
			err = &HostError{Module: h.module, Func: h.name, Err: err}
		}
	}
	return err
}

// hostRegistry is the embedder's host modules, by module and function name.
type hostRegistry map[string]map[string]*hostFuncInfo

func newHostRegistry(mods []HostModuleDef) hostRegistry {
	reg := hostRegistry{}
	for _, m := range mods {
		fns := map[string]*hostFuncInfo{}
		for _, f := range m.Funcs {
			fns[f.Name] = &hostFuncInfo{module: m.Name, name: f.Name, params: f.Params, results: f.Results, impl: f.Func, nonBlocking: f.NonBlocking}
		}
		reg[m.Name] = fns
	}
	return reg
}

// validateHostModules reports host modules that cannot be registered.
func validateHostModules(mods []HostModuleDef) error {
	var errs []error
	seen := map[string]bool{}
	for _, m := range mods {
		switch {
		case m.Name == "":
			errs = append(errs, fmt.Errorf("%w: a host module needs a name", ErrBadHostModule))
			continue
		case isReservedModule(m.Name):
			errs = append(errs, fmt.Errorf("%w: %q is a module Stint provides itself", ErrBadHostModule, m.Name))
			continue
		case seen[m.Name]:
			errs = append(errs, fmt.Errorf("%w: %q is registered twice", ErrBadHostModule, m.Name))
			continue
		}
		seen[m.Name] = true
		fseen := map[string]bool{}
		for _, f := range m.Funcs {
			switch {
			case f.Name == "":
				errs = append(errs, fmt.Errorf("%w: %s: a function needs a name", ErrBadHostModule, m.Name))
			case fseen[f.Name]:
				errs = append(errs, fmt.Errorf("%w: %s.%s is defined twice", ErrBadHostModule, m.Name, f.Name))
			case f.Func == nil:
				errs = append(errs, fmt.Errorf("%w: %s.%s has no Func", ErrBadHostModule, m.Name, f.Name))
			}
			fseen[f.Name] = true
			for _, t := range append(append([]ValueType(nil), f.Params...), f.Results...) {
				switch t {
				case I32, I64, F32, F64:
				default:
					errs = append(errs, fmt.Errorf("%w: %s.%s: value type %#x is not i32, i64, f32 or f64", ErrBadHostModule, m.Name, f.Name, t))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func isReservedModule(name string) bool {
	for _, r := range ReservedModules() {
		if name == r {
			return true
		}
	}
	return false
}

// instantiateHostModules instantiates the embedder's host modules in rt.
func (reg hostRegistry) instantiate(ctx context.Context, rt wazero.Runtime, mods []HostModuleDef) error {
	for _, m := range mods {
		b := rt.NewHostModuleBuilder(m.Name)
		for _, f := range m.Funcs {
			h := reg[m.Name][f.Name]
			b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(h.goModuleFunc), f.Params, f.Results).Export(f.Name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			return fmt.Errorf("sandbox: host module %s: %w", m.Name, err)
		}
	}
	return nil
}

// check reports an import of an embedder's module that it does not
// provide, or with another signature; ok is false if mod is not one of
// the embedder's modules.
func (reg hostRegistry) check(mod, name string, params, results []ValueType) (ok bool, err error) {
	fns, ok := reg[mod]
	if !ok {
		return false, nil
	}
	h, found := fns[name]
	if !found {
		return true, &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports %s.%s, which no host module provides (%s has %s)",
			mod, name, mod, strings.Join(funcNames(fns), ", "))}
	}
	if !sameTypes(params, h.params) || !sameTypes(results, h.results) {
		return true, &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports %s.%s as %s, but the host function is %s",
			mod, name, signature(params, results), signature(h.params, h.results))}
	}
	return true, nil
}

func funcNames(fns map[string]*hostFuncInfo) []string {
	names := make([]string, 0, len(fns))
	for n := range fns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func sameTypes(a, b []ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []ValueType) string {
	names := func(ts []ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(params) + " -> " + names(results)
}

// hostFailure classifies a run ended by a failed host function: a trap
// whose message names the function. It reports whether err was one.
func hostFailure(err error, out *Outcome) bool {
	var he *HostError
	if !errors.As(err, &he) {
		return false
	}
	out.Kind = KindTrapped
	_, out.Stack = splitTrap(err)
	out.Message = he.Error()
	return true
}
