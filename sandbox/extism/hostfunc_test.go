package extism_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/extism"
)

// HostModules makes one module per namespace, in the order they first
// appear, with UserModule for a function with none; a function with no
// callback is refused by sandbox.New, as any host function without a
// Func.
func TestHostModules(t *testing.T) {
	noop := func(context.Context, *extism.CurrentPlugin, []uint64) {}
	a := extism.NewHostFunctionWithStack("a", noop, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypeI32})
	b := extism.NewHostFunctionWithStack("b", noop, nil, nil)
	b.SetNamespace("env2")
	c := extism.HostFunction{Name: "c", Callback: noop} // no namespace: UserModule
	mods := extism.HostModules(a, b, c)
	require.Len(t, mods, 2)
	require.Equal(t, extism.UserModule, mods[0].Name)
	require.Equal(t, "env2", mods[1].Name)
	require.Equal(t, []string{"a", "c"}, []string{mods[0].Funcs[0].Name, mods[0].Funcs[1].Name})
	require.Equal(t, []sandbox.ValueType{sandbox.I64}, mods[0].Funcs[0].Params)
	require.Equal(t, []sandbox.ValueType{sandbox.I32}, mods[0].Funcs[0].Results)
	newRuntime(t, sandbox.Config{HostModules: mods})

	_, err := sandbox.New(context.Background(), sandbox.Config{HostModules: extism.HostModules(extism.HostFunction{Name: "d"})})
	require.ErrorIs(t, err, sandbox.ErrBadHostModule)
	require.ErrorContains(t, err, "extism:host/user.d has no Func")
}

// The go-sdk's Encode and Decode helpers round-trip their values.
func TestEncodeDecode(t *testing.T) {
	require.Equal(t, int32(-7), extism.DecodeI32(extism.EncodeI32(-7)))
	require.Equal(t, uint32(1<<31+5), extism.DecodeU32(extism.EncodeU32(1<<31+5)))
	require.Equal(t, uint64(1<<63), extism.EncodeI64(-1<<63))
	require.Equal(t, float32(2.5), extism.DecodeF32(extism.EncodeF32(2.5)))
	require.Equal(t, -1.25, extism.DecodeF64(extism.EncodeF64(-1.25)))
}
