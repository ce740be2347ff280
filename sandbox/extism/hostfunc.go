package extism

import (
	"context"

	"github.com/stint-run/stint/sandbox"
)

// UserModule is the import module under which Extism plugins import their
// host app's own functions (the go-sdk's default namespace). A plugin
// reaches them only if its manifest grants it (sandbox.Manifest.HostModules).
const UserModule = "extism:host/user"

// HostFunction is a host function for Extism plugins, as in Extism's
// go-sdk: a name, a namespace (the import module, UserModule unless
// SetNamespace changes it), a wasm signature and a callback.
type HostFunction struct {
	// Name is the function's import name.
	Name string
	// Namespace is its import module (default UserModule).
	Namespace string
	// Params and Returns are its wasm signature (ValueTypePTR for a
	// kernel offset).
	Params, Returns []ValueType
	// Callback runs a call of it.
	Callback HostFunctionStackCallback
	// NonBlocking promises that Callback returns promptly whatever
	// happens (sandbox.HostFunc.NonBlocking: the plugin's calls then run
	// on the caller's goroutine). Not in Extism's go-sdk, whose calls all
	// run on the caller's goroutine and cannot be abandoned.
	NonBlocking bool
}

// HostFunctionStackCallback runs one call of a HostFunction on the guest's
// goroutine, as in Extism's go-sdk: stack holds the parameters on entry
// and must hold the results on return. It reports a failure by panicking
// (with an error or any value): the guest traps (sandbox.KindTrapped,
// Outcome.Err wraps a *sandbox.HostError), never the host. ctx is the
// call's hard context: a callback that may block must return once it is
// done (docs/plugins.md, "Stopping a call", says what happens to one that
// does not).
type HostFunctionStackCallback func(ctx context.Context, p *CurrentPlugin, stack []uint64)

// NewHostFunctionWithStack returns a host function named name in
// UserModule, as Extism's go-sdk's function of that name does.
func NewHostFunctionWithStack(name string, callback HostFunctionStackCallback, params, returns []ValueType) HostFunction {
	return HostFunction{Name: name, Namespace: UserModule, Params: params, Returns: returns, Callback: callback}
}

// SetNamespace sets the function's import module.
func (f *HostFunction) SetNamespace(namespace string) { f.Namespace = namespace }

// HostModules returns the host modules that give funcs to plugins, one per
// namespace, in the order they first appear: append them to
// sandbox.Config.HostModules, and grant each module in the manifests of
// the plugins that may call them (sandbox.Manifest.HostModules;
// sandbox.ManifestFromExtism grants UserModule to a module importing it). A
// function with no namespace is in UserModule; one with no callback is
// reported by sandbox.Config.Validate (sandbox.New) like any host function
// without a Func.
func HostModules(funcs ...HostFunction) []sandbox.HostModuleDef {
	var mods []sandbox.HostModuleDef
	index := map[string]int{}
	for _, f := range funcs {
		ns := f.Namespace
		if ns == "" {
			ns = UserModule
		}
		i, ok := index[ns]
		if !ok {
			i = len(mods)
			index[ns] = i
			mods = append(mods, sandbox.HostModuleDef{Name: ns})
		}
		hf := sandbox.HostFunc{Name: f.Name, Params: f.Params, Results: f.Returns, NonBlocking: f.NonBlocking}
		if cb, name := f.Callback, ns+"."+f.Name; cb != nil {
			hf.Func = func(ctx context.Context, c sandbox.Call, stack []uint64) error {
				cb(ctx, newCurrentPlugin(c, name), stack)
				return nil
			}
		}
		mods[i].Funcs = append(mods[i].Funcs, hf)
	}
	return mods
}
