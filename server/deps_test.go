package server_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNoEngine: serving the API does not build the WebAssembly
// runtime in: server names its own stats shapes (PoolStats,
// SandboxStats) rather than importing pool or sandbox.
func TestImportsNoEngine(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/stint-run/stint/server").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/tetratelabs/wazero", "github.com/stint-run/stint/sandbox", "github.com/stint-run/stint/pool"} {
			require.False(t, strings.HasPrefix(dep, banned), "server depends on %s", dep)
		}
	}
}
