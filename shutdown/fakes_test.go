package shutdown

import (
	"sync"
	"testing"
	"time"
)

// guard bounds every wait of a test so a bug fails the test instead of
// hanging it. It is never what a test measures.
const guard = 30 * time.Second

// recv returns the next value from ch, failing the test if none comes.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}

// isClosed reports whether ch is closed (or has a value ready).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// fakeClock is a Clock that moves only when a test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever a timer is added
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock {
	return &fakeClock{now: t0, changed: make(chan struct{})}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.timers = append(f.timers, &fakeTimer{at: f.now.Add(d), ch: ch})
	close(f.changed)
	f.changed = make(chan struct{})
	return ch
}

// fireAt waits until a timer is set to fire at at (an offset from t0),
// then moves the clock there, firing every timer due.
func (f *fakeClock) fireAt(t *testing.T, offset time.Duration) {
	t.Helper()
	at := t0.Add(offset)
	for {
		f.mu.Lock()
		found := false
		for _, tm := range f.timers {
			if tm.at.Equal(at) {
				found = true
				break
			}
		}
		changed := f.changed
		f.mu.Unlock()
		if found {
			break
		}
		select {
		case <-changed:
		case <-time.After(guard):
			t.Fatalf("no timer set for t0+%s", offset)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if at.After(f.now) {
		f.now = at
	}
	kept := f.timers[:0]
	for _, tm := range f.timers {
		if tm.at.After(f.now) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- tm.at
	}
	f.timers = kept
}

// endsOn says what makes a fake workload's units end.
type endsOn int

const (
	endsNever   endsOn = iota // only finish() ends them
	endsRequest               // RequestStop ends them (cooperative)
	endsForce                 // ForceStop ends them; RequestStop is ignored
)

// fakeWorkload runs a fixed number of units that end the way mode says.
type fakeWorkload struct {
	mode     endsOn
	onIntake func() // called first thing in StopIntake
	block    chan struct{}

	intake, requested, forced chan struct{} // closed when the call came
	idle                      chan struct{}

	mu    sync.Mutex
	stats Stats
}

func newFakeWorkload(running int, mode endsOn) *fakeWorkload {
	w := &fakeWorkload{
		mode:      mode,
		intake:    make(chan struct{}),
		requested: make(chan struct{}),
		forced:    make(chan struct{}),
		idle:      make(chan struct{}),
		stats:     Stats{Running: running},
	}
	if running == 0 {
		close(w.idle)
	}
	return w
}

func (w *fakeWorkload) StopIntake() {
	if w.onIntake != nil {
		w.onIntake()
	}
	close(w.intake)
	if w.block != nil {
		<-w.block
	}
}

func (w *fakeWorkload) Idle() <-chan struct{} { return w.idle }

func (w *fakeWorkload) RequestStop() {
	close(w.requested)
	if w.mode == endsRequest {
		w.end(func(s *Stats, n int) { s.Interrupted += n })
	}
}

func (w *fakeWorkload) ForceStop() {
	close(w.forced)
	if w.mode == endsForce {
		w.end(func(s *Stats, n int) { s.Forced += n })
	}
}

func (w *fakeWorkload) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// finish makes every running unit end normally.
func (w *fakeWorkload) finish() { w.end(func(s *Stats, n int) { s.Finished += n }) }

func (w *fakeWorkload) end(count func(s *Stats, n int)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.stats.Running
	if n == 0 {
		return
	}
	w.stats.Running = 0
	count(&w.stats, n)
	close(w.idle)
}
