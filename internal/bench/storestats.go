package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/stint-run/stint/tasks"
)

// countingStore wraps a tasks.Store and counts the pool's Claim and
// Complete calls: how many, how many tasks each carried, and the time
// spent in them. It shows how the pool batches its transactions.
type countingStore struct {
	tasks.Store
	claims, claimed, claimNs         atomic.Int64
	completes, completed, completeNs atomic.Int64
}

// Claim implements tasks.Store.
func (s *countingStore) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	start := time.Now()
	c, err := s.Store.Claim(ctx, req)
	s.claimNs.Add(int64(time.Since(start)))
	s.claims.Add(1)
	s.claimed.Add(int64(len(c)))
	return c, err
}

// Complete implements tasks.Store.
func (s *countingStore) Complete(ctx context.Context, cs []tasks.Completion) ([]error, error) {
	start := time.Now()
	errs, err := s.Store.Complete(ctx, cs)
	s.completeNs.Add(int64(time.Since(start)))
	s.completes.Add(1)
	s.completed.Add(int64(len(cs)))
	return errs, err
}

// storeCounts is a snapshot of a countingStore's counters.
type storeCounts struct {
	Claims, Claimed, Completes, Completed int64
	ClaimTime, CompleteTime               time.Duration
}

func (s *countingStore) counts() storeCounts {
	return storeCounts{
		Claims: s.claims.Load(), Claimed: s.claimed.Load(),
		Completes: s.completes.Load(), Completed: s.completed.Load(),
		ClaimTime: time.Duration(s.claimNs.Load()), CompleteTime: time.Duration(s.completeNs.Load()),
	}
}

// add sums two snapshots.
func (c storeCounts) add(d storeCounts) storeCounts {
	return storeCounts{c.Claims + d.Claims, c.Claimed + d.Claimed, c.Completes + d.Completes,
		c.Completed + d.Completed, c.ClaimTime + d.ClaimTime, c.CompleteTime + d.CompleteTime}
}
