package pool

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

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
