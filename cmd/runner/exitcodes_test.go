package main

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// TestEveryOutcomeHasAnExitCode: runner run and runner call exit with a
// code of their own for every outcome kind the sandbox knows, each code
// is used once, and runner run --help lists each.
func TestEveryOutcomeHasAnExitCode(t *testing.T) {
	t.Parallel()
	help := (&app{}).runCommand().Long
	seen := map[int]sandbox.Kind{}
	for _, k := range sandbox.Kinds {
		code, ok := outcomeExitCodes[k]
		require.True(t, ok, "outcome %s has no exit code", k)
		require.NotContains(t, seen, code, "exit code %d of %s is also %s's", code, k, seen[code])
		seen[code] = k
		require.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)(^|\s)%d  \S`, code)), help, "runner run --help lists exit code %d (%s)", code, k)
	}
	require.Len(t, outcomeExitCodes, len(sandbox.Kinds), "no exit code for a kind the sandbox does not have")
}
