package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// TestStopPathsEveryMode stops every blocking path of StopLatency in each
// interrupt mode, with the outcome StopLatency expects, 20 times.
//
// It guards against a bug found and fixed in this wave. Repeated, it froze the whole test process
// (not even the test timeout's panic prints) for the spinning loop in
// checks mode and the loop-free recursion in both modes (STOPPATH=loop/checks,
// recursion/checks, recursion/wazero; -test.count 5 is enough on 2 cores).
// Likely cause: compiled wasm is not preemptible by Go; a guest spinning in
// code where no check leaves to Go (checks mode loops, function entries in
// both modes: `global.get; if unreachable` never enters Go) blocks a GC
// stop-the-world for ever, and with it the goroutine that would set the stop
// global. wazero's close-on-context-done check at loop headers is a call into
// Go for exactly this reason. The fix (sandbox/interrupt.go): Stint's
// checks leave to Go every ~30 µs of work, so the goroutine can be
// preempted.
func TestStopPathsEveryMode(t *testing.T) {
	ctx := context.Background()
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(ctx, sandbox.Config{Interrupt: mode})
		require.NoError(t, err)
		paths, err := stopPaths(ctx, rt)
		require.NoError(t, err)
		for range 20 {
			for _, p := range paths {
				if k := os.Getenv("STOPPATH"); k != "" && k != p.key+"/"+string(mode) {
					continue
				}
				done := make(chan error, 1)
				go func() { _, err := stopOnce(ctx, rt, p); done <- err }()
				select {
				case err := <-done:
					require.NoError(t, err, "%s in %s mode", p.key, mode)
				case <-time.After(20 * time.Second):
					t.Fatalf("%s in %s mode: Run did not return within 20s of its stop", p.key, mode)
				}
			}
		}
		require.NoError(t, rt.Close(ctx))
	}
}
