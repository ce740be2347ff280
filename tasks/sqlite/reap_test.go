package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storetest"
)

func TestReaper(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond.Microseconds()
	r := newReaper()
	require.True(t, r.needed(0), "a new Store reaps on its first claim")
	r.reaped(1000*ms, sql.NullInt64{})
	require.False(t, r.needed(1000*ms))
	require.False(t, r.needed(1000*ms+reapInterval.Microseconds()-1))
	require.True(t, r.needed(1000*ms+reapInterval.Microseconds()), "leases of other Stores: at most reapInterval late")
	require.True(t, r.needed(999*ms), "the clock went back")

	r.reaped(1000*ms, sql.NullInt64{Int64: 1100 * ms, Valid: true})
	require.False(t, r.needed(1100*ms), "a lease holds until its expiry")
	require.True(t, r.needed(1100*ms+1), "expired")

	r.reaped(1000*ms, sql.NullInt64{})
	r.leased(1050 * ms)
	require.False(t, r.needed(1050*ms))
	require.True(t, r.needed(1050*ms+1), "a lease this Store wrote")
	r.leased(2000 * ms)
	require.True(t, r.needed(1050*ms+1), "a later lease does not raise the bound")

	r.reaped(1000*ms, sql.NullInt64{})
	r.reset()
	require.True(t, r.needed(1000*ms))
}

func openReap(t *testing.T, path string, clock *storetest.Clock) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, Options{Now: clock.Now})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// TestReapOtherStore: a Store takes over the expired leases of another
// Store on the same file (another process) within reapInterval, and its
// own at once.
func TestReapOtherStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	clock := storetest.NewClock(storetest.Start)
	a, b := openReap(t, path, clock), openReap(t, path, clock)
	h, err := a.PutModule(t.Context(), []byte("\x00asm\x01\x00\x00\x00"))
	require.NoError(t, err)
	claim := func(s *Store, owner string, lease time.Duration) []tasks.Claimed {
		t.Helper()
		cl, err := s.Claim(t.Context(), tasks.ClaimRequest{Owner: owner, Max: 10, Lease: lease})
		require.NoError(t, err)
		return cl
	}
	require.Empty(t, claim(b, "b", time.Minute)) // b reaps, and knows of no lease
	task, _, err := a.Submit(t.Context(), tasks.Spec{Module: h})
	require.NoError(t, err)
	require.Len(t, claim(a, "a", 10*time.Millisecond), 1)

	clock.Advance(20 * time.Millisecond)
	require.Empty(t, claim(b, "b", time.Minute), "b does not know of a's lease yet")
	clock.Set(storetest.Start.Add(reapInterval))
	cl := claim(b, "b", time.Minute)
	require.Len(t, cl, 1, "within reapInterval")
	require.Equal(t, task.ID, cl[0].Task.ID)
	require.Equal(t, 2, cl[0].Lease.Token)

	// a's own lease: at once, even though a reaped just now.
	task2, _, err := a.Submit(t.Context(), tasks.Spec{Module: h})
	require.NoError(t, err)
	require.Len(t, claim(a, "a", 10*time.Millisecond), 1)
	clock.Advance(10*time.Millisecond + time.Microsecond)
	cl = claim(a, "a2", time.Minute)
	require.Len(t, cl, 1)
	require.Equal(t, task2.ID, cl[0].Task.ID)
}

// TestReapShortenedLease: a heartbeat may shorten a lease; the shorter
// lease is taken over when it expires.
func TestReapShortenedLease(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	s := openReap(t, filepath.Join(t.TempDir(), "stint.db"), clock)
	h, err := s.PutModule(t.Context(), []byte("\x00asm\x01\x00\x00\x00"))
	require.NoError(t, err)
	task, _, err := s.Submit(t.Context(), tasks.Spec{Module: h})
	require.NoError(t, err)
	cl, err := s.Claim(t.Context(), tasks.ClaimRequest{Owner: "a", Max: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	shorter := reapInterval / 5
	lost, _, err := s.Heartbeat(t.Context(), []tasks.Lease{cl[0].Lease}, shorter)
	require.NoError(t, err)
	require.Empty(t, lost)
	clock.Advance(shorter + time.Microsecond)
	cl, err = s.Claim(t.Context(), tasks.ClaimRequest{Owner: "b", Max: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, task.ID, cl[0].Task.ID)
	require.Equal(t, 2, cl[0].Lease.Token)
}
