package main

import "github.com/stint-run/stint/sandbox"

// outcomeExitCodes is the one table of the exit codes of `runner run` and
// `runner call` for each outcome kind (sandbox.Kinds, which owns them all,
// the pool's too). `runner run --help`, README.md's exit-code table and
// docs/guest-abi.md's outcome table list the same codes:
// TestEveryOutcomeHasAnExitCode fails when a kind lacks its code or its
// line in any of them.
var outcomeExitCodes = map[sandbox.Kind]int{
	sandbox.KindSucceeded:        0,
	sandbox.KindFailed:           10,
	sandbox.KindTrapped:          11,
	sandbox.KindForced:           12,
	sandbox.KindTimedOut:         13,
	sandbox.KindMemoryLimit:      14,
	sandbox.KindOutputLimit:      15,
	sandbox.KindInvalidModule:    16,
	sandbox.KindBadImport:        17,
	sandbox.KindWorkLimit:        18,
	sandbox.KindUnstoppable:      19,
	sandbox.KindRefused:          20, // queue only: runner run does not end in it today
	sandbox.KindInputUnavailable: 21, // queue only
	sandbox.KindSuspended:        22, // runner run --snapshot
	sandbox.KindInterrupted:      75,
}

// exitUnknownOutcome is the exit code of an outcome kind the table lacks
// (a bug: the test above fails first): an error, never 0 (success).
const exitUnknownOutcome = exitInternal

// outcomeExitCode is the exit code of an outcome of kind k.
func outcomeExitCode(k sandbox.Kind) int {
	if code, ok := outcomeExitCodes[k]; ok {
		return code
	}
	return exitUnknownOutcome
}
