// Package rewrite turns a module's bytes into what the sandbox hands
// wazero: Prepare validates the module against the sandbox's module
// limits and rewrites it so that every guest can be stopped, its work
// counted and its call stack bounded. Only package sandbox uses it.
//
// What Prepare guarantees for a module it accepts:
//
//   - Nothing reaches wazero unchecked. Every section is decoded in full
//     (every count checked against the bytes that hold it, every function
//     body instruction by instruction, exactly as wazero v1.12.0 cuts it)
//     and held to Limits; anything outside wazero's default features is
//     refused. A refusal is an *Error.
//   - The bound, proved apart. Every unit of work is charged to the
//     instance's one countdown, an i64 global, and the countdown is tested
//     often enough that between two calls of the interrupt function
//     (InterruptModule.InterruptFunc) a guest does at most T = 4 *
//     InterruptBudget units: at the entry of every function that calls
//     (the only way to recurse) and, where a recursion or a long chain of
//     returns needs it, at its exit (the code after its calls charged
//     there: the way back up), at every loop header with loop checks on,
//     and, in a function too heavy for one charge (heavy), at every
//     segment. A unit is 4 bytes of code, and a load
//     or store, a call, a host call, memory.grow and a bulk operation weigh
//     more (classWeight). This package does not vouch for it:
//     sandbox/internal/verify proves it on the bytes Prepare produces, and
//     the sandbox runs nothing it has not proved. The count is exact: the
//     interrupt function is given what was left of the countdown that ran
//     out. (Without loop checks, wazero's own close-on-context-done tests
//     loop headers.) The sandbox's TestBoundRandomPrograms checks T on
//     random programs, and verified_internal_test.go breaks each
//     optimisation below on purpose to see the verifier refuse it.
//   - The call stack. A call that would take the estimated stack
//     (frameBytes and friends) over Limits.MaxCallStack calls
//     InterruptModule.CallStackFunc instead, which ends the guest.
//   - Nothing else changes: a module computes the same rewritten as
//     before (TestRewriteEquivalent*), its functions two indices up for
//     the two imports the rewrite adds.
//
// The output depends only on the input, the Limits, the mode and the
// benchmark switches (RedefineLoops, CallStackLimit, UnrollCopies). It
// carries Version in a custom section, and the sandbox's prepared-module
// cache keys on it: any change to the bytes Prepare produces must bump
// Version (the sandbox's TestRewriteOutputPinned pins them).
//
// A module made resumable by sandbox/internal/resume (it imports
// resume.ImportModule) gets one more change: the point that opens each of
// its call-free loops with a check moves to the loop's slow path
// (points.go), so that a pass pays nothing for being resumable.
//
// MergeDataSegments, the other export, merges a module's many small data
// segments into few (datasegments.go).
//
// How each piece of the rewrite works, which version brought it and why
// it has its shape: docs/rewrite.md. What the checks cost, and what each
// measurement decided: docs/design/stop-checks.md.
package rewrite
