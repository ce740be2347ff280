package stint_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/wasm-examples/wat"
)

const bound = 60 * time.Second

func openRunner(t *testing.T, cfg stint.Config) *stint.Runner {
	t.Helper()
	if cfg.Store == "" {
		cfg.Store = filepath.Join(t.TempDir(), "stint.db")
	}
	r, err := stint.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

// TestSubscribeNeverBlocksThePool: a subscriber that reads nothing, with
// a buffer of one, does not hold up the pool: every task ends, and the
// events that found the buffer full are counted as dropped.
func TestSubscribeNeverBlocksThePool(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{EventBuffer: 1})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	events, _ := r.Subscribe()
	require.NoError(t, r.Start(ctx))
	sha, err := r.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	var ids []int64
	for range 5 {
		task, _, err := r.Submit(ctx, tasks.Spec{Module: sha})
		require.NoError(t, err)
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		task, err := r.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tasks.StateSucceeded, task.State)
	}
	require.Equal(t, stint.EventStarted, (<-events).Kind)
	require.Positive(t, r.Dropped())
}

// TestCloseEndsSubscriptions: Close closes every subscription's channel;
// one taken after Close is closed at once.
func TestCloseEndsSubscriptions(t *testing.T) {
	t.Parallel()
	r, err := stint.Open(context.Background(), stint.Config{Store: filepath.Join(t.TempDir(), "stint.db")})
	require.NoError(t, err)
	events, _ := r.Subscribe()
	require.NoError(t, r.Close(context.Background()))
	_, open := <-events
	require.False(t, open)
	late, _ := r.Subscribe()
	_, open = <-late
	require.False(t, open)
	require.NoError(t, r.Close(context.Background()), "twice")
}

// TestRunnerUnderACoordinator: a Runner is the coordinator's workload and
// its hooks close it; a second Open of the SQLite store is refused while
// the first holds it.
func TestRunnerUnderACoordinator(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	ctx := context.Background()
	r, err := stint.Open(ctx, stint.Config{Store: "sqlite:" + path})
	require.NoError(t, err)
	_, err = stint.Open(ctx, stint.Config{Store: path})
	require.ErrorIs(t, err, tasks.ErrLocked)

	coord, err := shutdown.New(shutdown.Config{}, shutdown.Options{})
	require.NoError(t, err)
	require.NoError(t, coord.Register(r))
	for _, h := range r.Hooks() {
		require.NoError(t, coord.AddHook(h))
	}
	require.NoError(t, r.Start(ctx))
	coord.Shutdown(ctx)
	<-coord.Done()
	again, err := stint.Open(ctx, stint.Config{Store: path})
	require.NoError(t, err, "the store hook released the store")
	require.NoError(t, again.Close(ctx))
}
