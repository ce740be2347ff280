package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// The red team's 215-byte escape (issue 23), through the real runtime:
// three loop functions, each calling the next, end at their attempt
// timeout from _start, from the start section and as a called export,
// with their work counted (rewrite version 20 ran 113 s under a 1 s
// timeout, 1.2e11 units, and was abandoned by the watchdog).
func TestNestedLoopsEndAtTimeout(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	for _, c := range []struct{ fixture, export string }{
		{"nested_loops", ""}, {"nested_loops_start", ""}, {"nested_loops", "run"},
	} {
		mod := compile(t, rt, c.fixture)
		// Half a second: at 100 ms a loaded machine (the rest of make
		// test beside it) once ended nested_loops_start before it had
		// run any of its code, with no work to count.
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Export: c.export,
			Limits: sandbox.Limits{Timeout: 500 * time.Millisecond}})
		require.Equal(t, sandbox.KindTimedOut, out.Kind, "%s %s: %s", c.fixture, c.export, out)
		require.Positive(t, out.WorkUnits, c.fixture)
	}
	// A work budget ends it too, at the budget.
	mod := compile(t, rt, "nested_loops")
	out := run(t, rt, context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{Work: 5_000_000}})
	require.Equal(t, sandbox.KindWorkLimit, out.Kind, out.String())
	require.GreaterOrEqual(t, out.WorkUnits, int64(5_000_000))
}
