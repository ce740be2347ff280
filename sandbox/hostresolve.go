package sandbox

import (
	"context"
	"reflect"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/stint-run/stint/sandbox/internal/resume"
)

// hostModules hands wazero the host modules of one wazero runtime when it
// resolves a guest's imports, from a map read without a lock. Without it,
// wazero looks each imported module up in its store under the store's
// RWMutex, once per imported module and instantiation, while every
// instantiation and close takes that lock to write: with two workers on
// two cores, a lookup waited behind the other worker's write, its
// goroutine slept, and the core idled until it was woken
// (docs/design/per-task-cost.md, "Where two workers wait on each other").
type hostModules struct {
	// mods is written once, before any guest is instantiated in the
	// runtime (Runtime.importsDone, or r.mu for the uncached runtime),
	// and only read after.
	mods map[string]api.Module
	// ctx carries resolve as wazero's ImportResolver; callContext.Value
	// asks it for what the run's own context does not hold. A plugin's
	// new instance gets resolve through its instantiation's context
	// (Plugin.newInstance).
	ctx context.Context
}

func newHostModules() *hostModules {
	h := &hostModules{}
	h.ctx = experimental.WithImportResolver(context.Background(), h.resolve)
	return h
}

// resolve returns the host module named name, or nil: wazero then looks
// in its store, as without a resolver.
func (h *hostModules) resolve(name string) api.Module {
	if m, ok := h.mods[name]; ok {
		return m
	}
	return nil
}

// fill records the modules of rt named names. wazero wraps a host module
// in a type of its own (hostModuleInstance, so that its functions cannot
// be called from Go) while its import resolution wants the instance
// inside: fill takes that out of the wrapper's one field, and leaves out
// any module it cannot, which wazero then finds in its store.
func (h *hostModules) fill(rt wazero.Runtime, names []string) {
	mods := make(map[string]api.Module, len(names))
	for _, name := range names {
		if m := unwrapHost(rt.Module(name)); m != nil {
			mods[name] = m
		}
	}
	h.mods = mods
}

// instancePkg and instanceName name the type wazero's import resolution
// asserts an ImportResolver's module to (*wasm.ModuleInstance): a module
// of any other type would make it panic.
const (
	instancePkg  = "github.com/tetratelabs/wazero/internal/wasm"
	instanceName = "ModuleInstance"
)

// isInstance reports whether m is a pointer to wazero's module instance
// type, by its package path and name.
func isInstance(m api.Module) bool {
	t := reflect.TypeOf(m)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().PkgPath() == instancePkg && t.Elem().Name() == instanceName
}

// unwrapHost returns the module instance inside m, a host module as
// wazero.Runtime.Module returns it, or nil if m is not of that shape.
func unwrapHost(m api.Module) api.Module {
	if m == nil {
		return nil
	}
	if isInstance(m) {
		return m
	}
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Struct || v.NumField() != 1 || !v.Type().Field(0).IsExported() {
		return nil
	}
	inner, ok := v.Field(0).Interface().(api.Module)
	if !ok || !isInstance(inner) {
		return nil
	}
	return inner
}

// instantiatedHostModules names every host module allImports instantiates.
func (r *Runtime) instantiatedHostModules() []string {
	names := []string{wasiModule, HostModule, interruptModule,
		resume.ImportModule, PluginModule, ExtismModule}
	for _, m := range r.cfg.HostModules {
		names = append(names, m.Name)
	}
	return names
}

// hostModsOf returns the host modules of rt, one of the runtime's two
// wazero runtimes (under r.mu for the uncached one, which
// uncachedRuntime returned).
func (r *Runtime) hostModsOf(rt wazero.Runtime) *hostModules {
	if rt == r.rt {
		return r.hostMods
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.uncachedMods
}
