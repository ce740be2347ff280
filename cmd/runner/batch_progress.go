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

	"github.com/stint-run/stint/batch"
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
	st     *batch.Status
	w      io.Writer
	logger *zap.Logger
	fd     int // the terminal's, or -1
	start  time.Time
	// guests is the latest guest-reported progress of long tasks.
	guests string
}

func newBatchProgress(st *batch.Status, w io.Writer, log *zap.Logger) *batchProgress {
	p := &batchProgress{st: st, w: w, logger: log, fd: -1, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.fd = int(f.Fd())
	}
	return p
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
				fmt.Fprint(p.w, "\r\033[K"+p.bar(p.st.Counts()))
			} else {
				p.log(p.st.Counts())
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// rate is the inputs ended per second in this run, and the time the rest
// should take at it.
func (p *batchProgress) rate(c batch.Counts) (float64, time.Duration) {
	el := time.Since(p.start).Seconds()
	ended := c.Succeeded + c.Failed
	if el <= 0 || ended == 0 {
		return 0, -1
	}
	r := float64(ended) / el
	return r, time.Duration(float64(c.Left) / r * float64(time.Second))
}

func (p *batchProgress) bar(c batch.Counts) string {
	width := 80
	if w, _, err := term.GetSize(p.fd); err == nil && w > 20 {
		width = w
	}
	done := c.Total - c.Left
	rate, eta := p.rate(c)
	etaS := "?"
	if eta >= 0 {
		etaS = eta.Round(time.Second).String()
	}
	text := fmt.Sprintf(" %d/%d  ok %d  failed %d  running %d  %.0f/s  ETA %s", done, c.Total,
		c.Succeeded+c.AlreadyDone, c.Failed, c.Running, rate, etaS)
	if p.guests != "" {
		text += "  " + p.guests
	}
	barW := min(30, width-len(text)-3)
	s := ""
	if barW >= 5 {
		fill := barW * done / max(c.Total, 1)
		s = "[" + strings.Repeat("=", fill) + strings.Repeat(" ", barW-fill) + "]"
	}
	line := s + text
	if len(line) > width-1 {
		line = line[:width-1]
	}
	return line
}

func (p *batchProgress) log(c batch.Counts) {
	rate, eta := p.rate(c)
	fields := []zap.Field{zap.Int("done", c.Total-c.Left), zap.Int("total", c.Total),
		zap.Int("succeeded", c.Succeeded+c.AlreadyDone), zap.Int("failed", c.Failed), zap.Int("running", c.Running),
		zap.Float64("files_per_second", float64(int(rate*10))/10)}
	if eta >= 0 {
		fields = append(fields, zap.Duration("eta", eta.Round(time.Second)))
	}
	if p.guests != "" {
		fields = append(fields, zap.String("guests", p.guests))
	}
	p.logger.Info("batch progress", fields...)
}

// readGuests reads the progress the running guests reported (stint
// progress), for the long ones: "big.txt 45%, other.txt 3/10".
func (p *batchProgress) readGuests() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ps, err := p.st.Progress(ctx, 3)
	if err != nil {
		return "" // the store closing at the end of the batch
	}
	parts := make([]string, len(ps))
	for i, g := range ps {
		parts[i] = fmt.Sprintf("%s %d%%", termSafe(g.Name), 100*g.Done/g.Total)
	}
	return strings.Join(parts, ", ")
}
