package pool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// heldClaims is the real SQLite store whose Claim, once it has claimed
// something, waits for release before it returns: a claim committed in
// the store and not yet back in the pool.
type heldClaims struct {
	tasks.Store
	claimed chan struct{}
	release chan struct{}
}

func (h *heldClaims) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	cs, err := h.Store.Claim(ctx, req)
	if len(cs) > 0 {
		h.claimed <- struct{}{}
		<-h.release
	}
	return cs, err
}

// TestIdleWaitsForClaimUnderWay: Idle is not reported while a claim the
// store has committed is not yet registered by the pool (CI once saw a
// stopped pool report Idle while the store said its task ran: a claim
// beside the completion that emptied the pool), and is once the claimed
// task has ended.
func TestIdleWaitsForClaimUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	h := &heldClaims{Store: store, claimed: make(chan struct{}), release: make(chan struct{})}
	pl, err := pool.New(h, rt, pool.Config{Workers: 1})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() { require.NoError(t, pl.Stop(ctx)) }()

	id := submitNoops(t, store, 1)[0]
	pl.Wake()
	<-h.claimed // the store says the task runs; the pool has not got it yet
	idle := pl.Idle()
	select {
	case <-idle:
		close(h.release) // so that Stop ends
		t.Fatal("Idle reported while a claim was under way")
	default:
	}
	close(h.release)
	<-idle
	got, err := store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, got.State, "Idle once the claimed task has ended")
}
