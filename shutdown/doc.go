// Package shutdown stops a process in phases, within one time budget, without
// losing work.
//
// A [Coordinator] stops its registered [Workload]s (worker pools, servers:
// anything that runs units of work) and then runs cleanup [Hook]s by
// priority. It knows nothing of what the work is; a host application can use
// it alone.
//
// # Phases
//
//	  Shutdown(ctx), or the first SIGTERM/SIGINT (HandleSignals)
//	    |
//	    v
//	+----------+  Ready() turns false; StopIntake() on every workload
//	| 1 intake |
//	+----------+
//	    |
//	    v
//	+----------+  wait for every Idle(), until Drain (counted from t0)  --idle--+
//	| 2 drain  |                                                               |
//	+----------+                                                               |
//	    | time up                                                              |
//	    v                                                                      |
//	+----------+  RequestStop() on every workload, wait up to Cancel   --idle--+
//	| 3 cancel |                                                               |
//	+----------+                                                               |
//	    | time up     <== Escalate(), a second signal, or ctx done             |
//	    v                 during 1-3 jump straight here                        |
//	+----------+  ForceStop() on every workload, wait up to ForceWait          |
//	| 4 force  |                                                               |
//	+----------+                                                               |
//	    |<---------------------------------------------------------------------+
//	    v
//	+----------+  hooks by Priority (lower first), each with its own timeout;
//	| 5 hooks  |  a failing or overrunning hook is reported, the next still runs
//	+----------+
//	    |
//	    v
//	  Report logged, Done() closed
//
// A phase that is not needed is skipped and marked so in the [Report]: when
// every workload goes idle during the drain, phases 3 and 4 do not run.
//
// # Budget
//
// All of it fits in Config.Budget (default 25s, under Kubernetes' 30s grace
// period). At the start t0 the coordinator computes the end, t0+Budget, and
// every wait is clipped so that the later phases keep their share:
//
//	t0                                                                  t0+Budget
//	|-- 1+2: Drain --|------- 3: Cancel -------|- 4: ForceWait -|- 5: hooks -...-|
//	                                                             >= HookTimeout
//
// [Config.Validate] refuses a config whose Drain + Cancel + ForceWait +
// HookTimeout exceed the budget. ForceWait (default 1s) is the reserve for
// the forced stop: how long phase 4 waits for forced work to end and be
// recorded. HookTimeout (default 2s) is both the timeout of a hook without
// its own and the least time phase 5 gets; when the workloads stop early the
// hooks get the rest of the budget, never more.
//
// The coordinator never blocks beyond the budget on code it calls: workload
// methods run on goroutines of their own (one call at a time per workload,
// in phase order) and an overrunning hook is abandoned after its context is
// cancelled. Time is read from a [Clock], so tests drive a stop with a fake
// clock instead of sleeping.
//
// # Report
//
// Workloads expose cumulative counters ([Stats]); the coordinator reads them
// at every phase boundary and reports, per phase and in total, how many
// units finished on their own, stopped cooperatively, were forced, and how
// many were still running after the forced stop (NotEnded). [Report.Log]
// writes it as one structured line plus one line per failed hook;
// [Report.Err] turns failures into an error, for an exit code.
//
// # Signals
//
// [Coordinator.HandleSignals] wires SIGTERM and SIGINT: the first starts the
// stop, a second one escalates it to the forced stop.
//
// # Checklist
//
// Is a process ready to be stopped?
//
//   - Signals caught: HandleSignals (or your own handler calling Shutdown).
//   - Intake stops: every source of new work is a Workload whose StopIntake
//     really stops it, and the readiness probe reports Ready.
//   - Running work can finish, then be asked to stop: units check a stop
//     flag set by RequestStop, and save their state before they return.
//   - Forced work is recorded: ForceStop ends what is left, and whatever
//     records it as interrupted (to be retried) finishes within ForceWait.
//   - Resources released: every connection, file and store is closed by a
//     hook, in priority order (flush before close).
//   - Budget under the orchestrator's grace period: Kubernetes
//     terminationGracePeriodSeconds (default 30s), docker stop --time or
//     compose stop_grace_period (default only 10s: raise it to 30s for the
//     default 25s budget), systemd TimeoutStopSec (default 90s).
package shutdown
