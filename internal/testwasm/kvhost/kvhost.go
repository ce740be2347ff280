package kvhost

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/sandbox"
)

// Name is the module's import name.
const Name = "env"

// Get answers one kv_get of key: its value, or ok false where it has
// none. An error traps the guest's call. It may use c as any host
// function does.
type Get func(ctx context.Context, c sandbox.Call, key string) (value []byte, ok bool, err error)

// Def returns the module, its kv_get answered by get and marked
// sandbox.HostFunc.NonBlocking where nonBlocking.
func Def(get Get, nonBlocking bool) sandbox.HostModuleDef {
	return sandbox.HostModuleDef{Name: Name, Funcs: []sandbox.HostFunc{{
		Name:        "kv_get",
		Params:      []sandbox.ValueType{sandbox.I32, sandbox.I32, sandbox.I32, sandbox.I32},
		Results:     []sandbox.ValueType{sandbox.I32},
		NonBlocking: nonBlocking,
		Func: func(ctx context.Context, c sandbox.Call, stack []uint64) error {
			key, err := c.ReadString(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
			if err != nil {
				return err
			}
			v, ok, err := get(ctx, c, key)
			if err != nil {
				return err
			}
			if !ok {
				stack[0] = api.EncodeI32(-1)
				return nil
			}
			if err := c.Write(api.DecodeU32(stack[2]), v[:min(len(v), int(api.DecodeU32(stack[3])))]); err != nil {
				return err
			}
			stack[0] = api.EncodeI32(int32(len(v)))
			return nil
		},
	}}}
}
