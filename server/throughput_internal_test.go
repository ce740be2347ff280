package server

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestThroughput: attempts are counted in their minute, in all, in their
// queue's and in their tenant's series, each the last hour oldest first; minutes older
// than an hour are forgotten (also after a gap of more than an hour); the
// graph has a bar of each kind with the totals in its title, and a queue
// with no attempt in the last hour has no graph.
func TestThroughput(t *testing.T) {
	var tp throughput
	t0 := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	tp.add(t0, "a", "acme", true)
	tp.add(t0.Add(30*time.Second), "a", "", true)
	tp.add(t0.Add(time.Minute), "b", "acme", false)
	ok, bad := tp.series(t0.Add(time.Minute))
	require.Equal(t, int64(2), ok[throughputMinutes-2])
	require.Equal(t, int64(1), bad[throughputMinutes-1])
	require.Zero(t, ok[throughputMinutes-1])

	v := tp.view(t0.Add(time.Minute))
	require.Contains(t, v.Title, "2 succeeded, 1 not; busiest minute 2")
	require.Equal(t, []throughputBar{
		{X: (throughputMinutes-2)*throughputBarWidth + 1, OkY: 0, OkH: throughputHeight, BadY: 0},
		{X: (throughputMinutes-1)*throughputBarWidth + 1, OkY: throughputHeight, BadY: throughputHeight / 2, BadH: throughputHeight / 2},
	}, v.Bars, "a bar of each kind, scaled to the busiest minute")

	queues := tp.queueViews(t0.Add(time.Minute))
	require.Len(t, queues, 2)
	require.Contains(t, queues["a"].Title, "queue a recorded by this runner in the last hour: 2 succeeded, 0 not; busiest minute 2")
	require.Equal(t, []throughputBar{{X: (throughputMinutes-2)*throughputBarWidth + 1, OkY: 0, OkH: throughputHeight, BadY: 0}}, queues["a"].Bars)
	require.Equal(t, []throughputBar{{X: (throughputMinutes-1)*throughputBarWidth + 1, OkY: throughputHeight, BadY: 0, BadH: throughputHeight}}, queues["b"].Bars,
		"each queue scaled to its own busiest minute")
	tenants := tp.tenantViews(t0.Add(time.Minute))
	require.Contains(t, tenants["acme"].Title, "tenant acme recorded by this runner in the last hour: 1 succeeded, 1 not")
	require.Contains(t, tenants[""].Title, "the default tenant recorded by this runner in the last hour: 1 succeeded, 0 not")

	ok, bad = tp.series(t0.Add(59 * time.Minute))
	require.Equal(t, int64(2), ok[0], "59 minutes later: the oldest minute shown")
	ok, bad = tp.series(t0.Add(61 * time.Minute))
	require.Zero(t, sum(ok[:])+sum(bad[:]), "past the hour: forgotten")
	tp.add(t0.Add(5*time.Hour), "a", "acme", false)
	ok, bad = tp.series(t0.Add(5 * time.Hour))
	require.Zero(t, sum(ok[:]))
	require.Equal(t, int64(1), sum(bad[:]), "after a gap of hours: only the new minute")
	require.Equal(t, []string{"a"}, slices.Collect(maps.Keys(tp.queueViews(t0.Add(5*time.Hour)))), "b had nothing in the last hour")
	require.Empty(t, (&throughput{}).view(t0).Bars, "no attempt: no bar")
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// TestThroughputDropsIdleTenants: past maxTenantSeries tenants, those with
// nothing in the last hour are dropped, so that a store with many tenants
// does not grow the dashboard's record for ever.
func TestThroughputDropsIdleTenants(t *testing.T) {
	var tp throughput
	t0 := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	for i := range maxTenantSeries + 1 {
		tp.add(t0, "q", fmt.Sprint("t", i), true)
	}
	tp.add(t0.Add(2*time.Hour), "q", "new", true)
	require.Equal(t, []string{"new"}, slices.Collect(maps.Keys(tp.byTenant)))
	require.Len(t, tp.tenantViews(t0.Add(2*time.Hour)), 1)
}

// TestThroughputSweepsOnlyOnceDoubled: a sweep that finds every tenant
// active leaves the next to when the map has doubled, so that while more
// than maxTenantSeries tenants are active an attempt's end does not scan
// them all; the idle are dropped then.
func TestThroughputSweepsOnlyOnceDoubled(t *testing.T) {
	var tp throughput
	t0 := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	for i := range maxTenantSeries + 2 { // the last add sweeps, and finds all active
		tp.add(t0, "q", fmt.Sprint("t", i), true)
	}
	later := t0.Add(2 * time.Hour)
	tp.add(later, "q", "new", true)
	require.Len(t, tp.byTenant, maxTenantSeries+3, "swept again before the map doubled")
	for i := range maxTenantSeries + 1 { // past twice what the sweep left
		tp.add(later, "q", fmt.Sprint("n", i), true)
	}
	require.Len(t, tp.byTenant, maxTenantSeries+2, "the idle were not dropped once the map doubled")
	require.Contains(t, tp.byTenant, "new")
	require.NotContains(t, tp.byTenant, "t0")
}
