package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/stint-run/stint/tasks"
)

// CompleteAndClaim is Complete(cs) and then Claim(req) in one round trip
// (tasks.CompletingClaimer): one pgx batch, which PostgreSQL runs as one
// implicit transaction, so that both commit or neither does. The claim
// sees the completions: a task queued again ready at once may be claimed
// by it. When the round trip fails, err is set, every errs[i] is err and
// nothing is claimed; a claim whose reply may have been lost with its
// connection is given back by the next claim, as with Claim.
func (s *Store) CompleteAndClaim(ctx context.Context, cs []tasks.Completion, req tasks.ClaimRequest) (errs []error, claimed []tasks.Claimed, err error) {
	c := s.planComplete(cs)
	k, kerr := s.planClaim(ctx, req)
	if kerr != nil || k == nil || len(c.order) == 0 {
		// Nothing to do together: each on its own (a claim refused
		// before it reached the database is left to the pool's next).
		if errs, err = s.Complete(ctx, cs); err != nil || k == nil {
			if k != nil {
				s.putLostClaims(k.lost)
			}
			return errs, nil, err
		}
		claimed, _ = s.claimRun(ctx, k)
		return errs, claimed, nil
	}
	var reaped int64
	err = retry(func() error {
		b := &pgx.Batch{}
		b.Queue(sqlComplete, c.args...)
		k.queue(b)
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if err := c.read(rows); err != nil {
			return err
		}
		if claimed, reaped, err = k.read(br); err != nil {
			return err
		}
		return br.Close()
	})
	kerr = err
	if err == nil && k.tenanted {
		// After the completions committed: a failure is the claim's.
		claimed, kerr = s.claimFair(ctx, k, claimed)
	}
	claimed, kerr = s.claimDone(ctx, k, claimed, reaped, kerr)
	if kerr != nil {
		claimed = nil
	}
	errs, err = s.completeDone(ctx, cs, c, err)
	return errs, claimed, err
}
