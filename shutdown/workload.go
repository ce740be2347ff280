package shutdown

// Workload is something that runs units of work and is stopped in phases 1
// to 4: a worker pool, an HTTP server, a consumer loop. Every registered
// workload goes through the phases together.
//
// The coordinator calls StopIntake, RequestStop and ForceStop on a workload
// one at a time, in that order, each from a goroutine of its own; it does
// not wait for a call beyond its phase's deadline, so a call that blocks
// only delays that workload's later calls and never the stop. The three
// methods should only signal and return. Idle and Stats are called from the
// coordinator's goroutine while those calls may run: they must be safe for
// concurrent use and must not block.
type Workload interface {
	// StopIntake (phase 1) makes the workload take no new work. Work
	// already running goes on.
	StopIntake()
	// Idle returns a channel that is closed once nothing is running, and
	// stays closed. It is called many times; it may return the same
	// channel each time.
	Idle() <-chan struct{}
	// RequestStop (phase 3) asks every running unit to stop cooperatively
	// (save its state and return).
	RequestStop()
	// ForceStop (phase 4) ends every running unit now.
	ForceStop()
	// Stats returns the workload's counters, read at every phase boundary
	// for the report.
	Stats() Stats
}

// Stats are a workload's counters. Running is the number running now; the
// other three are cumulative (they only grow, from any starting value) and
// the coordinator reports how much each grew in each phase. A unit that
// ends is counted in exactly one of Finished, Interrupted and Forced.
type Stats struct {
	// Running is the number of units running now.
	Running int
	// Finished counts units that ended on their own, whatever the outcome
	// (success or failure), not because a stop was asked.
	Finished int
	// Interrupted counts units that ended because RequestStop asked them to
	// (a cooperative stop: they saved their state and returned).
	Interrupted int
	// Forced counts units that ForceStop ended.
	Forced int
}

func (s Stats) add(o Stats) Stats {
	return Stats{
		Running:     s.Running + o.Running,
		Finished:    s.Finished + o.Finished,
		Interrupted: s.Interrupted + o.Interrupted,
		Forced:      s.Forced + o.Forced,
	}
}
