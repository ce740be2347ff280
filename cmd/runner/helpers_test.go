package main

import (
	"path/filepath"
	"testing"

	"github.com/stint-run/stint/internal/testwasm"
)

// The helpers of the in-process tests. The end-to-end tests, which run the
// built binary, are in e2e/ with helpers of their own under the same names;
// the fixtures both use are internal/testutil's, internal/testwasm's and
// internal/teststore's.

// fixture is the path of the .wasm fixture name (internal/testwasm/wat).
func fixture(t *testing.T, name string) string {
	return filepath.Join(testwasm.RepoRoot(t), "internal", "testwasm", "wat", name+".wasm")
}
