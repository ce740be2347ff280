package sandbox_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/kvhost"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// TestNonBlockingHostFunctionRunsInline: a plugin call whose embedder's
// host functions are all NonBlocking runs its guest on the caller's
// goroutine (no guest worker in the host function's stack); without the
// promise it runs on a guest worker. Either way the call's timeout ends a
// host function that returns on its context.
func TestNonBlockingHostFunctionRunsInline(t *testing.T) {
	t.Parallel()
	for _, nonBlocking := range []bool{false, true} {
		var onWorker []bool
		kv := kvhost.Def(func(ctx context.Context, _ sandbox.Call, key string) ([]byte, bool, error) {
			buf := make([]byte, 64<<10)
			onWorker = append(onWorker, strings.Contains(string(buf[:runtime.Stack(buf, false)]), "guestWorker"))
			if key == "block" {
				<-ctx.Done() // returns on its context, as a NonBlocking function that waits must
				return nil, false, ctx.Err()
			}
			return []byte("v"), true, nil
		}, nonBlocking)
		ctx := context.Background()
		rt := newRuntime(t, sandbox.Config{HostModules: []sandbox.HostModuleDef{kv}})
		p, err := rt.LoadPlugin(ctx, wat.MustLoad("plugin_host"), sandbox.Manifest{Name: "kv",
			HostModules: []string{"env", "stint_plugin", "stint"}, Limits: sandbox.PluginLimits{Timeout: 10 * time.Second}})
		require.NoError(t, err)
		for range 3 {
			out, err := p.Call(ctx, "kv", []byte("key"))
			require.NoError(t, err)
			require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
			require.Equal(t, "v", string(out.Output))
		}
		out, err := p.CallWith(ctx, "kv", []byte("block"), sandbox.CallOptions{Timeout: 50 * time.Millisecond})
		require.NoError(t, err)
		require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
		require.False(t, out.Abandoned)
		require.Len(t, onWorker, 4)
		for i, w := range onWorker {
			require.Equal(t, !nonBlocking, w, "call %d, NonBlocking %v: on a guest worker", i, nonBlocking)
		}
	}
}

// TestNonBlockingPromiseBroken: a NonBlocking host function that blocks
// after all, ignoring its context, holds Call until it returns (the price
// of the promise, docs/plugins.md), but nothing worse: the watchdog still
// abandons the run and strikes the module, Call then returns a timed-out
// outcome, the instance is not used again, and the runtime goes on.
func TestNonBlockingPromiseBroken(t *testing.T) {
	t.Parallel()
	kv := newStuckKV(t)
	mod := kv.module()
	mod.Funcs[0].NonBlocking = true // a promise the function breaks on "stuck"
	logger, lw := newLogWatch()
	rt := newRuntime(t, sandbox.Config{StopWatchdog: 50 * time.Millisecond, Logger: logger,
		HostModules: []sandbox.HostModuleDef{mod}})
	p := loadPlugin(t, rt, "plugin_host", sandbox.Manifest{Name: "liar", HostModules: []string{"env", "stint_plugin", "stint"},
		Limits: sandbox.PluginLimits{Timeout: 100 * time.Millisecond}})
	warm := call(t, p, "kv", "answer", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, warm.Kind, warm.String())

	abandoned := lw.Next("run abandoned")
	done := make(chan *sandbox.Outcome, 1)
	go func() { done <- call(t, p, "kv", "stuck", sandbox.CallOptions{}) }()
	<-kv.entered
	waitFor(t, abandoned, "the watchdog abandons the run")
	select {
	case out := <-done:
		t.Fatalf("Call returned while its NonBlocking host function still blocked: %s", out)
	default:
	}
	kv.free()
	out := <-done
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	require.True(t, out.Deadline, out.String())
	require.True(t, out.Abandoned, out.String())
	require.Contains(t, out.Message, "call timeout")
	require.Contains(t, out.Message, "a NonBlocking host function blocked")
	require.Empty(t, out.Output, "no late result")

	// The module has its strike: the next abandoned call would be
	// unstoppable. A call that behaves still runs, in a new instance.
	next := call(t, p, "kv", "answer", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, next.Kind, next.String())
	require.False(t, next.Warm, "the instance of the broken promise is not used again")
}
