package server

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// throughputMinutes is how many minutes the overview's graph shows.
const throughputMinutes = 60

// throughput counts the attempts this runner recorded (ObserveAttemptEnd)
// per minute over the last hour, those that succeeded and the others, in
// all, per queue and per tenant, for the dashboard's graphs: drawn on the
// server as SVG, so that the pages need no script. Its queues are those
// this runner ran an attempt of (its own configuration's); its tenants
// those it ran an attempt of, past maxTenantSeries only those of the last
// hour (dropIdleTenants), so that a store with many tenants does not grow
// it for ever.
type throughput struct {
	mu       sync.Mutex
	all      minutes
	byQueue  map[string]*minutes
	byTenant map[string]*minutes
	// sweepPast is how many tenants' series byTenant holds before add
	// next sweeps it: maxTenantSeries, or twice what a sweep left, so
	// that while more tenants than that are active each add costs O(1)
	// on average rather than a scan of them all under the lock.
	sweepPast int
}

// minutes is one series of the last hour: last is the minute (Unix time
// / 60) of the newest slot; slot m is at m % throughputMinutes.
type minutes struct {
	last    int64
	ok, bad [throughputMinutes]int64
}

// add counts an attempt of queue and tenant that ended at now.
func (t *throughput) add(now time.Time, queue, tenant string, succeeded bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byTenant) > max(maxTenantSeries, t.sweepPast) {
		t.dropIdleTenants(now)
		t.sweepPast = 2 * len(t.byTenant)
	}
	for _, m := range []*minutes{&t.all, seriesOf(&t.byQueue, queue), seriesOf(&t.byTenant, tenant)} {
		m.advance(now.Unix() / 60)
		i := m.last % throughputMinutes
		if succeeded {
			m.ok[i]++
		} else {
			m.bad[i]++
		}
	}
}

// maxTenantSeries is how many tenants' series add keeps before it drops
// those with nothing in the last hour (and, while more are active, before
// it next looks: see throughput.sweepPast).
const maxTenantSeries = 1000

// seriesOf returns name's series in *by, made if it has none.
func seriesOf(by *map[string]*minutes, name string) *minutes {
	m := (*by)[name]
	if m == nil {
		if *by == nil {
			*by = map[string]*minutes{}
		}
		m = &minutes{}
		(*by)[name] = m
	}
	return m
}

// dropIdleTenants drops the tenants with no attempt in the hour to now.
func (t *throughput) dropIdleTenants(now time.Time) {
	for name, m := range t.byTenant {
		if m.last <= now.Unix()/60-throughputMinutes {
			delete(t.byTenant, name)
		}
	}
}

// advance moves the newest slot to minute m, clearing the slots passed.
func (t *minutes) advance(m int64) {
	if m <= t.last {
		return
	}
	for k := t.last + 1; k <= m && k <= t.last+throughputMinutes; k++ {
		t.ok[k%throughputMinutes], t.bad[k%throughputMinutes] = 0, 0
	}
	t.last = m
}

// series returns the last hour's counts of all queues at now, oldest
// minute first.
func (t *throughput) series(now time.Time) (ok, bad [throughputMinutes]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.all.series(now)
}

// series is minutes' last hour at now, oldest minute first; the caller
// holds throughput's lock.
func (t *minutes) series(now time.Time) (ok, bad [throughputMinutes]int64) {
	t.advance(now.Unix() / 60)
	for k := range throughputMinutes {
		m := t.last - throughputMinutes + 1 + int64(k)
		ok[k], bad[k] = t.ok[m%throughputMinutes], t.bad[m%throughputMinutes]
	}
	return ok, bad
}

// throughputView is the overview's graph of the last hour
// (overview.html draws it as SVG): a bar a minute, succeeded attempts in
// green under the others in red, scaled to the busiest minute (Top), and
// the totals in Title, also for screen readers.
type throughputView struct {
	Title string
	Top   int64
	Bars  []throughputBar
}

// throughputBar is one minute's bar, in the graph's coordinates: Ok
// (height OkH from OkY) under Bad (height BadH from BadY).
type throughputBar struct {
	X, OkY, OkH, BadY, BadH int
}

// The graph's bars (overview.html, 600 wide: 60 bars of
// throughputBarWidth, each 8 wide), in the graph's units: no bar is
// higher than throughputHeight. A queue's row draws the same bars in a
// graph a fifth the size (queueGraphScale).
const throughputHeight, throughputBarWidth = 80, 10

// view is the last hour of all queues at now, as the overview draws it.
func (t *throughput) view(now time.Time) throughputView {
	ok, bad := t.series(now)
	return barsOf(ok, bad, "attempts recorded by this runner in the last hour")
}

// queueViews is the last hour of each queue at now, for the overview's
// counts (a queue this runner ran no attempt of in the last hour has
// none).
func (t *throughput) queueViews(now time.Time) map[string]throughputView {
	return t.views(now, func() map[string]*minutes { return t.byQueue }, "queue ")
}

// tenantViews is queueViews for the tenants page.
func (t *throughput) tenantViews(now time.Time) map[string]throughputView {
	return t.views(now, func() map[string]*minutes { return t.byTenant }, "tenant ")
}

// views draws each series of by() (read under the lock; its names'
// kind: what) that has an attempt in the last hour at now.
func (t *throughput) views(now time.Time, by func() map[string]*minutes, what string) map[string]throughputView {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]throughputView{}
	for name, m := range by() {
		label := what + name
		if name == "" {
			label = "the default " + strings.TrimSpace(what)
		}
		ok, bad := m.series(now)
		if v := barsOf(ok, bad, "attempts of "+label+" recorded by this runner in the last hour"); v.Top > 0 {
			out[name] = v
		}
	}
	return out
}

// barsOf draws a series: a bar a minute scaled to the busiest (Top), the
// totals in the title, which what says.
func barsOf(ok, bad [throughputMinutes]int64, what string) throughputView {
	var v throughputView
	var okAll, badAll int64
	for k := range ok {
		v.Top = max(v.Top, ok[k]+bad[k])
		okAll += ok[k]
		badAll += bad[k]
	}
	v.Title = fmt.Sprintf("%s: %d succeeded, %d not; busiest minute %d", what, okAll, badAll, v.Top)
	if v.Top == 0 {
		return v
	}
	const h = throughputHeight
	for k := range ok {
		okH, badH := int(ok[k]*h/v.Top), int(bad[k]*h/v.Top)
		if okH+badH > 0 {
			v.Bars = append(v.Bars, throughputBar{X: k*throughputBarWidth + 1, OkY: h - okH, OkH: okH, BadY: h - okH - badH, BadH: badH})
		}
	}
	return v
}
