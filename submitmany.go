package stint

import (
	"context"

	"github.com/stint-run/stint/tasks"
)

// SubmitMany stores specs in bulk, in one transaction (tasks.SubmitMany),
// and wakes the pool. Unlike
// Submit it does not check the specs against the pool's Policy: check
// them first (tasks.CheckSpec). Tasks whose IdempotencyKey was already
// used are returned as they are, Existing set. subs[i] is specs[i]'s.
func (r *Runner) SubmitMany(ctx context.Context, specs []tasks.Spec) (subs []tasks.Submitted, err error) {
	subs, err = tasks.SubmitMany(ctx, r.store, specs)
	if err == nil {
		r.pool.Wake()
	}
	return subs, err
}

// SubmitClaimed is SubmitMany for a queue this Runner's pool runs alone
// (no other runner claims from it, and it holds no queued task the
// caller does not know of): on a store that can (tasks.ClaimingSubmitter:
// SQLite), the tasks it creates are stored already claimed by the pool
// (running, attempt 1, under its owner and lease, as a claim leaves them)
// and handed to it (pool.Pool.Adopt), so that it runs them without a
// claim transaction of its own. Tasks that existed are returned as they
// are, not claimed (a queued one is claimed as any other). On another
// store it is SubmitMany.
//
// stored, if not nil, is called with what was stored (subs[i] is
// specs[i]'s) before any new task is handed to the pool, so that the
// caller knows each task before a worker runs it; if it fails,
// SubmitClaimed returns its error and hands nothing over (the claimed
// tasks wait out their lease, or the next start recovers them).
//
// It waits while every worker is busy and claimed tasks already wait for
// one; once the pool's intake stopped (StopIntake, Close) it gives back
// the tasks it could not hand over (queued again, as if never claimed).
// Call it after Start.
func (r *Runner) SubmitClaimed(ctx context.Context, specs []tasks.Spec, stored func([]tasks.Submitted) error) ([]tasks.Submitted, error) {
	cs, claiming := r.store.(tasks.ClaimingSubmitter)
	var subs []tasks.Submitted
	var err error
	if claiming {
		subs, err = cs.SubmitManyClaimed(ctx, specs, r.pool.Owner(), r.pool.Lease())
	} else {
		subs, err = tasks.SubmitMany(ctx, r.store, specs)
	}
	if err != nil {
		return subs, err
	}
	if stored != nil {
		if err := stored(subs); err != nil {
			return subs, err
		}
	}
	var claimed []tasks.Claimed
	if claiming {
		for _, s := range subs {
			if !s.Existing {
				claimed = append(claimed, tasks.ClaimedOf(s.Task))
			}
		}
	}
	if len(claimed) < len(subs) {
		r.pool.Wake() // tasks queued for its claims
	}
	r.pool.Adopt(claimed)
	return subs, nil
}
