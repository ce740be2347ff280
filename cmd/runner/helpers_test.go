package main

import (
	"path/filepath"
	"testing"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
)

// The helpers of the in-process tests. The end-to-end tests, which run the
// built binary, are in e2e/ with helpers of their own under the same names
// (the fixtures both use are shared: see below).

// fixture is the path of the .wasm fixture name (internal/testwasm/wat).
func fixture(t *testing.T, name string) string {
	return filepath.Join(testwasm.RepoRoot(t), "internal", "testwasm", "wat", name+".wasm")
}

// The fixtures the in-process and end-to-end tests share (internal/testutil's
// ReadFile and TaskID, internal/testwasm's DataDir, internal/teststore's
// Open and Queue), by the names the tests use.
var (
	readFile      = testutil.ReadFile
	dataDir       = testwasm.DataDir
	openTestStore = teststore.Open
	queue         = teststore.Queue
	mustID        = testutil.TaskID
)
