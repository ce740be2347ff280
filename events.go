package stint

import (
	"github.com/stint-run/stint/pool"
)

// Event is something that happened to an attempt the Runner ran: it
// started, checkpointed, or ended (with the task's state after it and the
// attempt as recorded: outcome, exit code, reason, stderr tail).
type Event = pool.Event

// The kinds of Event.
const (
	EventStarted      = pool.EventStarted
	EventCheckpointed = pool.EventCheckpointed
	EventEnded        = pool.EventEnded
)

// subscription is one Subscribe.
type subscription struct {
	ch chan Event
}

// Subscribe returns a channel that gets the events of every attempt this
// Runner runs from now on, and the func that ends the subscription (and
// closes the channel; Close ends every subscription). The pool never
// waits for a subscriber: an event that finds the channel's buffer
// (Config.EventBuffer) full is dropped and counted (Dropped). A reader
// that must not miss an end waits on the task instead (Wait), or reads
// the store.
func (r *Runner) Subscribe() (<-chan Event, func()) {
	s := &subscription{ch: make(chan Event, r.cfg.EventBuffer)}
	r.subsMu.Lock()
	if r.subs == nil { // closed
		r.subsMu.Unlock()
		close(s.ch)
		return s.ch, func() {}
	}
	r.subs[s] = struct{}{}
	r.subsMu.Unlock()
	return s.ch, func() { r.unsubscribe(s) }
}

func (r *Runner) unsubscribe(s *subscription) {
	r.subsMu.Lock()
	defer r.subsMu.Unlock()
	if _, ok := r.subs[s]; ok {
		delete(r.subs, s)
		close(s.ch)
	}
}

// Dropped is how many events were dropped because a subscriber's buffer
// was full.
func (r *Runner) Dropped() uint64 {
	r.subsMu.Lock()
	defer r.subsMu.Unlock()
	return r.dropped
}

// publish hands an event to every subscriber without blocking.
func (r *Runner) publish(e Event) {
	r.subsMu.Lock()
	defer r.subsMu.Unlock()
	for s := range r.subs {
		select {
		case s.ch <- e:
		default:
			r.dropped++
		}
	}
}

// closeSubscriptions ends every subscription; later ones get a closed
// channel.
func (r *Runner) closeSubscriptions() {
	r.subsMu.Lock()
	defer r.subsMu.Unlock()
	for s := range r.subs {
		close(s.ch)
	}
	r.subs = nil
}
