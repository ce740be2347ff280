// Package extism gives Extism plugins run by Stint (sandbox.Runtime's
// LoadPlugin) their host app's own functions, defined as with Extism's
// go-sdk (github.com/extism/go-sdk): code written for the go-sdk's
// NewHostFunctionWithStack, HostFunction, *CurrentPlugin and ValueType
// constants compiles against this package by changing its import path.
//
// HostModules turns the functions into sandbox.HostModuleDef values for
// sandbox.Config.HostModules; a plugin reaches them only if its manifest
// grants their module (UserModule by default; sandbox.ManifestFromExtism
// grants it to a module that imports it). CurrentPlugin.Log and Logf write
// to the call's stderr. docs/plugins.md says more.
//
//	get := extism.NewHostFunctionWithStack("kv_get",
//		func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
//			key, err := p.ReadString(stack[0])
//			if err != nil {
//				panic(err) // the plugin traps, never the host
//			}
//			stack[0], err = p.WriteString(lookup(key))
//			if err != nil {
//				panic(err)
//			}
//		}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
//	rt, err := sandbox.New(ctx, sandbox.Config{HostModules: extism.HostModules(get)})
//
// Files: hostfunc.go (HostFunction, HostModules), plugin.go (CurrentPlugin,
// Memory), log.go (LogLevel, CurrentPlugin.Log and Logf), values.go
// (ValueType and the Encode/Decode helpers).
package extism
