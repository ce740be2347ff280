package testutil

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// RequireNoDeps fails t if package pkg depends, directly or not, on a
// package whose path starts with one of banned (go list -deps); it skips
// where no go command is in PATH.
func RequireNoDeps(t *testing.T, pkg string, banned ...string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			require.False(t, strings.HasPrefix(dep, b), "%s depends on %s", pkg, dep)
		}
	}
}
