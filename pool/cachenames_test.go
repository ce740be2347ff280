package pool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// TestPoolNamesModulesInCache: a module the pool compiles gets, in the
// runtime's on-disk cache, the name the store has for it (a module
// uploaded with a name); one the store does not name gets none.
func TestPoolNamesModulesInCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	f := newFixtureRT(t, pool.Config{}, sandbox.Config{CacheDir: dir})
	named := putFixture(t, f.store, "echo")
	require.NoError(t, f.store.NameModule(ctx, named, "echo-uploaded.wasm"))
	unnamed := putFixture(t, f.store, "noop")
	for _, sha := range []string{named, unnamed} {
		task, _, err := f.pl.Submit(ctx, tasks.Spec{Module: sha})
		require.NoError(t, err)
		require.Equal(t, tasks.StateSucceeded, f.wait(t, task.ID).State)
	}

	// The records (internal/cachenames), read as runner cache list does.
	files, err := filepath.Glob(filepath.Join(dir, "stint-names", "*"))
	require.NoError(t, err)
	require.Len(t, files, 2, "a record per module compiled")
	names := map[string][]string{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var rec struct {
			SHA256 string   `json:"sha256"`
			Names  []string `json:"names"`
		}
		require.NoError(t, json.Unmarshal(b, &rec))
		names[rec.SHA256] = rec.Names
	}
	require.Equal(t, map[string][]string{named: {"echo-uploaded.wasm"}, unnamed: nil}, names)
}
