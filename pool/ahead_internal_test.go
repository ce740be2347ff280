package pool

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// TestAheadForBounds: for random pools and attempt durations (extremes
// included), what a pool claims ahead stays within [0, ClaimBatch], is
// none while the duration is unknown or at least the horizon, shrinks as
// attempts get longer and grows with the workers: what it holds
// (claimRequest's target) never passes Workers+ClaimBatch, which the
// ready channel holds.
func TestAheadForBounds(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(29, uint64(time.Now().UnixNano())))
	dur := func() time.Duration {
		switch r.IntN(6) {
		case 0:
			return 0
		case 1:
			return time.Duration(r.Int64()) // up to 292 years
		case 2:
			return time.Duration(r.IntN(10)) // a few ns
		default:
			return time.Duration(r.Int64N(int64(time.Second)))
		}
	}
	for range 100000 {
		workers, batch := 1+r.IntN(1000), 1+r.IntN(4096)
		horizon, avg := dur(), dur()
		if r.IntN(10) == 0 {
			horizon = -horizon
		}
		got := aheadFor(workers, batch, horizon, avg)
		if got < 0 || got > batch {
			t.Fatalf("aheadFor(%d, %d, %v, %v) = %d, outside [0, %d]", workers, batch, horizon, avg, got, batch)
		}
		if (avg <= 0 || horizon <= 0 || avg >= horizon) && got != 0 {
			t.Fatalf("aheadFor(%d, %d, %v, %v) = %d, want 0", workers, batch, horizon, avg, got)
		}
		if avg > 0 && avg < horizon && got == 0 {
			t.Fatalf("aheadFor(%d, %d, %v, %v) = 0: an attempt shorter than the horizon is claimed ahead", workers, batch, horizon, avg)
		}
		if longer := avg + 1 + time.Duration(r.Int64N(int64(time.Millisecond))); avg > 0 && longer > avg {
			if g := aheadFor(workers, batch, horizon, longer); g > got {
				t.Fatalf("aheadFor grows with the attempts' duration: %v -> %d, %v -> %d", avg, got, longer, g)
			}
		}
		if g := aheadFor(workers+1, batch, horizon, avg); g < got {
			t.Fatalf("aheadFor shrinks with more workers: %d -> %d, %d -> %d", workers, got, workers+1, g)
		}
	}
}

// TestGiveBackHeld: past the hold limit with no worker taking one, the
// tasks a pool claimed ahead go back to the queue (queued, no attempt),
// but not those Adopt handed over (runner batch claimed them to run them
// there), however long they wait. The pools are not started: their ready
// queues are filled by hand, and then the pool's clock jumps an hour.
func TestGiveBackHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	sha := putFixture(t, store, "noop")
	for _, adopt := range []bool{false, true} {
		var ahead time.Duration
		now := func() time.Time { return time.Now().Add(ahead) }
		p, err := New(store, rt, Config{Workers: 1, Owner: map[bool]string{false: "claims", true: "adopts"}[adopt], Now: now})
		require.NoError(t, err)
		subs, err := store.SubmitManyClaimed(ctx, []tasks.Spec{{Module: sha}, {Module: sha}, {Module: sha}}, p.Owner(), time.Minute)
		require.NoError(t, err)
		var cs []tasks.Claimed
		for _, s := range subs {
			cs = append(cs, tasks.ClaimedOf(s.Task))
		}
		if adopt {
			require.Equal(t, 3, p.Adopt(cs))
		} else {
			p.moved.Store(now().UnixNano()) // as claimOnce does
			for _, c := range cs {
				p.ready <- p.newAttempt(c)
			}
		}
		p.giveBackHeld()
		require.Equal(t, 3, p.Stats().Held, "within the hold limit")
		ahead = time.Hour
		p.giveBackHeld()
		st := p.Stats()
		if adopt {
			require.Zero(t, st.GivenBack, "adopted tasks stay")
			require.Equal(t, 3, st.Held)
			continue
		}
		require.Equal(t, 3, st.GivenBack)
		require.Zero(t, st.Held)
		for _, c := range cs {
			got, err := store.Get(ctx, c.Task.ID)
			require.NoError(t, err)
			require.Equal(t, tasks.StateQueued, got.State)
			require.Zero(t, got.Attempt, "a task given back leaves no trace")
		}
	}
}
