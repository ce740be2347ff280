package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/stint-run/stint/tasks"
)

// How often the progress is shown: redrawn on a terminal, logged
// otherwise; and how often the guests' own progress is read.
const (
	batchBarEvery      = 200 * time.Millisecond
	batchLogEvery      = 5 * time.Second
	batchProgressEvery = time.Second
)

// batchProgress shows how a batch goes: a bar on a terminal, a log line
// every batchLogEvery otherwise.
type batchProgress struct {
	b     *batchRun
	w     io.Writer
	fd    int // the terminal's, or -1
	queue string
	start time.Time
	// guests is the latest guest-reported progress of long tasks.
	guests string
}

func newBatchProgress(b *batchRun, w io.Writer, queue string) *batchProgress {
	p := &batchProgress{b: b, w: w, fd: -1, queue: queue, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.fd = int(f.Fd())
	}
	return p
}

// batchCounts is a snapshot of a batch's counts.
type batchCounts struct {
	total, succeeded, already, failed, running, left int
}

func (b *batchRun) counts() batchCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return batchCounts{total: len(b.inputs), succeeded: b.succeeded, already: b.already,
		// Attempts that ended wait a moment for their batch of records:
		// started minus ended may count them.
		failed: b.failed, running: min(max(b.running, 0), b.workers), left: b.left}
}

// run shows the progress until the returned func is called (which clears
// the bar).
func (p *batchProgress) run() func() {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := batchLogEvery
		if p.fd >= 0 {
			every = batchBarEvery
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		lastGuests := time.Time{}
		for {
			select {
			case <-quit:
				if p.fd >= 0 {
					fmt.Fprint(p.w, "\r\033[K")
				}
				return
			case <-tick.C:
			}
			if time.Since(lastGuests) >= batchProgressEvery {
				p.guests = p.readGuests()
				lastGuests = time.Now()
			}
			if p.fd >= 0 {
				fmt.Fprint(p.w, "\r\033[K"+p.bar(p.b.counts()))
			} else {
				p.log(p.b.counts())
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// rate is the inputs ended per second in this run, and the time the rest
// should take at it.
func (p *batchProgress) rate(c batchCounts) (float64, time.Duration) {
	el := time.Since(p.start).Seconds()
	ended := c.succeeded + c.failed
	if el <= 0 || ended == 0 {
		return 0, -1
	}
	r := float64(ended) / el
	return r, time.Duration(float64(c.left) / r * float64(time.Second))
}

func (p *batchProgress) bar(c batchCounts) string {
	width := 80
	if w, _, err := term.GetSize(p.fd); err == nil && w > 20 {
		width = w
	}
	done := c.total - c.left
	rate, eta := p.rate(c)
	etaS := "?"
	if eta >= 0 {
		etaS = eta.Round(time.Second).String()
	}
	text := fmt.Sprintf(" %d/%d  ok %d  failed %d  running %d  %.0f/s  ETA %s", done, c.total,
		c.succeeded+c.already, c.failed, c.running, rate, etaS)
	if p.guests != "" {
		text += "  " + p.guests
	}
	barW := min(30, width-len(text)-3)
	s := ""
	if barW >= 5 {
		fill := barW * done / max(c.total, 1)
		s = "[" + strings.Repeat("=", fill) + strings.Repeat(" ", barW-fill) + "]"
	}
	line := s + text
	if len(line) > width-1 {
		line = line[:width-1]
	}
	return line
}

func (p *batchProgress) log(c batchCounts) {
	rate, eta := p.rate(c)
	fields := []zap.Field{zap.Int("done", c.total-c.left), zap.Int("total", c.total),
		zap.Int("succeeded", c.succeeded+c.already), zap.Int("failed", c.failed), zap.Int("running", c.running),
		zap.Float64("files_per_second", float64(int(rate*10))/10)}
	if eta >= 0 {
		fields = append(fields, zap.Duration("eta", eta.Round(time.Second)))
	}
	if p.guests != "" {
		fields = append(fields, zap.String("guests", p.guests))
	}
	p.b.a.log.Info("batch progress", fields...)
}

// readGuests reads the progress the running guests reported (stint
// progress), for the long ones: "big.txt 45%, other.txt 3/10".
func (p *batchProgress) readGuests() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ts, err := p.b.store.List(ctx, tasks.ListFilter{State: tasks.StateRunning, Queue: p.queue, Limit: 64})
	if err != nil {
		return "" // the store closing at the end of the batch
	}
	var parts []string
	for _, t := range ts {
		in := p.b.input(t.ID)
		if in == nil || t.ProgressTotal <= 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d%%", termSafe(in.name), 100*t.ProgressDone/t.ProgressTotal))
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, ", ")
}
