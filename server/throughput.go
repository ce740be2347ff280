package server

import (
	"fmt"
	"html/template"
	"strings"
	"sync"
	"time"
)

// throughputMinutes is how many minutes the overview's graph shows.
const throughputMinutes = 60

// throughput counts the attempts this runner recorded (ObserveAttemptEnd)
// per minute over the last hour, those that succeeded and the others, for
// the overview's graph: drawn on the server as SVG, so that the page needs
// no script.
type throughput struct {
	mu sync.Mutex
	// last is the minute (Unix time / 60) of the newest slot; slot m is
	// at m % throughputMinutes.
	last    int64
	ok, bad [throughputMinutes]int64
}

// add counts an attempt that ended at now.
func (t *throughput) add(now time.Time, succeeded bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(now.Unix() / 60)
	i := t.last % throughputMinutes
	if succeeded {
		t.ok[i]++
	} else {
		t.bad[i]++
	}
}

// advance moves the newest slot to minute m, clearing the slots passed.
func (t *throughput) advance(m int64) {
	if m <= t.last {
		return
	}
	for k := t.last + 1; k <= m && k <= t.last+throughputMinutes; k++ {
		t.ok[k%throughputMinutes], t.bad[k%throughputMinutes] = 0, 0
	}
	t.last = m
}

// series returns the last hour's counts at now, oldest minute first.
func (t *throughput) series(now time.Time) (ok, bad [throughputMinutes]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(now.Unix() / 60)
	for k := range throughputMinutes {
		m := t.last - throughputMinutes + 1 + int64(k)
		ok[k], bad[k] = t.ok[m%throughputMinutes], t.bad[m%throughputMinutes]
	}
	return ok, bad
}

// svg draws the last hour at now: a bar a minute, succeeded attempts in
// green under the others in red, scaled to the busiest minute, with its
// count and totals as text (also the graph's title, for screen readers).
func (t *throughput) svg(now time.Time) template.HTML {
	ok, bad := t.series(now)
	var top, okAll, badAll int64
	for k := range ok {
		top = max(top, ok[k]+bad[k])
		okAll += ok[k]
		badAll += bad[k]
	}
	const w, h, bar = 600, 80, 10
	var b strings.Builder
	title := fmt.Sprintf("attempts recorded by this runner in the last hour: %d succeeded, %d not; busiest minute %d", okAll, badAll, top)
	fmt.Fprintf(&b, `<svg id="throughput" role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`,
		template.HTMLEscapeString(title), w, h+16, w, h+16)
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="none" stroke="#ccc"/>`, w, h)
	for k := range ok {
		if top == 0 {
			break
		}
		x := k * bar
		okH := int(ok[k] * h / top)
		badH := int(bad[k] * h / top)
		if okH > 0 {
			fmt.Fprintf(&b, `<rect class="ok" x="%d" y="%d" width="%d" height="%d" fill="#2e7d32"/>`, x+1, h-okH, bar-2, okH)
		}
		if badH > 0 {
			fmt.Fprintf(&b, `<rect class="bad" x="%d" y="%d" width="%d" height="%d" fill="#c62828"/>`, x+1, h-okH-badH, bar-2, badH)
		}
	}
	fmt.Fprintf(&b, `<text x="0" y="%d" font-size="11" fill="#666">60 min ago</text>`, h+13)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#666" text-anchor="end">now · busiest minute %d</text>`, w, h+13, top)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built here from numbers and escaped text
}
