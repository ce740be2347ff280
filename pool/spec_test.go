package pool_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// TestAttemptKeepsTrapReport: a trapped attempt's stderr tail ends with
// its trap's report (where it was), however much the guest wrote to
// stderr before, and within tasks.MaxStderrTail; a deep stack keeps its
// innermost frames; an attempt that did not trap keeps the guest's tail.
func TestAttemptKeepsTrapReport(t *testing.T) {
	t.Parallel()
	now := time.Now()
	trap := &sandbox.Outcome{Kind: sandbox.KindTrapped, Message: "unreachable", Stack: ".crash()\n\t.start()",
		Stderr: bytes.Repeat([]byte("noise "), 2000)}
	att := pool.AttemptOf(trap, now, now)
	require.True(t, strings.HasSuffix(att.Stderr, "noise \nwasm error: unreachable\nwasm stack trace:\n\t.crash()\n\t.start()\n"), att.Stderr)
	require.LessOrEqual(t, len(att.Stderr), tasks.MaxStderrTail)

	deep := &sandbox.Outcome{Kind: sandbox.KindTrapped, Message: "call stack exhausted",
		Stack: ".inner()" + strings.Repeat("\n\t.recurse()", 2000)}
	att = pool.AttemptOf(deep, now, now)
	require.True(t, strings.HasPrefix(att.Stderr, "wasm error: call stack exhausted\nwasm stack trace:\n\t.inner()\n"), att.Stderr[:80])
	require.True(t, strings.HasSuffix(att.Stderr, "\t...\n"))
	require.LessOrEqual(t, len(att.Stderr), tasks.MaxStderrTail)

	failed := &sandbox.Outcome{Kind: sandbox.KindFailed, ExitCode: 1, Stderr: []byte("oops\n")}
	require.Equal(t, "oops\n", pool.AttemptOf(failed, now, now).Stderr)
	require.Empty(t, pool.TrapReport(failed))
}
