package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestThroughput: attempts are counted in their minute, the series is the
// last hour oldest first, minutes older than an hour are forgotten (also
// after a gap of more than an hour), and the graph draws a bar of each
// kind with the totals in its title.
func TestThroughput(t *testing.T) {
	var tp throughput
	t0 := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	tp.add(t0, true)
	tp.add(t0.Add(30*time.Second), true)
	tp.add(t0.Add(time.Minute), false)
	ok, bad := tp.series(t0.Add(time.Minute))
	require.Equal(t, int64(2), ok[throughputMinutes-2])
	require.Equal(t, int64(1), bad[throughputMinutes-1])
	require.Zero(t, ok[throughputMinutes-1])

	svg := string(tp.svg(t0.Add(time.Minute)))
	require.True(t, strings.HasPrefix(svg, `<svg id="throughput"`), svg)
	require.Contains(t, svg, `class="ok"`)
	require.Contains(t, svg, `class="bad"`)
	require.Contains(t, svg, "2 succeeded, 1 not; busiest minute 2")

	ok, bad = tp.series(t0.Add(59 * time.Minute))
	require.Equal(t, int64(2), ok[0], "59 minutes later: the oldest minute shown")
	ok, bad = tp.series(t0.Add(61 * time.Minute))
	require.Zero(t, sum(ok[:])+sum(bad[:]), "past the hour: forgotten")
	tp.add(t0.Add(5*time.Hour), false)
	ok, bad = tp.series(t0.Add(5 * time.Hour))
	require.Zero(t, sum(ok[:]))
	require.Equal(t, int64(1), sum(bad[:]), "after a gap of hours: only the new minute")
	require.NotContains(t, string((&throughput{}).svg(t0)), `<rect class=`, "no attempt: no bar")
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}
