package sandbox

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"

	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// elemBomb is a command whose one passive element segment holds n
// references to function 0.
func elemBomb(n int) []byte {
	seg := wasmtest.Cat(wasmtest.LEB(1), []byte{0}, wasmtest.LEB(uint64(n)), make([]byte, n))
	return wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.Vec(wasmtest.LEB(0))),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(0)))),
		wasmtest.Sec(wasmbin.SecElement, wasmtest.LEB(1), seg), wasmtest.Sec(wasmbin.SecCode, wasmtest.Vec(wasmtest.FBody(wasmbin.OpEnd))))
}

// funcBomb is a command of n empty functions.
func funcBomb(n int) []byte {
	bodies := bytes.Repeat(wasmtest.FBody(wasmbin.OpEnd), n)
	return wasmtest.Module(wasmtest.Sec(wasmbin.SecType, wasmtest.Vec(wasmtest.FuncType(nil, nil))), wasmtest.Sec(wasmbin.SecFunction, wasmtest.LEB(uint64(n)), make([]byte, n)),
		wasmtest.Sec(wasmbin.SecExport, wasmtest.Vec(wasmtest.Cat(wasmtest.Str("_start"), []byte{0}, wasmtest.LEB(0)))), wasmtest.Sec(wasmbin.SecCode, wasmtest.LEB(uint64(n)), bodies))
}

// TestPerItemBombsRefused: the shapes of issue 24 that made wazero hold
// memory per item are refused by the default limits before compiling,
// naming their limit, and pass just under them.
func TestPerItemBombsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := New(ctx, Config{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	d := DefaultModuleLimits()
	for _, c := range []struct {
		name, limit string
		over, under []byte
	}{
		{"passive element items", "max_element_items", elemBomb(int(d.MaxElementItems) + 1), elemBomb(1000)},
		{"empty functions", "max_functions", funcBomb(int(d.MaxFunctions) + 1), funcBomb(1000)},
	} {
		_, err := r.Compile(ctx, c.over)
		var me *ModuleError
		require.True(t, errors.As(err, &me), "%s: %v", c.name, err)
		require.Equal(t, KindInvalidModule, me.Kind)
		require.Contains(t, me.Message, "(sandbox module limit "+c.limit+")", c.name)
		_, err = r.Compile(ctx, c.under)
		require.NoError(t, err, c.name)
	}
}

// TestModuleCost: the estimate grows with what wazero holds per item, and
// a Go-sized module is estimated in megabytes, not more.
func TestModuleCost(t *testing.T) {
	t.Parallel()
	s := readShape(funcBomb(1000))
	require.Equal(t, moduleShape{size: s.size, types: 1, funcs: 1000, codeBytes: s.codeBytes}, s)
	require.Greater(t, moduleCost(funcBomb(100_000), nil), int64(100_000*200), "each function counts its compiled cost")
	require.Greater(t, moduleCost(elemBomb(100_000), nil), int64(100_000*40), "each element item counts")
	require.Equal(t, moduleCost(elemBomb(10), nil)+1<<20, moduleCost(elemBomb(10), &memory.Image{Size: 1 << 20}), "the image counts")
	require.Less(t, moduleCost(wat.MustLoad("noop"), nil), int64(1<<20))
}

// TestRegistryByteBound: past MaxModuleBytes the least recently used
// modules leave the registry, whatever their number; the module just
// compiled stays even alone over the bound.
func TestRegistryByteBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	big := funcBomb(20_000) // about 5 MB estimated
	cost := moduleCost(big, nil)
	r, err := New(ctx, Config{MaxModules: 100, MaxModuleBytes: cost + cost/2})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()

	noop, err := r.Compile(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	m1, err := r.Compile(ctx, big)
	require.NoError(t, err)
	require.InEpsilon(t, cost, m1.cost, 0.1, "estimated from what wazero compiles (the rewrite)")
	require.Equal(t, 2, r.moduleCount(), "both fit")

	big2 := funcBomb(20_001) // other bytes, about the same estimate
	m2, err := r.Compile(ctx, big2)
	require.NoError(t, err)
	st := r.Stats()
	require.Equal(t, int64(2), st.Evictions, "noop and the first big one left to make room")
	require.Equal(t, 1, st.Modules)
	require.Equal(t, m2.cost, st.ModuleBytes)
	_, ok := r.Lookup(m1.SHA256)
	require.False(t, ok)
	_, ok = r.Lookup(noop.SHA256)
	require.False(t, ok)

	// Alone over the bound, the module just compiled is kept.
	r2, err := New(ctx, Config{MaxModuleBytes: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, r2.Close(ctx)) }()
	m, err := r2.Compile(ctx, big)
	require.NoError(t, err)
	_, ok = r2.Lookup(m.SHA256)
	require.True(t, ok)
}
