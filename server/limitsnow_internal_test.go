package server

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLimitsNowKeepsASecond: throttle's view of the tenants and queues
// is fetched once, kept for limitsFresh, fetched again after it (or when
// the clock goes back), and an error is not kept.
func TestLimitsNowKeepsASecond(t *testing.T) {
	var c limitsNow[int]
	fetches := 0
	fetch := func() (int, error) { fetches++; return fetches, nil }
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		at   time.Duration
		want int
	}{{0, 1}, {limitsFresh / 2, 1}, {limitsFresh - 1, 1}, {limitsFresh, 2}, {limitsFresh / 2, 3}} {
		got, err := c.get(t0.Add(step.at), fetch)
		require.NoError(t, err)
		require.Equal(t, step.want, got, "at %s", step.at)
	}
	var failing limitsNow[int]
	_, err := failing.get(t0, func() (int, error) { return 0, errors.New("store down") })
	require.Error(t, err)
	got, err := failing.get(t0, fetch)
	require.NoError(t, err)
	require.Equal(t, 4, got, "an error was kept")
	failing.drop()
	got, err = failing.get(t0, fetch)
	require.NoError(t, err)
	require.Equal(t, 5, got, "drop did not drop it")
}
