package tasks

// State is where a task stands in its life cycle.
//
//	queued ──claim──▶ running ──exit 0──────────────▶ succeeded
//	  (shown claimed until a worker begins it: Task.Shown)
//	  ▲  ▲               │ ──fail/trap/timeout──▶ (attempts left? queued with backoff : dead)
//	  │  └──interrupted──┘   (shutdown, cooperative or forced: attempt not counted, checkpoint kept)
//	  └──retry (manual)── dead / cancelled          running ──cancel──▶ cancelled
type State string

// The task states. A failed attempt with attempts left and an interrupted
// attempt both put the task back in StateQueued (with a later RunAt for a
// backoff); the attempt history tells them apart.
const (
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateSucceeded State = "succeeded"
	StateDead      State = "dead"
	StateCancelled State = "cancelled"
)

// StateClaimed: a running task no worker began (Task.BeganAt zero), as shown,
// counted and listed (Task.Shown, TaskCounts, a List's filter: StateRunning
// has both); stored as StateRunning.
const StateClaimed State = "claimed"

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	switch s {
	case StateQueued, StateRunning, StateSucceeded, StateDead, StateCancelled:
		return true
	}
	return false
}

// Terminal reports whether no worker will run a task in state s again
// (without a manual retry).
func (s State) Terminal() bool {
	return s == StateSucceeded || s == StateDead || s == StateCancelled
}
