package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunCallStackLimit: the runner binary ends a recursion without end at
// the call-stack limit (trapped, exit 11, a message naming the limit), and
// sandbox.module_limits sets the limit: the callstack fixture, which counts
// 138,241 bytes, succeeds at exactly that and traps one byte under it.
func TestRunCallStackLimit(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	stderr := runExits(t, 11, `"outcome":"trapped"`, "run", "-v", fixture(t, "recursion"), "--data-dir", dir)
	require.Contains(t, stderr, "call stack over its limit of 4194304 bytes (sandbox module limit max_call_stack)")

	_, stderr, code := runRunner(t, "", "run", "-v", fixture(t, "callstack"), "--data-dir", dir,
		"--sandbox-module-limits", "max_call_stack=138241")
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runRunner(t, "", "run", "-v", fixture(t, "callstack"), "--data-dir", dir,
		"--sandbox-module-limits", "max_call_stack=138240")
	require.Equal(t, 11, code, stderr)
	require.Contains(t, stderr, "call stack over its limit of 138240 bytes")
}
