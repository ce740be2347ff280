package sandbox

import "sync"

// guestWorkers are the goroutines that run the guests of plugin calls the
// watchdog may abandon (plugin.go: Call must be able to return while its
// guest still runs, so the guest cannot run on the caller's goroutine).
// They are kept between calls: a goroutine started per call grew its
// stack anew each time, which made a warm call about 3 µs slower. An idle
// worker waits on its channel; Close ends the idle ones, and a busy one
// ends after its call once the Runtime is closed.
type guestWorkers struct {
	mu     sync.Mutex
	idle   []*guestWorker
	closed bool
}

// guestWorker is one such goroutine's inbox.
type guestWorker struct{ calls chan *pluginCall }

// maxIdleGuestWorkers bounds the idle workers kept: past it a worker ends
// after its call.
const maxIdleGuestWorkers = 64

// startGuest runs pc's guest on a worker: an idle one, or a new one.
func (r *Runtime) startGuest(pc *pluginCall) {
	gw := &r.guests
	gw.mu.Lock()
	if n := len(gw.idle); n > 0 {
		w := gw.idle[n-1]
		gw.idle[n-1] = nil
		gw.idle = gw.idle[:n-1]
		gw.mu.Unlock()
		w.calls <- pc
		return
	}
	gw.mu.Unlock()
	w := &guestWorker{calls: make(chan *pluginCall, 1)}
	w.calls <- pc
	go r.guestWorker(w)
}

// guestWorker runs calls until its inbox is closed or the runtime no
// longer keeps it. A call the watchdog abandoned keeps it for as long as
// its guest runs; then its instance is discarded (Call has returned).
func (r *Runtime) guestWorker(w *guestWorker) {
	for pc := range w.calls {
		pc.guest()
		if pc.abandoned != nil {
			pc.p.discard(pc.inst)
		}
		kept := r.idleGuestWorker(w)
		pc.wake <- struct{}{} // pc is not touched after this: Call may recycle it
		if !kept {
			return
		}
	}
}

// idleGuestWorker puts w back on the idle list, unless the runtime is
// closed or keeps enough; it reports whether it did.
func (r *Runtime) idleGuestWorker(w *guestWorker) bool {
	gw := &r.guests
	gw.mu.Lock()
	defer gw.mu.Unlock()
	if gw.closed || len(gw.idle) >= maxIdleGuestWorkers {
		return false
	}
	gw.idle = append(gw.idle, w)
	return true
}

// stopGuestWorkers ends the idle workers (Close); busy ones end after
// their call.
func (r *Runtime) stopGuestWorkers() {
	gw := &r.guests
	gw.mu.Lock()
	idle := gw.idle
	gw.idle, gw.closed = nil, true
	gw.mu.Unlock()
	for _, w := range idle {
		close(w.calls)
	}
}
