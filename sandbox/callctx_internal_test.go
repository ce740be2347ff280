package sandbox

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
)

// TestCallContext: a plugin call's hard context behaves as
// context.WithValue(context.WithDeadline(parent, d)) would, without arming
// timers before Done is asked for.
func TestCallContext(t *testing.T) {
	t.Parallel()
	st := new(runState)

	t.Run("value and parent values", func(t *testing.T) {
		type k struct{}
		parent := context.WithValue(context.Background(), k{}, "v")
		c := newCallContext(parent, time.Time{}, st)
		require.Same(t, st, stateOf(c))
		require.Equal(t, "v", c.Value(k{}))
		_, ok := c.Deadline()
		require.False(t, ok)
		require.True(t, c.endless())
		require.Nil(t, c.Done(), "a context that cannot end has no Done channel")
		c.release()
		require.ErrorIs(t, c.Err(), context.Canceled)
	})

	// The first Done after the parent was canceled, with nothing having
	// read Err since: it used to close its new channel twice (panic:
	// close of closed channel, seen in bench/peers -plugins).
	t.Run("first Done after the parent ended", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		c := newCallContext(parent, time.Now().Add(time.Hour), st)
		cancel()
		<-c.Done() // closed, once
		require.ErrorIs(t, c.Err(), context.Canceled)
		c.release()
	})

	t.Run("passed deadline is seen by Err without Done", func(t *testing.T) {
		c := newCallContext(context.Background(), time.Now().Add(-time.Millisecond), st)
		require.Equal(t, context.DeadlineExceeded, c.Err())
		require.Nil(t, c.timer, "no timer armed")
		<-c.Done() // closed at once
		c.release()
		require.Equal(t, context.DeadlineExceeded, c.Err(), "the first end stays")
	})

	t.Run("deadline fires Done", func(t *testing.T) {
		c := newCallContext(context.Background(), time.Now().Add(20*time.Millisecond), st)
		require.NoError(t, c.Err())
		<-c.Done()
		require.Equal(t, context.DeadlineExceeded, c.Err())
		c.release()
	})

	t.Run("parent cancel reaches Err and Done", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		c := newCallContext(parent, time.Now().Add(time.Hour), st)
		done := c.Done()
		require.NoError(t, c.Err())
		cancel()
		<-done
		require.ErrorIs(t, c.Err(), context.Canceled)
		require.True(t, attemptDeadline(context.Background(), c, c.deadlineTime()) == false, "a cancel is not the deadline")

		parent2, cancel2 := context.WithCancel(context.Background())
		c2 := newCallContext(parent2, time.Time{}, st)
		cancel2()
		require.ErrorIs(t, c2.Err(), context.Canceled, "without Done too")
		c.release()
		c2.release()
	})

	t.Run("earlier parent deadline wins", func(t *testing.T) {
		pd := time.Now().Add(time.Minute)
		parent, cancel := context.WithDeadline(context.Background(), pd)
		defer cancel()
		c := newCallContext(parent, pd.Add(time.Hour), st)
		d, ok := c.Deadline()
		require.True(t, ok)
		require.Equal(t, pd, d)
		c2 := newCallContext(parent, pd.Add(-time.Second), st)
		d, _ = c2.Deadline()
		require.Equal(t, pd.Add(-time.Second), d)
	})

	t.Run("release ends a waiting Done and stops the timer", func(t *testing.T) {
		c := newCallContext(context.Background(), time.Now().Add(time.Hour), st)
		done := c.Done()
		require.NotNil(t, c.timer)
		c.release()
		<-done
		require.ErrorIs(t, c.Err(), context.Canceled)
		require.False(t, c.timer.Stop(), "the timer was stopped by release")
	})
}

// TestPluginHardContextReuse: a warm call's hard context is kept for the
// instance's next call only when nothing can have kept it: after a cold
// call (instantiation saw it) it is not; after a warm call in checks mode
// it is, and the next calls reuse it; in wazero mode (close-on-context-
// done asks for Done) never. The call state goes with the warm instance.
func TestPluginHardContextReuse(t *testing.T) {
	t.Parallel()
	for _, mode := range InterruptModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r, err := New(ctx, Config{Interrupt: mode})
			require.NoError(t, err)
			defer r.Close(ctx)
			p, err := r.LoadPlugin(ctx, wat.MustLoad("plugin_basic"), Manifest{Name: "reuse"})
			require.NoError(t, err)
			defer p.Close(ctx)
			idle := func() *pluginInstance {
				p.mu.Lock()
				defer p.mu.Unlock()
				require.Len(t, p.idle, 1)
				return p.idle[0]
			}
			var out Outcome
			require.NoError(t, p.CallInto(ctx, "noop", nil, CallOptions{}, &out))
			require.True(t, out.Success(), out.String())
			inst := idle()
			pc := inst.pc
			require.NotNil(t, pc, "the warm instance keeps its call state")
			require.Nil(t, pc.hard, "a cold call's context is not reused")
			var first *callContext
			for i := range 3 {
				require.NoError(t, p.CallInto(ctx, "noop", nil, CallOptions{}, &out))
				require.True(t, out.Success(), out.String())
				require.Same(t, inst, idle())
				require.Same(t, pc, inst.pc)
				if mode == InterruptWazero {
					require.Nil(t, pc.hard, "call %d: Done was asked for", i)
					continue
				}
				require.NotNil(t, pc.hard, "call %d", i)
				if first == nil {
					first = pc.hard
				}
				require.Same(t, first, pc.hard, "call %d reused the context", i)
				require.ErrorIs(t, pc.hard.Err(), context.Canceled, "ended between calls")
			}
		})
	}
}

// TestMonoClock: monoAdd adds, saturating instead of wrapping and never
// giving 0 ("none"), for random readings and durations; a deadline given
// as a time.Time is kept as it is, and one made on the monotonic clock
// (a plugin call's) converts to the time.Time it stands for.
func TestMonoClock(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for range 10000 {
		base, d := rng.Int64(), time.Duration(rng.Int64())
		if rng.IntN(2) == 0 {
			d = -d
		}
		if rng.IntN(4) == 0 {
			base = rng.Int64N(1 << 40) // a reading near the clock's origin
		}
		got := monoAdd(base, d)
		want := new(big.Int).Add(big.NewInt(base), big.NewInt(int64(d)))
		switch {
		case want.Cmp(big.NewInt(math.MaxInt64)) > 0:
			require.Equal(t, int64(math.MaxInt64), got, "%d + %d", base, d)
		case want.Cmp(big.NewInt(1)) < 0:
			require.Equal(t, int64(1), got, "%d + %d", base, d)
		default:
			require.Equal(t, want.Int64(), got, "%d + %d", base, d)
		}
	}

	exact := time.Now().Add(time.Duration(rng.Int64N(int64(time.Hour))))
	c := newCallContext(context.Background(), exact, new(runState))
	d, ok := c.Deadline()
	require.True(t, ok)
	require.True(t, d.Equal(exact), "a time.Time deadline is kept")

	in := time.Duration(rng.Int64N(int64(time.Hour))) + time.Millisecond
	before := time.Now()
	c = &callContext{parent: context.Background(), deadline: monoAdd(monoNow(), in)}
	after := time.Now()
	d, ok = c.Deadline()
	require.True(t, ok)
	require.False(t, d.Before(before.Add(in-time.Millisecond)), "%s is before %s", d, before.Add(in))
	require.False(t, d.After(after.Add(in)), "%s is after %s", d, after.Add(in))
	d2, _ := c.Deadline()
	require.True(t, d.Equal(d2), "computed once")
}
