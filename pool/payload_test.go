package pool_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestPoolReadsPayloadsLeftOutOfClaims: an input and a checkpoint over
// tasks.ClaimInline are not returned by the claim; the pool reads them when
// the attempt starts, and the guest sees them whole.
func TestPoolReadsPayloadsLeftOutOfClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Exclusive: true})
	require.NoError(t, err)
	defer store.Close()
	input, checkpoint := make([]byte, 3*tasks.ClaimInline), make([]byte, 2*tasks.ClaimInline+7)
	_, _ = rand.Read(input)
	_, _ = rand.Read(checkpoint)

	// The checkpointed task's earlier attempt, made by hand: claimed, a
	// large checkpoint saved, interrupted.
	cpSha := putFixture(t, store, "cpecho")
	resumed, _, err := store.Submit(ctx, tasks.Spec{Module: cpSha})
	require.NoError(t, err)
	cl, err := store.Claim(ctx, tasks.ClaimRequest{Owner: "earlier", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.NoError(t, store.SaveCheckpoint(ctx, cl[0].Lease, checkpoint))
	errs, err := store.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])

	echoSha := putFixture(t, store, "echo")
	echoed, _, err := store.Submit(ctx, tasks.Spec{Module: echoSha, Input: input})
	require.NoError(t, err)

	rt, err := sandbox.New(ctx, sandbox.Config{})
	require.NoError(t, err)
	defer rt.Close(ctx)
	pl, err := pool.New(store, rt, pool.Config{Workers: 2, Poll: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() {
		stopCtx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		require.NoError(t, pl.Stop(stopCtx))
	}()
	waitCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()

	done, err := pl.Wait(waitCtx, echoed.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.True(t, bytes.Equal(input, done.Result), "the guest read the whole input")

	done, err = pl.Wait(waitCtx, resumed.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.True(t, bytes.Equal(checkpoint, done.Result), "the guest resumed from the whole checkpoint")
	atts, err := store.Attempts(ctx, resumed.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.True(t, atts[1].Resumed)
}
