package pool_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// heldCompletions is a store whose first Complete waits until release is
// closed; it counts the Completes under way at once (the most in most)
// and signals the second one on second.
type heldCompletions struct {
	tasks.Store
	release chan struct{}
	second  chan struct{}
	calls   atomic.Int32
	now     atomic.Int32
	most    atomic.Int32
}

func (s *heldCompletions) Complete(ctx context.Context, cs []tasks.Completion) ([]error, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	switch s.calls.Add(1) {
	case 1:
		<-s.release
	case 2:
		close(s.second)
	}
	return s.Store.Complete(ctx, cs)
}

// TestPoolClaimsAndCompletesWhileAWriteWaits: while the write of a batch
// of completions waits for the store (its commit), the pool claims and
// runs more tasks and writes their completions beside it, never more than
// two writes at once; once the first write returns, every task has
// succeeded at its first attempt. A pool whose claims or completions
// waited for the write before them would never start the second.
func TestPoolClaimsAndCompletesWhileAWriteWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	ids := submitNoops(t, store, 40)
	s := &heldCompletions{Store: store, release: make(chan struct{}), second: make(chan struct{})}
	pl, err := pool.New(s, rt, pool.Config{Workers: 2, ClaimBatch: 4, Poll: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pl.Start(ctx))
	defer func() { require.NoError(t, pl.Stop(ctx)) }()
	select {
	case <-s.second:
	case <-time.After(bound):
		t.Fatal("no completion was written while the first one waited")
	}
	close(s.release)
	for _, id := range ids {
		waitSucceeded(t, pl, id)
		task, err := store.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, 1, task.Attempt, "task %d", id)
	}
	require.LessOrEqual(t, s.most.Load(), int32(2), "completion writes at once")
}

// flakyCompletions is a store whose Complete waits a random while and
// fails at random, before the write (nothing written) or after it (the
// write committed, its reply lost). It claims with completions
// (tasks.CompletingClaimer), so that the pool's claims go side by side,
// and checks at each claim that the pool holds no more than its bound.
type flakyCompletions struct {
	tasks.Store
	mu    sync.Mutex
	r     *rand.Rand
	pl    atomic.Pointer[pool.Pool]
	bound int // 2 x (Workers + ClaimBatch)
	over  atomic.Int32
}

func (s *flakyCompletions) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	s.check()
	return s.Store.Claim(ctx, req)
}

func (s *flakyCompletions) CompleteAndClaim(ctx context.Context, cs []tasks.Completion, req tasks.ClaimRequest) ([]error, []tasks.Claimed, error) {
	s.check()
	errs, err := s.Complete(ctx, cs)
	if err != nil {
		return errs, nil, err
	}
	claimed, _ := s.Store.Claim(ctx, req)
	return errs, claimed, nil
}

// check counts a claim made while the pool held more than its bound.
func (s *flakyCompletions) check() {
	if pl := s.pl.Load(); pl != nil && pl.Stats().Running > s.bound {
		s.over.Add(1)
	}
}

func (s *flakyCompletions) Complete(ctx context.Context, cs []tasks.Completion) ([]error, error) {
	s.mu.Lock()
	wait, fate := time.Duration(s.r.IntN(2000))*time.Microsecond, s.r.IntN(10)
	s.mu.Unlock()
	time.Sleep(wait) // a slow commit: the other writer goes on meanwhile
	switch fate {
	case 0:
		return nil, errors.New("connection reset (simulated, before the write)")
	case 1:
		_, _ = s.Store.Complete(ctx, cs)
		return nil, errors.New("connection reset (simulated, after the write)")
	}
	return s.Store.Complete(ctx, cs)
}

// TestPoolPipelinedCompletionsExactlyOnce: with completions written two
// batches at a time by a store that is slow and fails at random (before
// or after its write), and claims made with completions beside the claim
// loop's, every one of 150 tasks ends succeeded with exactly one attempt
// recorded, no claim is made while the pool holds more than its bound,
// and the pool ends with nothing in flight.
func TestPoolPipelinedCompletionsExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, rt := storeAndRuntime(t)
	ids := submitNoops(t, store, 150)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	s := &flakyCompletions{Store: store, r: rand.New(rand.NewPCG(seed, 29)), bound: 2 * (3 + 8)}
	pl, err := pool.New(s, rt, pool.Config{Workers: 3, ClaimBatch: 8, Poll: time.Millisecond})
	require.NoError(t, err)
	s.pl.Store(pl)
	require.NoError(t, pl.Start(ctx))
	for _, id := range ids {
		waitSucceeded(t, pl, id)
		atts, err := store.Attempts(ctx, id)
		require.NoError(t, err)
		require.Len(t, atts, 1, "task %d", id)
		require.Equal(t, "succeeded", atts[0].Outcome, "task %d", id)
	}
	require.NoError(t, pl.Stop(ctx))
	require.Zero(t, pl.Stats().Running)
	require.Zero(t, s.over.Load(), "claims made while the pool held more than 2 x (Workers + ClaimBatch)")
}
