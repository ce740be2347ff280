package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCallWork: `runner call --work` is the call's work budget: a spinning
// export ends with work_limit (exit 18), a call within it succeeds, and a
// budget that is not a positive number is bad usage.
func TestCallWork(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	_, stderr, code := runRunner(t, "", "call", fixture(t, "plugin_basic"), "spin", "--work", "1000000", "--timeout", "1m", "--data-dir", dir)
	require.Equal(t, 18, code, stderr)

	out, stderr, code := runRunner(t, "hi", "call", fixture(t, "plugin_basic"), "upper", "--input", "-", "--work", "1000000", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "HI", out)

	runExits(t, 2, "--work -5: want a positive number of work units",
		"call", fixture(t, "plugin_basic"), "noop", "--work", "-5", "--data-dir", dir)
}
