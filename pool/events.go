package pool

import (
	"time"

	"github.com/stint-run/stint/tasks"
)

// EventKind is what happened to an attempt.
type EventKind string

// The events of an attempt, in order: started, checkpointed (any number
// of times), ended.
const (
	// EventStarted: a worker started the attempt.
	EventStarted EventKind = "started"
	// EventCheckpointed: the guest's checkpoint is durably stored.
	EventCheckpointed EventKind = "checkpointed"
	// EventSnapshotted: a snapshot of the guest is durably stored (Bytes,
	// Took: encoding and writing it).
	EventSnapshotted EventKind = "snapshotted"
	// EventEnded: the attempt's end is recorded in the store; State and
	// Attempt say how. An attempt whose result was dropped (its lease taken
	// over, or the store refused it past the stop) has no ended event.
	EventEnded EventKind = "ended"
)

// Event is something that happened to one attempt this pool ran
// (Config.OnEvent).
type Event struct {
	Kind   EventKind
	TaskID int64
	// Number is the attempt number (the lease's token).
	Number int
	// Queue is the task's queue (EventStarted and EventEnded).
	Queue string
	// Tenant is the task's tenant (EventStarted and EventEnded).
	Tenant string
	// Waited is how long the task was ready before this attempt started
	// (EventStarted only): from its run-at time (its submission, or the
	// end of its retry backoff) to the start, 0 if it started early.
	Waited time.Duration
	// State is the task's state after the attempt (EventEnded only):
	// succeeded, queued (to run again), dead or cancelled.
	State tasks.State
	// Attempt is the attempt as recorded (EventEnded only): outcome, exit
	// code, reason, whether it counted, the tail of its stderr.
	Attempt *tasks.Attempt
	// Result is the result as stored (EventEnded with State succeeded
	// only): the guest's stdout, so that a subscriber need not read it back
	// from the store. Shared with whoever else receives the event: read it,
	// never modify it.
	Result []byte
	// Bytes and Took: an EventSnapshotted's encoded size and the time its
	// encoding and write took.
	Bytes int64
	Took  time.Duration
}

// emit hands an event to Config.OnEvent.
func (p *Pool) emit(e Event) {
	if p.cfg.OnEvent != nil {
		p.cfg.OnEvent(e)
	}
}
