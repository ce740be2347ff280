package sandbox_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// A plugin call's work budget, as a task's: a spinning export ends as
// work_limit (its instance discarded), a call within the budget succeeds
// and reports its work, the same for the same input; CallOptions.Work
// narrows the manifest's budget for one call. In wazero mode a budget is
// refused, in the manifest and in a call.
func TestPluginWork(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{Interrupt: sandbox.InterruptChecks})
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "w",
		Limits: sandbox.PluginLimits{Timeout: time.Minute, Work: 5_000_000}})

	out := call(t, p, "upper", "hello", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Positive(t, out.WorkUnits)
	again := call(t, p, "upper", "hello", sandbox.CallOptions{})
	require.True(t, again.Warm)
	require.Equal(t, out.WorkUnits, again.WorkUnits, "a warm call counts its own work, deterministically")

	out = call(t, p, "spin", "", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.String())
	require.ErrorIs(t, out.Err, sandbox.ErrWorkLimit)
	require.Contains(t, out.Message, "work limit of 5000000 units reached")
	require.GreaterOrEqual(t, out.WorkUnits, int64(5_000_000))
	require.EqualValues(t, 1, p.Stats().Discarded, "the instance is discarded")

	out = call(t, p, "spin", "", sandbox.CallOptions{Work: 100_000})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.String())
	require.Contains(t, out.Message, "work limit of 100000 units reached")

	// A budget smaller than a call's work: that call never succeeds.
	out = call(t, p, "upper", strings.Repeat("a", 10_000), sandbox.CallOptions{Work: 10})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.String())

	wz := newRuntime(t, sandbox.Config{Interrupt: sandbox.InterruptWazero})
	_, err := wz.LoadPlugin(context.Background(), wat.MustLoad("plugin_basic"), sandbox.Manifest{Limits: sandbox.PluginLimits{Work: 1000}})
	require.ErrorIs(t, err, sandbox.ErrManifest)
	require.ErrorIs(t, err, sandbox.ErrWorkNeedsChecks)
	pw := loadPlugin(t, wz, "plugin_basic", sandbox.Manifest{})
	_, err = pw.CallWith(context.Background(), "noop", nil, sandbox.CallOptions{Work: 1000})
	require.ErrorIs(t, err, sandbox.ErrWorkNeedsChecks)
}

// TestPluginWarmWorkUnits: a warm instance's call counts the same work as
// the same call in a fresh instance, for random sequences of inputs long
// enough to refill the countdown inside a call (so a call starts where
// the last one left it, mid-budget): a warm call starts from the
// countdown the last call's end read, without reading it again.
func TestPluginWarmWorkUnits(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	rt := newRuntime(t, sandbox.Config{Interrupt: sandbox.InterruptChecks})
	warm := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "warm"})
	fresh := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "fresh", Fresh: true})
	var into sandbox.Outcome
	for i := range 40 {
		fn, input := "noop", []byte(nil)
		if rng.IntN(4) != 0 {
			fn, input = "upper", []byte(strings.Repeat("x", rng.IntN(32<<10)))
		}
		want, err := fresh.Call(context.Background(), fn, input)
		require.NoError(t, err)
		require.True(t, want.Success(), want.String())
		require.False(t, want.Warm)
		require.NoError(t, warm.CallInto(context.Background(), fn, input, sandbox.CallOptions{}, &into))
		require.True(t, into.Success(), into.String())
		require.Equal(t, i > 0, into.Warm)
		require.Equal(t, want.WorkUnits, into.WorkUnits, "call %d: %s of %d bytes", i, fn, len(input))
	}
}
