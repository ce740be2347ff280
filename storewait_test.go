package stint_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/tasks/storeurl"
)

// unreachablePostgres is the URL of a PostgreSQL nobody serves: a
// loopback port just listened on and closed (connections are refused).
func unreachablePostgres(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "postgres://stint@" + addr + "/none?sslmode=disable"
}

// TestOpenWaitsForTheStore: with StoreWait, Open tries an unreachable
// store again with backoff, logging each failed try, calls OnStoreWait
// once, and fails once StoreWait has passed with the last error (which
// still says the store is unavailable); without it, it fails at the first
// try, and a cancelled ctx ends the wait.
func TestOpenWaitsForTheStore(t *testing.T) {
	t.Parallel()
	url := unreachablePostgres(t)
	core, logs := observer.New(zap.WarnLevel)
	waits := 0
	_, err := stint.Open(context.Background(), stint.Config{Store: url, StoreWait: 400 * time.Millisecond,
		OnStoreWait: func() { waits++ }, Logger: zap.New(core)})
	require.Error(t, err)
	require.True(t, storeurl.Unavailable(err), "%v", err)
	require.ErrorContains(t, err, "the store stayed unreachable for")
	require.Equal(t, 1, waits)
	tries := logs.FilterMessage("store unreachable; waiting for it").All()
	require.GreaterOrEqual(t, len(tries), 2, "at least two tries within 400ms (the first wait is about 100ms)")
	for i, e := range tries {
		require.Equal(t, int64(i+1), e.ContextMap()["try"])
	}

	core, logs = observer.New(zap.WarnLevel)
	_, err = stint.Open(context.Background(), stint.Config{Store: url, OnStoreWait: func() { waits++ }, Logger: zap.New(core)})
	require.True(t, storeurl.Unavailable(err), "%v", err)
	require.Equal(t, 1, waits, "no wait without StoreWait")
	require.Zero(t, logs.Len())

	ctx, cancel := context.WithCancel(context.Background())
	_, err = stint.Open(ctx, stint.Config{Store: url, StoreWait: time.Hour, OnStoreWait: cancel})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "stopped waiting for the store")

	_, err = stint.Open(context.Background(), stint.Config{Store: url, StoreWait: -time.Second})
	require.ErrorContains(t, err, "Config.StoreWait")
}
