package tasks_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNoEngine: tasks is the model every store backend and the API
// share; it must not pull in the sandbox (wazero) or the pool.
func TestImportsNoEngine(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/stint-run/stint/tasks").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/tetratelabs/wazero", "github.com/stint-run/stint/sandbox", "github.com/stint-run/stint/pool"} {
			require.False(t, strings.HasPrefix(dep, banned), "tasks depends on %s", dep)
		}
	}
}
