package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
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

// TestCallExitsAfterAbandonOnSignals: runner call of an export blocked in
// a host call that ignores every stop exits once a second SIGTERM forces
// the call and the watchdog abandons it: with the forced outcome's code
// (12) and its answer written, while the host call still blocks.
func TestCallExitsAfterAbandonOnSignals(t *testing.T) {
	t.Parallel()
	fifo := blockFifo(t)
	p := startRunner(t, strings.NewReader(fifo), "call", fixture(t, "plugin_block"), "block", "--input", "-",
		"--grant", "stint_test", "--timeout", "10m", "--data-dir", dataDir(t), "-v")
	// Opening the fifo's write end returns once the host call opened its
	// read end: the call is blocked in it. The write end stays open (no
	// EOF) until the test ends.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	p.signal(t, syscall.SIGTERM)
	p.waitLine(t, "stop requested")
	p.signal(t, syscall.SIGTERM)
	p.waitLine(t, "forcing the plugin")
	code := p.wait(t)
	require.Equal(t, 12, code, p.stderr())
	require.Contains(t, p.stderr(), "abandoned")
	require.Contains(t, p.stderr(), `"outcome":"forced"`)
}
