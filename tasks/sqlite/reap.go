package sqlite

import (
	"context"
	"database/sql"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-run/stint/tasks"
)

// reapInterval is the longest a Store goes without looking for expired
// leases while it claims: a lease that this Store granted or extended is
// taken over by the first claim after it expires, one granted or extended
// by another Store on the same file (another process) by a claim at most
// reapInterval later.
const reapInterval = 500 * time.Millisecond

// reaper decides whether a claim must first reap expired leases, so that
// most claims skip the reap statement (an index probe and a statement
// round trip: measured, about 12% of a claim that finds nothing to claim,
// an idle pool's poll, and 1-2% of a claim and completion of two tasks).
//
// It keeps a lower bound of the earliest lease expiry in the database:
// after a reap, the earliest expiry of the running tasks (read in the same
// transaction), lowered by every lease this Store grants (Claim) or
// extends (Heartbeat, which may shorten a lease) since. A claim reaps when
// its time is past that bound, when reapInterval has passed since the last
// reap (leases written by other Stores, which this one does not see), when
// the clock went back, and after any failed claim. Skipping a reap never
// lets a stale attempt write (fencing does not depend on it): at worst it
// delays a takeover.
//
// Every method is called inside a write transaction of the Store (the
// writer connection serializes them), and the mutex guards the rare calls
// outside one (reset after a failed transaction).
type reaper struct {
	mu sync.Mutex
	// last is the time of the last reap, in micros; due is the first time,
	// in micros, at which a claim must reap (math.MinInt64: the next claim
	// must).
	last, due int64
	// lost counts the attempts the Store recorded as lost (LostAttempts).
	lost atomic.Int64
}

func newReaper() *reaper { return &reaper{due: math.MinInt64} }

// needed reports whether a claim at now must reap first.
func (r *reaper) needed(now int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now >= r.due || now < r.last
}

// reaped records a reap at now after which the earliest lease expiry in
// the database is earliest (valid false: no task is running).
func (r *reaper) reaped(now int64, earliest sql.NullInt64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = now
	r.due = now + reapInterval.Microseconds()
	if earliest.Valid && earliest.Int64 < math.MaxInt64 {
		// Expired once the time is past it (lease_expiry < now).
		r.due = min(r.due, earliest.Int64+1)
	}
}

// leased records a lease written with that expiry, in micros.
func (r *reaper) leased(expiry int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if expiry < math.MaxInt64 {
		r.due = min(r.due, expiry+1)
	}
}

// reset makes the next claim reap: what the reaper knows may be wrong
// (a failed transaction).
func (r *reaper) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.due = math.MinInt64
}

// LostAttempts is how many attempts this Store recorded as lost, their
// runners having died while running them: the expired leases its claims
// took over and the attempts RecoverRunning put back, those that made
// their task dead (tasks.LostLimitReason) included. Each lost attempt is
// recorded once, by one store call: summed over the runners of a store,
// it is every attempt lost to a crash. The pool reports it
// (pool.Stats.LostToCrashes).
func (s *Store) LostAttempts() int64 { return s.reaper.lost.Load() }

// reap runs the takeover of the leases expired at now, in the write
// transaction, and returns how many attempts it recorded as lost;
// lostLimit is the claim's (tasks.ClaimRequest.LostLimit).
func (s *Store) reap(ctx context.Context, now int64, lostLimit int) (int64, error) {
	limit := tasks.LostLimit(lostLimit)
	why := tasks.LostLimitReason(limit)
	res, err := s.st.wReapAttempts.ExecContext(ctx, now, limit, why)
	if err != nil {
		return 0, s.dbErr("claim: reap expired leases", err)
	}
	reaped, err := res.RowsAffected()
	if err != nil {
		return 0, s.dbErr("claim: reap expired leases", err)
	}
	if reaped > 0 {
		if _, err := s.st.wReapTasks.ExecContext(ctx, now, limit, why); err != nil {
			return 0, s.dbErr("claim: reap expired leases", err)
		}
	}
	var earliest sql.NullInt64
	if err := s.st.wEarliestLease.QueryRowContext(ctx).Scan(&earliest); err != nil {
		return 0, s.dbErr("claim: reap expired leases", err)
	}
	s.reaper.reaped(now, earliest)
	return reaped, nil
}
