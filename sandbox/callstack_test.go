package sandbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// callstackNeed is what the callstack fixture's deep export counts:
// 1,001 frames of $sum (one parameter, up to three values on the operand
// stack and 20 bytes of code: 64 + 4*16 + 20/2 bytes) and its own (two
// values, 15 bytes of code: 64 + 2*16 + 15/2).
const callstackNeed = 64 + 2*16 + 15/2 + 1001*(64+4*16+20/2)

func callStackRuntime(t *testing.T, limit uint32, mode sandbox.InterruptMode) *sandbox.Runtime {
	t.Helper()
	return newRuntime(t, sandbox.Config{Interrupt: mode, ModuleLimits: sandbox.ModuleLimits{MaxCallStack: limit}})
}

// TestCallStackLimit: a guest that recurses to exactly the limit
// succeeds with the right result; one byte less and it traps with a
// message that names the limit.
func TestCallStackLimit(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			rt := callStackRuntime(t, callstackNeed, mode)
			out := run(t, rt, context.Background(), compile(t, rt, "callstack"), sandbox.Spec{})
			require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())

			rt = callStackRuntime(t, callstackNeed-1, mode)
			out = run(t, rt, context.Background(), compile(t, rt, "callstack"), sandbox.Spec{})
			require.Equal(t, sandbox.KindTrapped, out.Kind, out.String())
			require.ErrorIs(t, out.Err, sandbox.ErrCallStack)
			require.Equal(t, "call stack over its limit of 138240 bytes (sandbox module limit max_call_stack): a recursion too deep?", out.Message)
			require.Contains(t, out.Stack, "stint:sandbox.call_stack()")
			require.Contains(t, out.Stack, ".sum(i32) i32")
		})
	}
}

// TestCallStackEndlessRecursion: recursion without end, direct, mutual,
// through a table or from an if's arm (the calling arm), ends at the default limit as a trap naming it,
// not at wazero's own ceiling ("stack overflow").
func TestCallStackEndlessRecursion(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "callstack")
	for _, export := range []string{"direct", "mutual", "indirect", "arm"} {
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Export: export})
		require.Equal(t, sandbox.KindTrapped, out.Kind, "%s: %s", export, out)
		require.ErrorIs(t, out.Err, sandbox.ErrCallStack, export)
		require.Contains(t, out.Message, "of 4194304 bytes (sandbox module limit max_call_stack)", export)
	}
	// The recursion fixture (a command) too.
	out := run(t, rt, context.Background(), compile(t, rt, "recursion"), sandbox.Spec{})
	require.Equal(t, sandbox.KindTrapped, out.Kind, out.String())
	require.ErrorIs(t, out.Err, sandbox.ErrCallStack)
}

// TestCallStackPluginWarm: every return gives back what its call took,
// so a warm plugin instance whose export recurses to exactly the limit
// succeeds call after call.
func TestCallStackPluginWarm(t *testing.T) {
	t.Parallel()
	rt := callStackRuntime(t, callstackNeed, "")
	p := loadPlugin(t, rt, "callstack", sandbox.Manifest{Name: "callstack"})
	for i := range 5 {
		out := call(t, p, "deep", "", sandbox.CallOptions{})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, "call %d: %s", i, out)
		require.Equal(t, i > 0, out.Warm, "call %d", i)
	}
	out := call(t, p, "direct", "", sandbox.CallOptions{})
	require.ErrorIs(t, out.Err, sandbox.ErrCallStack)
	out = call(t, p, "deep", "", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, "a fresh instance after the trap: %s", out)
	require.False(t, out.Warm)
}

// TestCallStackCallingArmBalanced: a function whose calls all lie in
// one arm of an if takes its frame in that arm and gives it back on the
// way out of it, and its leaves (the other arm) take and give nothing:
// after many warm calls of armdeep, the budget is exactly what it was,
// neither less (deep still fits a limit of exactly what it needs) nor
// more (deep still goes over one byte less).
func TestCallStackCallingArmBalanced(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit uint32
		deep  sandbox.Kind
	}{{callstackNeed, sandbox.KindSucceeded}, {callstackNeed - 1, sandbox.KindTrapped}} {
		rt := callStackRuntime(t, c.limit, "")
		p := loadPlugin(t, rt, "callstack", sandbox.Manifest{Name: "callstack"})
		for i := range 20 {
			out := call(t, p, "armdeep", "", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindSucceeded, out.Kind, "call %d: %s", i, out)
		}
		out := call(t, p, "deep", "", sandbox.CallOptions{})
		require.Equal(t, c.deep, out.Kind, "limit %d: %s", c.limit, out)
		require.True(t, out.Warm)
	}
}

// TestCallStackLimitConfig: the limit is validated and set by name.
func TestCallStackLimitConfig(t *testing.T) {
	t.Parallel()
	require.EqualValues(t, 4<<20, sandbox.DefaultModuleLimits().MaxCallStack)
	var l sandbox.ModuleLimits
	require.NoError(t, l.SetByName("max_call_stack", 1<<20))
	require.EqualValues(t, 1<<20, l.MaxCallStack)
	l.MaxCallStack = sandbox.MaxCallStackLimit + 1
	require.ErrorContains(t, l.WithDefaults().Validate(), "max_call_stack")
}
