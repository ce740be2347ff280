package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
)

// TestEveryOutcomeHasAnExitCode: runner run and runner call exit with a
// code of their own for every outcome kind (sandbox.Kinds(), the pool's
// included), each code is used once, and runner run --help, README.md's
// exit-code table and docs/guest-abi.md's outcome table each give every
// kind its code. The kind's name with spaces for underscores ("timed
// out") is how help and README name it.
func TestEveryOutcomeHasAnExitCode(t *testing.T) {
	t.Parallel()
	help := (&app{}).runCommand().Long
	readme := exitCodeTable(t, "README.md", "Exit codes")
	abi := exitCodeTable(t, filepath.Join("docs", "guest-abi.md"), "## Outcomes")
	seen := map[int]sandbox.Kind{}
	for _, k := range sandbox.Kinds() {
		code, ok := outcomeExitCodes[k]
		require.True(t, ok, "outcome %s has no exit code", k)
		require.NotEqual(t, exitUnknownOutcome, code, "outcome %s has the unknown outcomes' code", k)
		require.NotContains(t, seen, code, "exit code %d of %s is also %s's", code, k, seen[code])
		seen[code] = k
		name := regexp.QuoteMeta(strings.ReplaceAll(string(k), "_", " "))
		require.Regexp(t, fmt.Sprintf(`(?m)(^|\s)%d  %s\b`, code, name), help,
			"runner run --help lists exit code %d as %q", code, name)
		require.Regexp(t, fmt.Sprintf(`(?m)^\| %d \| %s\b|\b%s \(%d[:)]`, code, name, name, code), readme,
			"README.md's exit-code table gives %s code %d (a row \"| %d | %s\" or \"%s (%d)\" in a row)", k, code, code, name, name, code)
		require.Regexp(t, fmt.Sprintf("(?m)^\\| `%s` \\|.*\\| %d \\|$", regexp.QuoteMeta(string(k)), code), abi,
			"docs/guest-abi.md's outcome table gives %s runner run's exit code %d", k, code)
	}
	require.Len(t, outcomeExitCodes, len(sandbox.Kinds()), "no exit code for a kind the sandbox does not have")
}

// TestUnknownOutcomeIsNotSuccess: a kind the table lacks exits with the
// documented error code, never 0.
func TestUnknownOutcomeIsNotSuccess(t *testing.T) {
	t.Parallel()
	require.Equal(t, exitInternal, outcomeExitCode(sandbox.Kind("from_a_newer_sandbox")))
	require.NotZero(t, exitUnknownOutcome)
	require.Regexp(t, fmt.Sprintf(`(?m)^\s*%d  error \(an outcome without`, exitUnknownOutcome), (&app{}).runCommand().Long)
	require.Zero(t, outcomeExitCode(sandbox.KindSucceeded))
}

// exitCodeTable is the table that follows the first line containing
// heading in the repository's file name.
func exitCodeTable(t *testing.T, name, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testwasm.RepoRoot(t), name))
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, heading)
	require.GreaterOrEqual(t, i, 0, "%s has no %q", name, heading)
	var rows []string
	for _, line := range strings.Split(s[i:], "\n")[1:] {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		} else if len(rows) > 0 {
			break
		}
	}
	require.NotEmpty(t, rows, "%s: no table after %q", name, heading)
	return strings.Join(rows, "\n")
}
