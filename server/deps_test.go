package server_test

import (
	"testing"

	"github.com/stint-run/stint/internal/testutil"
)

// TestImportsNoEngine: serving the API does not build the WebAssembly
// runtime in: server names its own stats shapes (PoolStats,
// SandboxStats) rather than importing pool or sandbox.
func TestImportsNoEngine(t *testing.T) {
	t.Parallel()
	testutil.RequireNoDeps(t, "github.com/stint-run/stint/server",
		"github.com/tetratelabs/wazero", "github.com/stint-run/stint/sandbox", "github.com/stint-run/stint/pool")
}
