package tasks_test

import (
	"testing"

	"github.com/stint-run/stint/internal/testutil"
)

// TestImportsNoEngine: tasks is the model every store backend and the API
// share; it must not pull in the sandbox (wazero) or the pool.
func TestImportsNoEngine(t *testing.T) {
	t.Parallel()
	testutil.RequireNoDeps(t, "github.com/stint-run/stint/tasks",
		"github.com/tetratelabs/wazero", "github.com/stint-run/stint/sandbox", "github.com/stint-run/stint/pool")
}
