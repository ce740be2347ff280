package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// parseShutdownReport finds the runner's "shutdown finished" JSON log line.
func parseShutdownReport(log string) (*shutdownRun, error) {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var started time.Time
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.Contains(line, []byte(`"shutdown started"`)) {
			var rec struct {
				TS string `json:"ts"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				return nil, fmt.Errorf("shutdown start: %w: %s", err, line)
			}
			t, err := time.Parse("2006-01-02T15:04:05.000Z0700", rec.TS)
			if err != nil {
				return nil, fmt.Errorf("shutdown start time: %w", err)
			}
			started = t
			continue
		}
		if !bytes.Contains(line, []byte(`"shutdown finished"`)) {
			continue
		}
		var rec struct {
			Total       json.RawMessage `json:"total"`
			Finished    int             `json:"finished"`
			Cooperative int             `json:"cooperative"`
			Forced      int             `json:"forced"`
			NotEnded    int             `json:"not_ended"`
			Phases      []struct {
				Phase    string          `json:"phase"`
				Duration json.RawMessage `json:"duration"`
				Skipped  bool            `json:"skipped"`
			} `json:"phases"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("shutdown report: %w: %s", err, line)
		}
		if started.IsZero() {
			return nil, errors.New(`no "shutdown started" line before "shutdown finished" in the runner's log`)
		}
		r := &shutdownRun{phases: map[string]time.Duration{}, started: started,
			finished: rec.Finished, cooperative: rec.Cooperative, forced: rec.Forced, notEnded: rec.NotEnded}
		var err error
		if r.total, err = zapDuration(rec.Total); err != nil {
			return nil, err
		}
		for _, p := range rec.Phases {
			if p.Skipped {
				continue
			}
			d, err := zapDuration(p.Duration)
			if err != nil {
				return nil, err
			}
			r.phases[p.Phase] = d
		}
		return r, nil
	}
	return nil, fmt.Errorf("no \"shutdown finished\" line in the runner's log:\n%s", tail(log, 2000))
}

// zapDuration reads a duration as zap's JSON encoders write it: seconds as
// a number (the production default), nanoseconds, or a Go duration string.
func zapDuration(raw json.RawMessage) (time.Duration, error) {
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("duration %s: %w", raw, err)
	}
	return time.ParseDuration(s)
}

// waitFor polls cond every 10 ms until it holds, the process exits, or
// the timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, exited <-chan struct{}, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case <-exited:
			return errors.New("the runner exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
	}
	return nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
