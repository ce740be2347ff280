package sandbox_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// shapes are the fixtures of issue 9: every shape of unbounded
// computation, each a command that never ends on its own; and the red
// team's two of issue 37 (shape_arm_big, shape_leaf_run).
var shapes = []string{
	"shape_loop_br", "shape_nested_loops", "shape_br_if_loop", "shape_br_table_loop", "shape_unrolled",
	"shape_recursion", "shape_tree", "shape_call_indirect", "shape_mutual", "shape_start", "shape_huge_body",
	"shape_bulk", "shape_random", "shape_arm_big", "shape_leaf_run",
}

// TestShapesEnd: in both interrupt modes, every shape ends at its attempt
// timeout (timed_out) and when the caller's context is cancelled
// (forced), never as a trap, and not by the watchdog's abandon. Without
// Stint's checks, the recursions and the start function never end in
// either mode, and no loop ends in the checks mode.
//
// The watchdog waits 10 s, not the default 500 ms: this test runs 52
// spinning guests at once, on two CPUs beside the rest of the suite, so
// the time between two of a shape's stop checks (a pass of shape_bulk's
// 48 MiB of memory.fill and memory.copy) is that work times fifty, and
// under CI's load it once outlasted 500 ms twice (shape_bulk, wazero
// mode: abandoned, then unstoppable). That a shape ends, and without the
// abandon, is what this test checks; the watchdog's are abandon_test.go's.
func TestShapesEnd(t *testing.T) {
	t.Parallel()
	for _, mode := range sandbox.InterruptModes() {
		rt := newRuntime(t, sandbox.Config{Interrupt: mode, StopWatchdog: 10 * time.Second})
		for _, shape := range shapes {
			mod := compile(t, rt, shape)
			t.Run(string(mode)+"/"+shape+"/timeout", func(t *testing.T) {
				t.Parallel()
				// The timeout must end the shape once running (it wrote its
				// name): on a loaded machine, 100 ms may end it while it is
				// still being instantiated, so a longer one is tried then.
				var out *sandbox.Outcome
				for _, timeout := range []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second} {
					out = run(t, rt, context.Background(), mod, sandbox.Spec{Limits: sandbox.Limits{Timeout: timeout}})
					require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
					require.True(t, out.Deadline)
					require.False(t, out.Abandoned, out.String())
					if len(out.Stderr) > 0 {
						break
					}
				}
				require.Equal(t, shape+"\n", string(out.Stderr), "the shape was running")
			})
			t.Run(string(mode)+"/"+shape+"/cancel", func(t *testing.T) {
				t.Parallel()
				sig := newSignal()
				out := forcedRun(t, rt, mod, sandbox.Spec{StderrTee: sig, Limits: sandbox.Limits{Timeout: -1}}, sig) // sandbox_test.go
				require.False(t, out.Abandoned, out.String())
			})
		}
	}
}

// TestInterruptConfig: the mode is validated, and each mode's runtime
// still runs ordinary guests.
func TestInterruptConfig(t *testing.T) {
	t.Parallel()
	_, err := sandbox.New(context.Background(), sandbox.Config{Interrupt: "epoch"})
	require.ErrorContains(t, err, `interrupt mode "epoch": want wazero or checks`)
	m, err := sandbox.ParseInterruptMode("checks")
	require.NoError(t, err)
	require.Equal(t, sandbox.InterruptChecks, m)
	require.Equal(t, sandbox.InterruptChecks, sandbox.Config{}.WithDefaults().Interrupt)
	for _, mode := range sandbox.InterruptModes() {
		rt := newRuntime(t, sandbox.Config{Interrupt: mode})
		out := run(t, rt, context.Background(), compile(t, rt, "echo"), sandbox.Spec{Input: []byte("both")})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
		require.Equal(t, "both", string(out.Stdout))
	}
}

// TestGCWhileGuestsRun: a garbage collection completes while guests spin,
// more of them than GOMAXPROCS, in every shape and both modes, and the
// guests still end when cancelled. A guest's machine code is invisible to
// Go's scheduler until it calls out to Go, so a stop-the-world waits for
// every running guest: with checks that only read a flag, this test never
// returns (nothing in the process runs again).
func TestGCWhileGuestsRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var outs []chan *sandbox.Outcome
	for _, mode := range sandbox.InterruptModes() {
		rt := newRuntime(t, sandbox.Config{Interrupt: mode})
		for _, shape := range []string{"shape_loop_br", "shape_recursion", "shape_nested_loops", "shape_start"} {
			mod := compile(t, rt, shape)
			sig := newSignal()
			done := make(chan *sandbox.Outcome, 1)
			go func() {
				out, err := rt.Run(ctx, mod, sandbox.Spec{StderrTee: sig, Limits: sandbox.Limits{Timeout: -1}})
				require.NoError(t, err)
				done <- out
			}()
			sig.wait(t)
			outs = append(outs, done)
		}
	}
	runBounded(t, func() bool { runtime.GC(); return true })
	cancel(errors.New("test done"))
	for _, done := range outs {
		select {
		case out := <-done:
			require.Equal(t, sandbox.KindForced, out.Kind, out.String())
		case <-time.After(bound):
			t.Fatal("a guest did not end")
		}
	}
}

// BenchmarkStopLatency: from the cancel of a run's context to Run's
// return, for guests computing in each shape and blocked in each way, in
// both interrupt modes (p50 and p99 reported per case):
//
//	go test ./sandbox -run XXX -bench BenchmarkStopLatency -benchtime 200x
func BenchmarkStopLatency(b *testing.B) {
	cases := []struct {
		fixture string
		stdin   bool
	}{
		{"shape_loop_br", false}, {"shape_nested_loops", false}, {"shape_br_table_loop", false},
		{"shape_recursion", false}, {"shape_tree", false}, {"shape_huge_body", false}, {"shape_bulk", false},
		{"shape_random", false}, {"shape_arm_big", false}, {"shape_leaf_run", false}, {"sleep", false}, {"stdin", true},
	}
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(context.Background(), sandbox.Config{Interrupt: mode})
		require.NoError(b, err)
		b.Cleanup(func() { _ = rt.Close(context.Background()) })
		for _, c := range cases {
			mod, err := rt.Compile(context.Background(), wat.MustLoad(c.fixture))
			require.NoError(b, err)
			b.Run(string(mode)+"/"+c.fixture, func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				for range b.N {
					sig := newSignal()
					spec := sandbox.Spec{StderrTee: sig, Limits: sandbox.Limits{Timeout: -1}}
					closeStdin := func() {}
					if c.stdin {
						pr, pw := io.Pipe()
						spec.Stdin = readerFunc(func(p []byte) (int, error) {
							_, _ = sig.Write(nil)
							return pr.Read(p)
						})
						closeStdin = func() { _ = pw.Close() }
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan time.Time, 1)
					go func() {
						_, _ = rt.Run(ctx, mod, spec)
						done <- time.Now()
					}()
					<-sig.ch
					time.Sleep(time.Millisecond) // well inside the blocking point or the computation
					start := time.Now()
					cancel()
					lat = append(lat, (<-done).Sub(start))
					closeStdin()
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
			})
		}
	}
}
