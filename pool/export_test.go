package pool

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// StoreAndRuntime and PutFixture are storeAndRuntime and putFixture, for
// the tests of package pool_test.
var (
	StoreAndRuntime = storeAndRuntime
	PutFixture      = putFixture
)

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

// putFixture stores the .wat fixture name's module in store and returns
// its hash.
func putFixture(t testing.TB, store tasks.Store, name string) string {
	t.Helper()
	sha, err := store.PutModule(context.Background(), wat.MustLoad(name))
	require.NoError(t, err)
	return sha
}
