package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// The helpers of the in-process tests. The end-to-end tests, which run the
// built binary, are in e2e/ with helpers of their own under the same names.

// fixture is the path of the .wasm fixture name (internal/testwasm/wat).
func fixture(t *testing.T, name string) string {
	return filepath.Join(testwasm.RepoRoot(t), "internal", "testwasm", "wat", name+".wasm")
}

// dataDir is a fresh data directory whose compilation cache is the one all
// test packages share, so Go guests compile once per machine.
func dataDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(testwasm.CompileCacheDir(t), filepath.Join(dir, "cache")))
	return dir
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func openTestStore(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "stint.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	var id int64
	_, err := fmt.Sscan(strings.TrimSpace(s), &id)
	require.NoError(t, err, "task id from %q", s)
	return id
}

// queue stores a module and submits one task for it, straight into the
// store, and returns the task id.
func queue(t *testing.T, s *sqlite.Store, wasmPath string, spec tasks.Spec) int64 {
	t.Helper()
	ctx := context.Background()
	wasm := readFile(t, wasmPath)
	sha, err := s.PutModule(ctx, wasm)
	require.NoError(t, err)
	spec.Module = sha
	task, _, err := s.Submit(ctx, spec)
	require.NoError(t, err)
	return task.ID
}
