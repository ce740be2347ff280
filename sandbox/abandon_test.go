package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/blockhost"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// newFifo is a named pipe nobody writes yet: the stopping_block fixture,
// given its path as input, blocks on it in blockhost's stint_test.block,
// a host function no forced stop ends. releaseFifo lets it go (at the
// latest when the test ends).
func newFifo(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	t.Cleanup(func() { releaseFifo(fifo) })
	return fifo
}

// releaseFifo opens the pipe's write end and closes it: a reader blocked
// in it sees EOF. Without a reader it does nothing.
func releaseFifo(fifo string) {
	if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		_ = f.Close()
	}
}

// TestWatchdogStrikesOutliveStrays: strikes count a module's abandoned
// runs over the runtime's life, not only those still running. A guest
// abandoned once whose host call ended later leaves its strike; the
// module still runs; its second abandoned run is unstoppable and refuses
// it for good, with the reason: every later run, compile or plugin load
// of it, while other modules run on.
func TestWatchdogStrikesOutliveStrays(t *testing.T) {
	t.Parallel()
	logger, lw := newLogWatch()
	rt := newRuntime(t, sandbox.Config{StopWatchdog: 50 * time.Millisecond, Logger: logger,
		HostModules: []sandbox.HostModuleDef{blockhost.Def()}})
	mod := compile(t, rt, "stopping_block")
	// abandon runs the fixture on a fifo nobody writes until the watchdog
	// has abandoned it, then lets its guest end.
	abandon := func() *sandbox.Outcome {
		t.Helper()
		fifo := newFifo(t)
		out, err := runBounded(t, func() error2 {
			out, err := rt.RunBounded(context.Background(), mod, sandbox.Spec{Input: []byte(fifo),
				Limits: sandbox.Limits{Timeout: 100 * time.Millisecond}})
			return error2{out, err}
		}).split()
		require.NoError(t, err)
		require.True(t, out.Abandoned, out.String())
		ended := lw.next("an abandoned guest ended after all")
		releaseFifo(fifo)
		waitFor(t, ended, "the stray ends once its fifo is written")
		require.Zero(t, rt.Stats().Stray)
		return out
	}

	first := abandon()
	require.Equal(t, sandbox.KindTimedOut, first.Kind, first.String())
	require.Zero(t, rt.Stats().Refused)
	// One strike: the module still runs (a fifo that is written at once).
	fifo := newFifo(t)
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // blocks until the guest opens it
			_ = f.Close()
		}
	}()
	out := run(t, rt, context.Background(), mod, sandbox.Spec{Input: []byte(fifo)})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())

	second := abandon()
	require.Equal(t, sandbox.KindUnstoppable, second.Kind, second.String())
	require.True(t, second.Deadline)
	require.Contains(t, second.Message, "attempt timeout of 100ms reached; forced, but the guest did not end within 50ms of its forced stop; abandoned (its goroutine still runs)")
	require.Contains(t, second.Message, "abandoned run 2 of this module: module could not be stopped twice")
	require.ErrorIs(t, second.Err, sandbox.ErrUnstoppable)
	logged := lw.logs.FilterMessageSnippet("run abandoned").All()
	require.Len(t, logged, 2)
	require.Equal(t, map[string]any{"strikes": int64(2), "module_refused": true, "outcome": "unstoppable"},
		pick(logged[1].ContextMap(), "strikes", "module_refused", "outcome"))
	st := rt.Stats()
	require.EqualValues(t, 2, st.Abandoned)
	require.Equal(t, 1, st.Refused)

	// Refused for good: nothing of it runs again.
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Input: []byte(newFifo(t))})
	require.Equal(t, sandbox.KindUnstoppable, out.Kind)
	require.False(t, out.Abandoned, "refused, not run")
	require.Equal(t, "module could not be stopped twice (the stop watchdog abandoned two of its runs); refused until the runner restarts", out.Message)
	_, err := rt.Compile(context.Background(), wat.MustLoad("stopping_block"))
	require.ErrorIs(t, err, sandbox.ErrUnstoppable)
	require.Equal(t, sandbox.KindUnstoppable, sandbox.OutcomeFromError(err).Kind)
	require.True(t, sandbox.KindUnstoppable.Permanent())
	_, err = rt.LoadPlugin(context.Background(), wat.MustLoad("stopping_block"), sandbox.Manifest{})
	require.ErrorIs(t, err, sandbox.ErrUnstoppable)

	// Other modules are not affected.
	out = run(t, rt, context.Background(), compile(t, rt, "noop"), sandbox.Spec{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
}

// pick is the subset of m with keys.
func pick(m map[string]any, keys ...string) map[string]any {
	got := map[string]any{}
	for _, k := range keys {
		got[k] = m[k]
	}
	return got
}
