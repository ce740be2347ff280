package shutdown

import "strconv"

// Phase is a step of the stop. The numbered phases run in order; Escalate,
// or a cancelled Shutdown context, jumps from 1, 2 or 3 to 4.
type Phase int

// The phases, in order. PhaseNone is before the stop, PhaseDone after it.
const (
	// PhaseNone: the stop has not started; Ready is true.
	PhaseNone Phase = iota
	// PhaseIntake (1): readiness goes false, StopIntake on every workload.
	PhaseIntake
	// PhaseDrain (2): running work may finish, up to Config.Drain.
	PhaseDrain
	// PhaseCancel (3): RequestStop on every workload, wait up to Config.Cancel.
	PhaseCancel
	// PhaseForce (4): ForceStop on every workload, wait up to Config.ForceWait.
	PhaseForce
	// PhaseHooks (5): cleanup hooks by priority, each with its own timeout.
	PhaseHooks
	// PhaseDone: the stop finished; Done is closed and the report is ready.
	PhaseDone
)

// String returns the phase's short name ("intake", "drain", "cancel",
// "force", "hooks"; "none" and "done" before and after the stop).
func (p Phase) String() string {
	switch p {
	case PhaseNone:
		return "none"
	case PhaseIntake:
		return "intake"
	case PhaseDrain:
		return "drain"
	case PhaseCancel:
		return "cancel"
	case PhaseForce:
		return "force"
	case PhaseHooks:
		return "hooks"
	case PhaseDone:
		return "done"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}
