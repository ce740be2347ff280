package pool

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// hourCompiles is the sandbox runtime with a compilation that takes an
// hour of the pool's clock.
type hourCompiles struct {
	*sandbox.Runtime
	clock *atomic.Int64 // the pool's clock, ns since the epoch
}

func (h hourCompiles) Compile(ctx context.Context, wasm []byte) (*sandbox.Module, error) {
	h.clock.Add(int64(time.Hour))
	return h.Runtime.Compile(ctx, wasm)
}

// TestObserveLeavesCompilationOut: the average attempt duration the pool
// sizes its claims ahead by (claimAhead) does not count the compilation of
// a module: after a first attempt whose module took an hour to compile,
// the average is under an hour, so short tasks are still claimed ahead.
func TestObserveLeavesCompilationOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	clock := new(atomic.Int64)
	clock.Store(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Add(int64(time.Microsecond))) }
	sha := putFixture(t, store, "noop")
	task, _, err := store.Submit(ctx, tasks.Spec{Module: sha})
	require.NoError(t, err)
	p, err := New(store, hourCompiles{rt, clock}, Config{Workers: 1, Poll: time.Millisecond, Now: now})
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	defer func() { require.NoError(t, p.Stop(ctx)) }()
	testutil.WaitFor(t, "the task to end", func() bool {
		got, err := store.Get(ctx, task.ID)
		return err == nil && got.State == tasks.StateSucceeded && p.avgRun.Load() != 0
	})
	avg := time.Duration(p.avgRun.Load())
	require.Less(t, avg, time.Hour, "the average counts the compilation")
	require.Positive(t, p.claimAhead(), "no claims ahead after a compilation")
}
