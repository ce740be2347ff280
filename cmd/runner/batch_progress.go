package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
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
	// bar draws the bar on a terminal (schollz/progressbar).
	bar *progressbar.ProgressBar
}

// batchWaitingNames is how many of the inputs still running the progress
// names once every other input is done (what the end waits for).
const batchWaitingNames = 3

func newBatchProgress(st *batch.Status, w io.Writer, log *zap.Logger) *batchProgress {
	p := &batchProgress{st: st, w: w, logger: log, fd: -1, start: time.Now()}
	if fd, ok := terminalFd(w); ok {
		p.fd = fd
		p.bar = progressbar.NewOptions(st.Counts().Total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionThrottle(batchBarEvery/2),
			progressbar.OptionUseANSICodes(true),
			progressbar.OptionSetRenderBlankState(true))
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
				if p.bar != nil {
					_ = p.bar.Clear()
				}
				return
			case <-tick.C:
			}
			if time.Since(lastGuests) >= batchProgressEvery {
				p.guests = p.readGuests()
				lastGuests = time.Now()
			}
			if p.bar != nil {
				c := p.st.Counts()
				p.bar.Describe(p.describe(c))
				_ = p.bar.Set(c.Total - c.Left)
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

// describe is the text beside the bar: the counts, the guests' own
// progress, and once every other input is done the names of those still
// running (what the end waits for).
func (p *batchProgress) describe(c batch.Counts) string {
	rate, _ := p.rate(c)
	text := fmt.Sprintf("%.0f/s  ok %d  failed %d  running %d", rate, c.Succeeded+c.AlreadyDone, c.Failed+c.SkippedFailed, c.Running)
	if p.guests != "" {
		text += "  " + p.guests
	}
	if w := p.waiting(c); w != "" {
		text += "  waiting for " + w
	}
	width := 80
	if w, _, err := term.GetSize(p.fd); err == nil && w > 20 {
		width = w
	}
	if max := width - 70; len(text) > max && max > 10 {
		text = text[:max-3] + "..."
	}
	return text
}

// waiting names the inputs still running once they are all that is left
// ("" before): "slow.txt, big.log".
func (p *batchProgress) waiting(c batch.Counts) string {
	if c.Left == 0 || c.Left > c.Running {
		return ""
	}
	names := p.st.RunningInputs(batchWaitingNames)
	for i, n := range names {
		names[i] = termSafe(n)
	}
	s := strings.Join(names, ", ")
	if more := c.Left - len(names); more > 0 && len(names) > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
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
	if w := p.waiting(c); w != "" {
		fields = append(fields, zap.String("waiting_for", w))
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
