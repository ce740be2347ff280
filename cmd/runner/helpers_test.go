package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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

// inputFolder makes a batch's input folder, in, in root, a fresh temporary
// directory, with a file for each of names whose content is its name, and
// returns both.
func inputFolder(t *testing.T, names ...string) (root, in string) {
	t.Helper()
	root = t.TempDir()
	in = filepath.Join(root, "in")
	require.NoError(t, os.Mkdir(in, 0o700))
	for _, name := range names {
		require.NoError(t, os.WriteFile(filepath.Join(in, name), []byte(name), 0o600))
	}
	return root, in
}
