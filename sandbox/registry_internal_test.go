package sandbox

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
)

// TestRegistryEviction: past MaxModules the least recently used module
// leaves the registry; a caller still holding it can run it; its compiled
// code is released once nothing holds it; compiling it again works.
func TestRegistryEviction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := New(ctx, Config{MaxModules: 2})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	released := make(chan struct{}, 16)
	onRelease := func() { released <- struct{}{} }
	r.onRelease.Store(&onRelease)

	compile := func(name string) *Module {
		t.Helper()
		m, err := r.Compile(ctx, wat.MustLoad(name))
		require.NoError(t, err)
		return m
	}
	cached := func(m *Module) bool {
		_, ok := r.Lookup(m.SHA256)
		return ok
	}

	held := compile("noop")
	hello := compile("echo")
	_, ok := r.Lookup(held.SHA256) // noop is now more recent than hello
	require.True(t, ok)
	compile("exit3") // evicts echo, the least recently used
	require.Equal(t, 2, r.moduleCount())
	require.False(t, cached(hello))
	require.True(t, cached(held))

	// Lookup counts as a use: noop is now the most recent, exit3 the least.
	compile("progress") // evicts exit3
	require.Equal(t, 2, r.moduleCount())
	compile("args_env") // evicts noop
	require.False(t, cached(held))
	out, err := r.Run(ctx, held, Spec{})
	require.NoError(t, err)
	require.True(t, out.Success(), "a module the caller holds still runs after eviction: %s", out)

	// Nothing holds echo's or noop's *Module any more: both are released.
	hello, held = nil, nil
	for range 2 {
		runtime.GC()
		select {
		case <-released:
		case <-time.After(30 * time.Second):
			t.Fatal("an evicted, unreachable module was not released")
		}
	}

	st := r.Stats()
	require.Positive(t, st.ModuleBytes)
	st.ModuleBytes = 0
	require.Equal(t, Stats{Modules: 2, Compilations: 5, Evictions: 3}, st)

	again := compile("noop")
	out, err = r.Run(ctx, again, Spec{})
	require.NoError(t, err)
	require.True(t, out.Success(), "compiled again after its release: %s", out)
}

// TestRegistryUnlimited: a negative MaxModules keeps everything.
func TestRegistryUnlimited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := New(ctx, Config{MaxModules: -1})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()
	for _, name := range []string{"noop", "echo", "exit3", "progress"} {
		_, err := r.Compile(ctx, wat.MustLoad(name))
		require.NoError(t, err)
	}
	require.Equal(t, 4, r.moduleCount())
}
