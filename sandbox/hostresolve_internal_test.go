package sandbox

import (
	"context"
	"reflect"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/stretchr/testify/require"
)

// TestHostModulesResolveEveryHostModule: every host module a runtime
// instantiates is in the map its guests' imports are resolved from, in
// the main wazero runtime and in the uncached one, as the module instance
// wazero's import resolution asserts to. If a wazero upgrade changed the
// wrapper hostModules takes the instance out of, the map would miss them
// and guests would fall back to wazero's store lock: this test says so.
func TestHostModulesResolveEveryHostModule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noop := HostModuleDef{Name: "embedder", Funcs: []HostFunc{{
		Name: "noop", Func: func(context.Context, Call, []uint64) error { return nil },
	}}}
	r, err := New(ctx, Config{HostModules: []HostModuleDef{noop}})
	require.NoError(t, err)
	defer r.Close(ctx)
	require.NoError(t, r.waitImports())

	names := r.instantiatedHostModules()
	require.Contains(t, names, "embedder")
	check := func(h *hostModules) {
		t.Helper()
		for _, name := range names {
			m := h.resolve(name)
			require.NotNil(t, m, name)
			require.Equal(t, "*wasm.ModuleInstance", reflect.TypeOf(m).String(), name)
			require.True(t, isInstance(m), name)
		}
		require.Nil(t, h.resolve("no such module"), "an unknown name falls back to wazero's store")
	}
	check(r.hostModsOf(r.waitRuntime()))

	uncached, err := r.uncachedRuntime(ctx)
	require.NoError(t, err)
	require.NotSame(t, r.hostMods, r.hostModsOf(uncached))
	check(r.hostModsOf(uncached))
}

// TestUnwrapHostRefusesOtherShapes: what is not a wazero host module's
// wrapper around an instance is left to wazero's store.
func TestUnwrapHostRefusesOtherShapes(t *testing.T) {
	t.Parallel()
	require.Nil(t, unwrapHost(nil))
	require.Nil(t, unwrapHost(otherModule{}), "a wrapper with no instance inside")
	require.Nil(t, unwrapHost(otherModule{otherModule{}}), "a wrapper around something else")
}

// otherModule is an api.Module of another shape than wazero's.
type otherModule struct{ api.Module }
