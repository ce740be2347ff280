package shutdown

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHandleSignals sends real signals to the test process. It uses SIGUSR1
// and SIGUSR2, passed explicitly, so that the test runner is never stopped;
// no other test listens for them.
func TestHandleSignals(t *testing.T) {
	t.Parallel()
	w := newFakeWorkload(1, endsForce)
	c := newTest(t, w)
	stop := c.HandleSignals(context.Background(), syscall.SIGUSR1, syscall.SIGUSR2)
	defer stop()

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
	recv(t, w.intake) // the first signal started the stop
	require.False(t, c.Ready())

	// The fake clock never moves: only escalation can end the drain.
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR2))
	recv(t, c.Done())
	r, ok := c.Report()
	require.True(t, ok)
	require.True(t, r.Escalated)
	require.True(t, r.Phase(PhaseCancel).Skipped)
	require.Equal(t, 1, r.Forced)
	require.Equal(t, 1, c.logs.FilterMessage("shutdown: signal received, stopping").Len())
	require.Equal(t, 1, c.logs.FilterMessage("shutdown: signal received again, escalating").Len())

	stop()
	stop() // safe twice
}

func TestHandleSignalsStops(t *testing.T) {
	t.Parallel()
	c := newTest(t)

	// stop before any signal: the listener goes away (goleak checks it).
	stop := c.HandleSignals(context.Background(), syscall.SIGWINCH)
	stop()

	// So does a cancelled context.
	ctx, cancel := context.WithCancel(context.Background())
	stop = c.HandleSignals(ctx)
	cancel()
	stop()
	require.True(t, c.Ready())
}
