package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// waitWake waits for a wake-up on ch. The bound only ends a test that
// would otherwise hang; nothing here is timed.
func waitWake(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no wake-up %s within 30s", what)
	}
}

// listenerPID is the backend pid of the connection listening on channel.
func listenerPID(t *testing.T, raw *pgx.Conn, channel string) int {
	t.Helper()
	var pid int
	require.NoError(t, raw.QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity
		WHERE application_name = 'stint wake-ups' AND position($1 in query) > 0`, channel).Scan(&pid))
	return pid
}

// TestListenWakeups: a submit from another Store on the schema wakes the
// listener, before and after its connection is killed (it connects again,
// and says so with a wake-up, notifications meanwhile being lost).
func TestListenWakeups(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	listening := open(t, schema, postgres.Options{ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
	other := open(t, schema, postgres.Options{})
	ctx := t.Context()
	h := putModule(t, other)
	raw := rawConn(t, schema)

	ch, stop, err := listening.ListenWakeups()
	require.NoError(t, err)
	defer func() { require.NoError(t, stop()) }()
	waitWake(t, ch, "once listening")
	pid := listenerPID(t, raw, listening.Channel())

	_, _, err = other.Submit(ctx, tasks.Spec{Module: h})
	require.NoError(t, err)
	waitWake(t, ch, "for a submit")

	// Retry notifies too.
	task, _, err := other.Submit(ctx, tasks.Spec{Module: h})
	require.NoError(t, err)
	waitWake(t, ch, "for a submit")
	_, err = other.Cancel(ctx, task.ID)
	require.NoError(t, err)
	_, err = other.Retry(ctx, task.ID)
	require.NoError(t, err)
	waitWake(t, ch, "for a retry")

	var killed bool
	require.NoError(t, raw.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&killed))
	require.True(t, killed)
	waitWake(t, ch, "once listening again")
	require.NotEqual(t, pid, listenerPID(t, raw, listening.Channel()), "a new connection")

	_, _, err = other.Submit(ctx, tasks.Spec{Module: h})
	require.NoError(t, err)
	waitWake(t, ch, "for a submit after the reconnection")
}

// TestListenAfterClose: a closed store refuses to listen, and Close stops
// the listeners still running (goleak checks their goroutines are gone).
func TestListenAfterClose(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s, err := postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema})
	require.NoError(t, err)
	ch, stop, err := s.ListenWakeups()
	require.NoError(t, err)
	waitWake(t, ch, "once listening")
	require.NoError(t, s.Close())
	require.NoError(t, stop(), "stopping after Close is fine")
	_, _, err = s.ListenWakeups()
	require.ErrorContains(t, err, "closed")
}
