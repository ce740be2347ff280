package sandbox

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// PluginModule is the name of Stint's host module for plugins: what a
// plugin may read of its manifest (docs/plugins.md). Like every module, a
// plugin imports it only if its manifest grants it.
const PluginModule = "stint_plugin"

// pluginFuncs lists the functions of the "stint_plugin" module, for import
// checks.
var pluginFuncs = map[string]bool{"config_get": true}

func instantiatePluginModule(ctx context.Context, r wazero.Runtime) error {
	i32 := api.ValueTypeI32
	_, err := r.NewHostModuleBuilder(PluginModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(configGet), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("key_ptr", "key_len", "buf_ptr", "buf_len").
		Export("config_get").Instantiate(ctx)
	return err
}

// configGet is stint_plugin.config_get(key_ptr, key_len, buf_ptr, buf_len)
// -> i32: the length of the value of the key the manifest grants, written
// at buf_ptr if it fits in buf_len bytes (else nothing is written: call
// again with a larger buffer); -1 if the manifest grants no such key. A
// pointer outside the guest's memory traps.
func configGet(ctx context.Context, m api.Module, stack []uint64) {
	kp, kn := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	bp, bn := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	key := readPluginGuest(m, kp, kn)
	buf := readPluginGuest(m, bp, bn)
	st := stateOf(ctx)
	if st == nil || st.ident == nil {
		stack[0] = api.EncodeI32(-1)
		return
	}
	v, ok := st.ident.config[string(key)]
	if !ok {
		stack[0] = api.EncodeI32(-1)
		return
	}
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	stack[0] = api.EncodeI32(int32(len(v)))
}

func readPluginGuest(m api.Module, ptr, n uint32) []byte {
	if mem := m.Memory(); mem != nil {
		if b, ok := mem.Read(ptr, n); ok {
			return b
		}
	}
	panic(&BadPointerError{Module: PluginModule, Func: "config_get", Ptr: ptr, Len: n, MemSize: memSize(m)})
}
