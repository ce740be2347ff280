package pool

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// marks is a store that records the leases of each MarkBegun call.
type marks struct {
	tasks.Store
	mu    sync.Mutex
	calls [][]tasks.Lease
}

func (m *marks) MarkBegun(ctx context.Context, ls []tasks.Lease) error {
	m.mu.Lock()
	m.calls = append(m.calls, ls)
	m.mu.Unlock()
	return m.Store.MarkBegun(ctx, ls)
}

// TestBeginLoopMarksOnlyLiveAttempts: of the attempts workers began, the
// begin loop marks in one write those still running when it writes, and
// never one that ended meanwhile (its end is written instead). The pool is
// not started: its attempts are made by hand, and the loop alone runs.
func TestBeginLoopMarksOnlyLiveAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	sha := putFixture(t, store, "noop")
	m := &marks{Store: store}
	p, err := New(m, rt, Config{Workers: 3, Owner: "a"})
	require.NoError(t, err)
	subs, err := store.SubmitManyClaimed(ctx, []tasks.Spec{{Module: sha}, {Module: sha}, {Module: sha}}, p.Owner(), time.Minute)
	require.NoError(t, err)
	var as []*attempt
	for _, s := range subs {
		as = append(as, p.newAttempt(tasks.ClaimedOf(s.Task)))
	}
	for _, a := range as {
		p.begin(a)
	}
	p.mu.Lock()
	as[1].ended = true // its completion is queued
	p.mu.Unlock()
	p.wg.Add(1)
	go p.beginLoop()
	testutil.WaitFor(t, "the begin loop to take the begun attempts", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.toMark) == 0
	})
	close(p.done)
	p.wg.Wait()

	require.Len(t, m.calls, 1, "one write")
	require.ElementsMatch(t, []tasks.Lease{as[0].claimed.Lease, as[2].claimed.Lease}, m.calls[0], "the live attempts, not the ended one")
	for i, a := range as {
		got, err := store.Get(ctx, a.claimed.Task.ID)
		require.NoError(t, err)
		want := tasks.StateRunning
		if i == 1 {
			want = tasks.StateClaimed
		}
		require.Equal(t, want, got.Shown(), "task %d", i)
	}
}
