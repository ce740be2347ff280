package pool

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks/sqlite"
)

// StoreAndRuntime is storeAndRuntime, for the tests of package pool_test.
var StoreAndRuntime = storeAndRuntime

// storeAndRuntime opens a fresh SQLite store and a sandbox runtime, closed
// when t ends, for tests that build their own pool around the store.
func storeAndRuntime(t *testing.T) (*sqlite.Store, *sandbox.Runtime) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	rt, err := sandbox.New(ctx, sandbox.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })
	return store, rt
}
