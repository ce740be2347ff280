package sandbox_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// The work counter (work.go) gives the same count for the same module and
// input, and counts every pass of a loop in a function that returns: each
// byte more adds the same work.
func TestWorkUnitsDeterministic(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "work.wasm")
	work := func(input []byte) int64 {
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Input: input})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, out.Message)
		require.Equal(t, "done\n", string(out.Stdout))
		return out.WorkUnits
	}
	in := bytes.Repeat([]byte("z"), 100)
	first := work(in)
	require.Positive(t, first)
	require.Equal(t, first, work(in), "same module and input, same work")
	// Linear in the input, to the unit: a loop's passes are counted
	// whether or not its countdown ran out in the call.
	w1, w2, w3 := work(in[:1]), work(in[:2]), work(in[:3])
	require.Greater(t, w2, w1)
	require.Equal(t, w2-w1, w3-w2)
	require.Equal(t, first, w1+99*(w2-w1))
	// 100 calls of 'z'*64 passes: at least 6,400 loop passes' worth.
	require.Greater(t, first, int64(100*122*64/4))
}

// A loop's pass is charged what the segments it runs hold, not the
// whole loop body (docs/rewrite.md, Segments): 10,000 passes through an arm
// of 32 adds count at least 50 units a pass more than through an arm of
// one add. (Charging the whole body at the loop's check counted both
// alike, and counted a Go guest's dispatch loops about 20x their work.)
func TestWorkUnitsChargeTheArmRun(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "work_arms.wasm")
	work := func(input string) int64 {
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Input: []byte(input)})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, out.Message)
		return out.WorkUnits
	}
	light, heavy := work("l"), work("h")
	require.Positive(t, light)
	require.Greater(t, heavy-light, int64(10_000*50), "light %d, heavy %d", light, heavy)
}

// A large function that calls nothing has its own entry countdown
// (bigBody): a loop that calls it 1,000 times is charged each call its
// size, at least 800 units, not 32 units a call.
func TestWorkUnitsBigLeaf(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	out := run(t, rt, context.Background(), compile(t, rt, "work_big_leaf.wasm"), sandbox.Spec{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.Message)
	require.Greater(t, out.WorkUnits, int64(1000*800))
}

// A work budget ends an endless loop with KindWorkLimit, the guest's
// fault, at the same count each time.
func TestWorkLimitEndsLoop(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "loop.wasm")
	const budget = 5_000_000
	var units []int64
	for range 2 {
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{Work: budget}})
		require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.Message)
		require.ErrorIs(t, out.Err, sandbox.ErrWorkLimit)
		require.Contains(t, out.Message, "work limit of 5000000 units")
		require.Greater(t, out.WorkUnits, int64(budget))
		require.Less(t, out.WorkUnits, int64(budget+3*(1<<17))) // tested at each call out, one countdown's budget (rewrite.InterruptBudget, 1<<17) apart
		units = append(units, out.WorkUnits)
	}
	require.Equal(t, units[0], units[1])
}

// A work budget ends a recursion without loops too (the entry countdown).
func TestWorkLimitEndsRecursion(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "shape_recursion.wasm")
	out := run(t, rt, context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{Work: 3_000_000}})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.Message)
	require.Greater(t, out.WorkUnits, int64(3_000_000))
}

// A budget above what the guest needs changes nothing; the runtime's
// default applies to a run that sets none, and a negative one lifts it.
func TestWorkLimitAboveNeed(t *testing.T) {
	t.Parallel()
	in := bytes.Repeat([]byte("z"), 100)
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "work.wasm")
	need := run(t, rt, context.Background(), mod, sandbox.Spec{Input: in}).WorkUnits
	out := run(t, rt, context.Background(), mod, sandbox.Spec{Input: in, Limits: sandbox.Limits{Work: need + 1}})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.Message)
	require.Equal(t, need, out.WorkUnits)

	low := newRuntime(t, sandbox.Config{Defaults: sandbox.Limits{Work: need / 4}})
	lmod := compile(t, low, "work.wasm")
	out = run(t, low, context.Background(), lmod, sandbox.Spec{Input: in})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.Message)
	out = run(t, low, context.Background(), lmod, sandbox.Spec{Input: in, Limits: sandbox.Limits{Work: -1}})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.Message)
	require.Equal(t, need, out.WorkUnits)
}

// In wazero mode loops are not counted: a work budget is refused, by the
// runtime's config and by Run.
func TestWorkLimitNeedsChecks(t *testing.T) {
	t.Parallel()
	_, err := sandbox.New(context.Background(), sandbox.Config{Interrupt: sandbox.InterruptWazero,
		Defaults: sandbox.Limits{Work: 1000}})
	require.ErrorIs(t, err, sandbox.ErrWorkNeedsChecks)
	rt := newRuntime(t, sandbox.Config{Interrupt: sandbox.InterruptWazero})
	mod := compile(t, rt, "work.wasm")
	_, err = rt.Run(context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{Work: 1000}})
	require.ErrorIs(t, err, sandbox.ErrWorkNeedsChecks)
	out := run(t, rt, context.Background(), mod, sandbox.Spec{Input: []byte("zz")})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.Message)
}

// A plugin call reports its own work: the same input gives the same work
// in a fresh instance and in a warm one, and more input more work.
func TestWorkUnitsPluginCalls(t *testing.T) {
	t.Parallel()
	rt, _ := newPluginRuntime(t, sandbox.InterruptChecks)
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{})
	call := func(in string) *sandbox.Outcome {
		out, err := p.Call(context.Background(), "upper", []byte(in))
		require.NoError(t, err)
		require.Equal(t, sandbox.KindSucceeded, out.Kind, out.Message)
		return out
	}
	in := string(bytes.Repeat([]byte("abc"), 300))
	cold := call(in)
	warm := call(in)
	require.True(t, warm.Warm)
	require.Positive(t, cold.WorkUnits)
	require.Equal(t, cold.WorkUnits, warm.WorkUnits)
	require.Greater(t, call(in+in).WorkUnits, warm.WorkUnits)
}

// A run's budget holds to the unit, also for the work since the last call
// out to Go, which only the end of the run sees: a budget of exactly what
// the run needs succeeds, one unit less is work_limit, never succeeded
// (until rewrite version 21 the budget was tested only at calls out).
// Inputs of 1 to 3 bytes need fewer units than one countdown holds, so
// their runs never call out at all.
func TestWorkLimitToTheUnit(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "work.wasm")
	for _, n := range []int{1, 3, 100} {
		in := bytes.Repeat([]byte("z"), n)
		need := run(t, rt, context.Background(), mod, sandbox.Spec{Input: in}).WorkUnits
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Input: in, Limits: sandbox.Limits{Work: need}})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, "%d bytes: %s", n, out.Message)
		out = run(t, rt, context.Background(), mod, sandbox.Spec{Input: in, Limits: sandbox.Limits{Work: need - 1}})
		require.Equal(t, sandbox.KindWorkLimit, out.Kind, "%d bytes: %s", n, out.Message)
		require.Equal(t, need, out.WorkUnits, "%d bytes", n)
	}
}
