package postgres_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/pgtest"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestFailoverToPromotedReplica: a Store given a primary and its
// synchronous streaming replica (private clusters, both hosts in the
// connection string, target_session_attrs=read-write) holds two leases
// when the primary is killed. Until the replica is promoted every call
// fails with ErrUnavailable naming both servers; once it is, the Store
// works again by itself: its pool reaches the new primary, where the
// leases, the checkpoint and the fencing tokens are as they were (an
// acknowledged commit was on the replica), and its wake-up listener
// listens there and hears a Submit.
func TestFailoverToPromotedReplica(t *testing.T) {
	t.Parallel()
	primary := pgtest.Start(t)
	replica := primary.Replica(true)
	both := "postgres://postgres@" + primary.Addr() + "," + replica.Addr() +
		"/postgres?sslmode=disable&target_session_attrs=read-write"
	ctx := context.Background()
	s, err := postgres.Open(ctx, both, postgres.Options{ReconnectMax: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	wake, stopListening, err := s.ListenWakeups()
	require.NoError(t, err)
	defer func() { require.NoError(t, stopListening()) }()

	h := putModule(t, s)
	for range 2 {
		_, _, err := s.Submit(ctx, tasks.Spec{Module: h, MaxAttempts: 3})
		require.NoError(t, err)
	}
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "o", Max: 2, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 2)
	a, b := cl[0].Lease, cl[1].Lease
	require.NoError(t, s.SaveCheckpoint(ctx, a, []byte("halfway")))

	primary.Stop("immediate")
	err = s.Ping(ctx)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	require.ErrorContains(t, err, primary.Addr()+","+replica.Addr()+"/postgres", "the message names both servers")
	_, _, err = s.Heartbeat(ctx, []tasks.Lease{a, b}, time.Hour)
	require.ErrorIs(t, err, postgres.ErrUnavailable, "the replica is read-only until promoted")

	replica.Promote()
	testutil.WaitFor(t, "the store to reach the promoted replica", func() bool { return s.Ping(ctx) == nil })
	lost, _, err := s.Heartbeat(ctx, []tasks.Lease{a, b}, time.Hour)
	require.NoError(t, err)
	require.Empty(t, lost, "both leases held through the failover")
	task, err := s.Get(ctx, a.TaskID)
	require.NoError(t, err)
	require.Equal(t, len("halfway"), task.CheckpointSize)
	// Fencing on the new primary: a lease it never gave is refused, the
	// current one is not.
	require.ErrorIs(t, s.SaveCheckpoint(ctx, tasks.Lease{TaskID: b.TaskID, Owner: "o", Token: b.Token + 1}, []byte("x")), tasks.ErrStaleLease)
	require.ErrorIs(t, s.SaveCheckpoint(ctx, tasks.Lease{TaskID: b.TaskID, Owner: "other", Token: b.Token}, []byte("x")), tasks.ErrStaleLease)
	errs, err := s.Complete(ctx, []tasks.Completion{
		{Lease: a, State: tasks.StateSucceeded, Result: []byte("a"), Attempt: tasks.Attempt{Outcome: "succeeded"}},
		{Lease: b, State: tasks.StateSucceeded, Result: []byte("b"), Attempt: tasks.Attempt{Outcome: "succeeded"}},
	})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	for _, l := range []tasks.Lease{a, b} {
		task, err := s.Get(ctx, l.TaskID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateSucceeded, task.State)
		atts, err := s.Attempts(ctx, l.TaskID)
		require.NoError(t, err)
		require.Len(t, atts, 1, "%+v", atts)
	}

	// The listener: once it listens on the new primary (its connection's
	// LISTEN is visible there), a Submit wakes it.
	conn, err := pgx.Connect(ctx, replica.DSN("postgres"))
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	testutil.WaitFor(t, "the wake-up listener to listen on the new primary", func() bool {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'stint wake-ups' AND query LIKE 'LISTEN%'`).Scan(&n))
		return n == 1
	})
	// The channel gets at most two values that are no notification: one
	// left from before the failover, and the one the listener sends each
	// time it listens again. Of three, one at least is the new
	// primary's.
	recv := func(what string) {
		select {
		case <-wake:
		case <-time.After(testutil.WaitTimeout):
			t.Fatalf("no wake-up: %s", what)
		}
	}
	recv("the listener listening again")
	for range 2 {
		_, _, err = s.Submit(ctx, tasks.Spec{Module: h})
		require.NoError(t, err)
		recv("a Submit on the new primary")
	}
}

// TestOpenUnreachableNamesEveryHost: with several hosts in the
// connection string, Open's error names each.
func TestOpenUnreachableNamesEveryHost(t *testing.T) {
	t.Parallel()
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addrs = append(addrs, ln.Addr().String())
		require.NoError(t, ln.Close()) // nothing listens there now
	}
	_, err := postgres.Open(t.Context(), "postgres://stint@"+addrs[0]+","+addrs[1]+"/nowhere?connect_timeout=5", postgres.Options{})
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	require.ErrorContains(t, err, addrs[0]+","+addrs[1]+"/nowhere")
}
