// Package verify proves the stop bound on a rewritten module, apart from
// the rewrite that made it: it reads the bytes wazero will compile, not
// the rewrite's notes, and imports nothing of the rewrite but the binary
// decoder (sandbox/internal/wasmbin). Module refuses anything it cannot
// prove, so the rewrite may optimise freely as long as its output passes.
//
// The property, for a budget B (the rewrite's InterruptBudget) and
// T = 4B: between two calls of the interrupt function
// (stint:sandbox.interrupt), a guest does at most T units of work, where
// work is this package's own cost model (cost: a unit per 4 bytes of
// code, and on top, by class, a load or store 1, a call 32, a host call
// 224 more, memory.grow 256, a bulk operation 16), counted on every
// instruction but the countdown's own.
//
// How: a dataflow over each function's control flow (every branch, both
// arms of every if, br_table, early returns, traps), composed over the
// call graph with a summary per function (the heaviest path from its
// entry to its first test, through it untested, and from its last test
// to a return) to a fixpoint, recursion included; a call_indirect may
// reach every function of its signature that an element segment or a
// ref.func names (so tables changed at run time are covered), and every
// function is checked as an entry (exports, the start function, a
// plugin's calls). It checks, with W = B, D = B and R = 2B:
//
//   - the countdown (the module's second-to-last global, and a local that
//     caches it) is only ever lowered by a constant or non-negative charge,
//     refilled (to at most R) next to a call of the interrupt function,
//     and written back before every call of a function that reads it;
//   - a test is a branch on "countdown < 1" (or "(countdown | x) < 0");
//     on the side where it passes, no path since has done more than W
//     units (so every loop, recursion included, passes a test);
//   - work never runs more than D units ahead of the charges since the
//     last interrupt (in checks mode: everything is charged before it runs,
//     within D).
//
// Since a passing test means the countdown is not below 0, and it is never
// refilled above R, the work between two interrupts is at most R + D + W.
// In wazero mode (no loop checks) a loop header, where wazero's own
// close-on-context-done stops the guest, counts as an interrupt.
//
// What it trusts: its own code (about 1,000 lines), wazero's compiler, the
// host functions (they neither re-enter the guest nor change the
// countdown), and the size-proportional part of bulk operations, which
// the rewrite's helpers charge dynamically (n/16) and split into pieces
// (sandbox TestBulk*). How it is tested: sandbox/internal/rewrite's
// mutation tests break each optimisation of the rewrite and expect a
// refusal, and the sandbox's TestBoundRandomPrograms runs random programs
// whose rewrite it accepts and counts their work between interrupts.
package verify
