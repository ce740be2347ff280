package pool

import (
	"slices"
	"strings"
	"time"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// SandboxSpec is a task's spec as the sandbox runs it: the one conversion
// from the task model's shapes (tasks.Spec, tasks.Limits, tasks.Mount) to
// the sandbox's (package sandbox imports nothing of this module). The pool
// runs every attempt through it, and `runner run` its one task. mounts are
// the spec's mounts as granted (tasks.OpenMounts): the sandbox mounts their
// open directories, never their paths, and the caller closes them once the
// run is over. The caller sets what belongs to the run (Stdin, Checkpoint,
// Stop, the callbacks).
func SandboxSpec(name string, s tasks.Spec, mounts []tasks.GrantedMount) sandbox.Spec {
	spec := sandbox.Spec{Name: name, Input: s.Input, Args: s.Args, Env: s.Env, Limits: SandboxLimits(s.Limits),
		Export: s.Export, Labels: s.Labels} // Export: a plugin call instead of _start (docs/plugins.md)
	for _, m := range mounts {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{HostPath: m.HostPath, GuestPath: m.GuestPath, Writable: m.Writable, Snapshots: m.Snapshots, Dir: m.Dir})
	}
	return spec
}

// SandboxLimits is a task's limits as the sandbox takes them; a zero field
// stays zero (the runtime's default).
func SandboxLimits(l tasks.Limits) sandbox.Limits {
	return sandbox.Limits{
		MemoryBytes:   l.MemoryBytes,
		Timeout:       l.Timeout,
		MaxStdout:     l.Stdout,
		MaxStderr:     l.Stderr,
		MaxCheckpoint: l.Checkpoint,
		MaxDiskBytes:  l.DiskBytes,
		MaxDiskFiles:  l.DiskFiles,
		Work:          l.Work,
	}
}

// AttemptOf is how an attempt records a sandbox outcome: its kind, exit
// code, message and stderr tail (tasks.StderrTail, ending with TrapReport
// for a trap, as wazero's CLI writes it to stderr), between started and
// ended. The pool adds what only it knows (the task, the attempt's number
// and owner, whether it is counted or resumed); `runner run --json` prints
// it as `runner tasks show --json` prints a queued task's attempt.
func AttemptOf(out *sandbox.Outcome, started, ended time.Time) tasks.Attempt {
	return tasks.Attempt{
		StartedAt: started, EndedAt: ended,
		Outcome: string(out.Kind), ExitCode: int(out.ExitCode), Reason: out.Message,
		Stderr: stderrTail(out), Work: out.WorkUnits,
	}
}

// maxTrapReport caps what a trap's report takes of an attempt's stderr
// tail: the innermost frames come first and are kept.
const maxTrapReport = tasks.MaxStderrTail / 2

// stderrTail is an attempt's stderr tail: the guest's, then its trap's
// report, whole up to maxTrapReport.
func stderrTail(out *sandbox.Outcome) string {
	report := TrapReport(out)
	if report == "" {
		return tasks.StderrTail(out.Stderr)
	}
	if len(report) > maxTrapReport {
		report = strings.ToValidUTF8(report[:maxTrapReport], "") + "\n\t...\n"
	}
	guest := out.Stderr
	if n := tasks.MaxStderrTail - len(report); len(guest) > n {
		guest = guest[len(guest)-n:]
	}
	if len(guest) > 0 && guest[len(guest)-1] != '\n' {
		report = "\n" + report
	}
	return tasks.StderrTail(append(slices.Clip(guest), report...))
}

// TrapReport is what wazero's CLI writes to stderr when a guest traps,
// "wasm error: MESSAGE", then "wasm stack trace:" and a line per frame
// (function names from the module's name section), innermost first; ""
// for an outcome with no stack.
func TrapReport(out *sandbox.Outcome) string {
	if out.Stack == "" {
		return ""
	}
	return "wasm error: " + out.Message + "\nwasm stack trace:\n\t" + strings.TrimSpace(out.Stack) + "\n"
}
