package sandbox_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/sandbox"
)

// TestCallIntoSameOutcome: Plugin.CallInto leaves the Outcome Call
// returns, for a random sequence of calls (every export of plugin_basic:
// successes, warm state, traps, a bad output, a memory limit, a timeout,
// random inputs) made on two plugins of the same module, one through
// Call, one through CallInto into a single Outcome reused across the
// sequence (so a field a call leaves unset must not keep the last call's
// value). Only Duration differs (and the work a spin does before its
// timeout); Err is compared by its message.
func TestCallIntoSameOutcome(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 1))
			rt := newRuntime(t, sandbox.Config{Interrupt: mode})
			man := sandbox.Manifest{Name: "same", Limits: sandbox.PluginLimits{MemoryBytes: 4 << 20}}
			viaCall := loadPlugin(t, rt, "plugin_basic", man)
			viaInto := loadPlugin(t, rt, "plugin_basic", man)
			exports := []string{"noop", "upper", "count", "trap", "badout", "big", "grow", "spin"}
			var into sandbox.Outcome
			for i := range 60 {
				fn := exports[rng.IntN(len(exports))]
				var input []byte
				if fn == "upper" {
					input = make([]byte, rng.IntN(200))
					for j := range input {
						input[j] = byte(32 + rng.IntN(95))
					}
				}
				opts := sandbox.CallOptions{}
				if fn == "spin" {
					opts.Timeout = 20 * time.Millisecond
				}
				want := runBounded(t, func() *sandbox.Outcome {
					out, err := viaCall.CallWith(context.Background(), fn, input, opts)
					require.NoError(t, err)
					return out
				})
				runBounded(t, func() bool {
					require.NoError(t, viaInto.CallInto(context.Background(), fn, input, opts, &into))
					return true
				})
				got := into
				require.Equal(t, want.Kind, got.Kind, "call %d (%s): %s / %s", i, fn, want, &got)
				require.Equal(t, errString(want.Err), errString(got.Err), "call %d (%s)", i, fn)
				require.Positive(t, got.Duration, "call %d (%s)", i, fn)
				w, g := *want, got
				w.Err, g.Err, w.Duration, g.Duration = nil, nil, 0, 0
				if fn == "spin" { // how far it spun is the machine's
					w.WorkUnits, g.WorkUnits = 0, 0
				}
				require.Equal(t, w, g, "call %d (%s)", i, fn)
			}
			require.Equal(t, viaCall.Stats(), viaInto.Stats())
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCallIntoErrors: a call that cannot be made is CallInto's error, as
// it is Call's, and leaves the zero Outcome; a nil Outcome is an error,
// not a panic.
func TestCallIntoErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "errs", Limits: sandbox.PluginLimits{MaxInput: 8}})
	out := sandbox.Outcome{Kind: sandbox.KindTrapped, Message: "left over", Output: []byte("x")}
	require.ErrorIs(t, p.CallInto(context.Background(), "nope", nil, sandbox.CallOptions{}, &out), sandbox.ErrNoExport)
	require.Equal(t, sandbox.Outcome{}, out)
	out.Kind = sandbox.KindFailed
	require.ErrorIs(t, p.CallInto(context.Background(), "upper", make([]byte, 9), sandbox.CallOptions{}, &out), sandbox.ErrInputTooLarge)
	require.Equal(t, sandbox.Outcome{}, out)
	require.ErrorIs(t, p.CallInto(context.Background(), "noop", nil, sandbox.CallOptions{}, nil), sandbox.ErrNilOutcome)
	require.NoError(t, p.Close(context.Background()))
	require.ErrorIs(t, p.CallInto(context.Background(), "noop", nil, sandbox.CallOptions{}, &out), sandbox.ErrPluginClosed)
}

// TestCallIntoStopped: a stuck guest called through CallInto is stopped
// by its timeout and by its context, in both modes, and the plugin's next
// call runs (in a new instance: the stopped one was discarded).
func TestCallIntoStopped(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, sandbox.Config{Interrupt: mode})
			p := loadPlugin(t, rt, "plugin_basic", sandbox.Manifest{Name: "stuck"})
			var out sandbox.Outcome
			callInto := func(ctx context.Context, fn string, opts sandbox.CallOptions) {
				t.Helper()
				runBounded(t, func() bool {
					require.NoError(t, p.CallInto(ctx, fn, nil, opts, &out))
					return true
				})
			}
			callInto(context.Background(), "noop", sandbox.CallOptions{})
			require.True(t, out.Success(), out.String())
			callInto(context.Background(), "spin", sandbox.CallOptions{Timeout: 30 * time.Millisecond})
			require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
			require.True(t, out.Deadline)
			require.Contains(t, out.Message, "call timeout of 30ms reached")

			ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Millisecond, errFakeStop)
			defer cancel()
			callInto(ctx, "spin", sandbox.CallOptions{})
			require.Equal(t, sandbox.KindForced, out.Kind, out.String())
			require.False(t, out.Deadline)

			callInto(context.Background(), "count", sandbox.CallOptions{})
			require.True(t, out.Success(), out.String())
			require.False(t, out.Warm, "the stopped instances were discarded")
			require.Equal(t, "1", string(out.Output))
		})
	}
}

// TestCallIntoAbandoned: a call through CallInto whose host function
// ignores its forced stop is abandoned by the watchdog like Call's, and
// *out says so.
func TestCallIntoAbandoned(t *testing.T) {
	t.Parallel()
	kv := newStuckKV(t)
	rt := newRuntime(t, sandbox.Config{StopWatchdog: 50 * time.Millisecond, HostModules: []sandbox.HostModuleDef{kv.module()}})
	p := loadPlugin(t, rt, "plugin_host", sandbox.Manifest{Name: "stuck", HostModules: []string{"env", "stint_plugin", "stint"},
		Limits: sandbox.PluginLimits{Timeout: 100 * time.Millisecond}})
	out := sandbox.Outcome{Output: []byte("left over")}
	runBounded(t, func() bool {
		require.NoError(t, p.CallInto(context.Background(), "kv", []byte("stuck"), sandbox.CallOptions{}, &out))
		return true
	})
	require.True(t, out.Abandoned, out.String())
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	require.Contains(t, out.Message, "call timeout of 100ms reached")
	require.Nil(t, out.Output)
	require.GreaterOrEqual(t, out.Duration, 100*time.Millisecond)
	kv.free()
	testutil.WaitFor(t, "the abandoned guest to end", func() bool { return rt.Stats().Stray == 0 })
}

// TestPluginKeptContextStaysEnded: a host function that keeps its call's
// context sees it ended once the call has returned, and still ended after
// the plugin's later calls (a call's hard context is reused only when
// nothing can have kept it).
func TestPluginKeptContextStaysEnded(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var kept []context.Context
			host := sandbox.HostModuleDef{Name: "env", Funcs: []sandbox.HostFunc{{
				Name:    "kv_get",
				Params:  []sandbox.ValueType{sandbox.I32, sandbox.I32, sandbox.I32, sandbox.I32},
				Results: []sandbox.ValueType{sandbox.I32},
				Func: func(ctx context.Context, _ sandbox.Call, stack []uint64) error {
					if ctx.Err() != nil {
						return errors.New("called with an ended context")
					}
					mu.Lock()
					kept = append(kept, ctx)
					mu.Unlock()
					stack[0] = api.EncodeI32(-1)
					return nil
				},
			}}}
			rt := newRuntime(t, sandbox.Config{Interrupt: mode, HostModules: []sandbox.HostModuleDef{host}})
			p := loadPlugin(t, rt, "plugin_host", sandbox.Manifest{Name: "keeper", HostModules: []string{"env", "stint_plugin", "stint"}})
			var out sandbox.Outcome
			for i := range 5 {
				if i%2 == 0 {
					out = *call(t, p, "kv", "k", sandbox.CallOptions{})
				} else {
					require.NoError(t, p.CallInto(context.Background(), "kv", []byte("k"), sandbox.CallOptions{}, &out))
				}
				require.True(t, out.Success(), out.String())
				mu.Lock()
				require.Len(t, kept, i+1)
				for j, ctx := range kept {
					require.ErrorIs(t, ctx.Err(), context.Canceled, "call %d's context, after call %d", j, i)
					select {
					case <-ctx.Done():
					default:
						t.Fatalf("call %d's context is not done after call %d", j, i)
					}
				}
				mu.Unlock()
			}
		})
	}
}
