package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCallReturnsWhileHostBlocks: runner call --timeout 1s of an export
// blocked in a host call that ignores every stop (blockhost's
// stint_test.block, in the tests' build) exits 13, timed out, once the
// watchdog abandons the call, while the host call still blocks (its fifo
// is written only when the test ends); the outcome says it was abandoned,
// and its duration is the call's: from its start to runner call's exit,
// past its deadline.
func TestCallReturnsWhileHostBlocks(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, stderr, code := runRunner(t, blockFifo(t), "call", fixture(t, "plugin_block"), "block", "--input", "-",
		"--grant", "stint_test", "--timeout", "1s", "--data-dir", dataDir(t), "-v")
	took := time.Since(start)
	require.Equal(t, 13, code, stderr)
	require.Contains(t, stderr, "run abandoned")
	var out struct {
		Outcome  string  `json:"outcome"`
		Reason   string  `json:"reason"`
		Duration float64 `json:"duration"`
	}
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, `"outcome":"timed_out"`) && strings.Contains(l, `"duration"`) {
			require.NoError(t, json.Unmarshal([]byte(l), &out), l)
		}
	}
	require.Equal(t, "timed_out", out.Outcome, stderr)
	require.Contains(t, out.Reason, "the guest did not end within 500ms of its forced stop; abandoned", stderr)
	d := time.Duration(out.Duration * float64(time.Second))
	require.GreaterOrEqual(t, d, time.Second, "not before its deadline")
	require.Less(t, d, took, "within the process's life")
}
