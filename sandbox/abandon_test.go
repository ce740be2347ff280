package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/blockhost"
	"github.com/stint-run/stint/internal/testwasm/kvhost"
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
		ended := lw.Next("an abandoned guest ended after all")
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
	logged := lw.Logs.FilterMessageSnippet("run abandoned").All()
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

// stuckKV is an env module whose kv_get, for the key "stuck", blocks until
// the test ends, ignoring its context, as an embedder's host function that
// ignores the stop would; other keys get "v". entered and returned get a
// value each time a stuck call enters and returns; release lets one go.
type stuckKV struct {
	entered  chan struct{}
	release  chan struct{}
	returned chan struct{}
	once     sync.Once
}

func newStuckKV(t *testing.T) *stuckKV {
	k := &stuckKV{entered: make(chan struct{}, 4), release: make(chan struct{}), returned: make(chan struct{}, 4)}
	t.Cleanup(k.free) // goleak: the stuck host calls return before the test ends
	return k
}

func (k *stuckKV) free() { k.once.Do(func() { close(k.release) }) }

func (k *stuckKV) module() sandbox.HostModuleDef {
	return kvhost.Def(func(_ context.Context, _ sandbox.Call, key string) ([]byte, bool, error) {
		if key == "stuck" {
			k.entered <- struct{}{}
			<-k.release // ignores its context
			k.returned <- struct{}{}
		}
		return []byte("v"), true, nil
	}, false)
}

// TestPluginCallAbandoned: a call whose host function ignores its context
// returns once the watchdog abandons it (its deadline plus the watchdog),
// while the host function still blocks; the outcome says so, and its
// Duration runs from the call's start to its return. The warm instance it
// ran in is never used again (the next call instantiates anew), and is
// discarded once its guest ends. The abandoned call strikes the module:
// the second one is unstoppable, even though the first stray ended, and
// later calls, and loads, of the module are refused. Both ways to force
// a call: its timeout, and its context.
func TestPluginCallAbandoned(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"timeout", "cancel"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			kv := newStuckKV(t)
			logger, lw := newLogWatch()
			rt := newRuntime(t, sandbox.Config{StopWatchdog: 50 * time.Millisecond, Logger: logger,
				HostModules: []sandbox.HostModuleDef{kv.module()}})
			man := sandbox.Manifest{Name: "stuck", HostModules: []string{"env", "stint_plugin", "stint"}}
			if how == "timeout" {
				man.Limits.Timeout = 100 * time.Millisecond
			} else {
				man.Limits.Timeout = -1 // none: only the context forces the call
			}
			p := loadPlugin(t, rt, "plugin_host", man)
			// stuckCall makes a call that blocks in kv_get and is forced by
			// its timeout, or by its context once the host function is
			// entered.
			stuckCall := func() (*sandbox.Outcome, time.Duration) {
				t.Helper()
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				if how == "cancel" {
					go func() {
						select {
						case <-kv.entered:
							cancel(errFakeStop)
						case <-ctx.Done():
						}
					}()
				}
				start := time.Now()
				out := callCtx(t, ctx, p, "kv", "stuck", sandbox.CallOptions{})
				took := time.Since(start)
				if how == "timeout" {
					<-kv.entered
				}
				return out, took
			}

			warm := call(t, p, "kv", "answer", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindSucceeded, warm.Kind, warm.String())
			require.Equal(t, 1, p.Stats().Idle, "a warm instance waits")

			out, took := stuckCall()
			require.True(t, out.Abandoned, out.String())
			select {
			case <-kv.returned:
				t.Fatal("Call waited for the host function")
			default:
			}
			if how == "timeout" {
				require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
				require.True(t, out.Deadline)
				require.GreaterOrEqual(t, out.Duration, man.Limits.Timeout, "forced at its deadline, not before")
			} else {
				require.Equal(t, sandbox.KindForced, out.Kind, out.String())
				require.Contains(t, out.Message, "stopped by force: test stop")
			}
			require.Contains(t, out.Message, "the guest did not end within 50ms of its forced stop; abandoned (its goroutine still runs)")
			require.LessOrEqual(t, out.Duration, took, "Duration ends when Call returns")
			require.Positive(t, out.Duration)
			st := rt.Stats()
			require.EqualValues(t, 1, st.Abandoned)
			require.Equal(t, 1, st.Stray)

			// The abandoned warm instance is not reused: a new one serves.
			next := call(t, p, "kv", "answer", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindSucceeded, next.Kind, next.String())
			require.False(t, next.Warm, "the abandoned instance is never reused")
			require.EqualValues(t, 2, p.Stats().Instantiations)

			// The stray ends: its instance is discarded, its strike stays.
			ended := lw.Next("an abandoned guest ended after all")
			kv.release <- struct{}{} // unblocks the one stuck call
			waitFor(t, ended, "the stray ends once its host function returns")
			require.Zero(t, rt.Stats().Stray)
			// Its worker discards the instance right after the guest ends.
			testutil.WaitFor(t, "the stray's instance discarded", func() bool { return p.Stats().Discarded == 1 })

			out, _ = stuckCall()
			require.Equal(t, sandbox.KindUnstoppable, out.Kind, out.String())
			require.True(t, out.Abandoned)
			require.Contains(t, out.Message, "abandoned run 2 of this module: module could not be stopped twice")
			require.Equal(t, 1, lw.Logs.FilterMessageSnippet("run abandoned").FilterField(zap.Bool("module_refused", true)).Len())

			out = call(t, p, "kv", "answer", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindUnstoppable, out.Kind, "refused, not run: %s", out)
			require.False(t, out.Abandoned)
			_, err := rt.LoadPlugin(context.Background(), wat.MustLoad("plugin_host"), man)
			require.ErrorIs(t, err, sandbox.ErrUnstoppable)
		})
	}
}
