package postgres

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// RecoverRunning puts every running task back in the queue, ready now,
// with its lease cleared, its attempt recorded as "lost" and not counted,
// and its lost streak grown by one (tasks.Store.RecoverRunning): a task whose
// streak reaches lostLimit (0: tasks.DefaultLostLimit) is dead instead,
// one whose cancellation was requested cancelled. It returns how many it
// recovered.
//
// It is the single-node recovery of tasks.Store, and ends the attempts of
// every runner on the schema, live ones included (their writes are then
// refused, and their tasks run again). Several runners sharing the store
// must not call it: each calls RecoverOwn with its own owner id at start,
// and the tasks of a runner that died without restarting move on when
// their leases expire.
func (s *Store) RecoverRunning(ctx context.Context, lostLimit int) (int, error) {
	return s.recover(ctx, "recover running", sqlRecoverAll,
		"the runner stopped while the attempt ran (recovered at start)", "", lostLimit)
}

// RecoverOwn is RecoverRunning for the attempts of one owner: it puts the
// tasks running under a lease of owner back in the queue, ready now, with
// their attempts recorded as "lost" and not counted and their lost
// streaks grown (dead at lostLimit, cancelled when their cancellation was
// requested), and returns how many it recovered. The tasks other owners
// run are left alone.
//
// A runner with a stable owner id (the same across its restarts: a host
// or pod name) calls it at start, before it claims: the attempts its
// previous process left running resume at once from their checkpoints
// (or snapshots), instead of at their lease expiry. A runner whose owner
// id is new at every start has nothing to recover.
func (s *Store) RecoverOwn(ctx context.Context, owner string, lostLimit int) (int, error) {
	if owner == "" {
		return 0, errors.New("postgres: recover own attempts: empty owner")
	}
	return s.recover(ctx, "recover own attempts", sqlRecoverOwn,
		"the runner stopped while the attempt ran (recovered by its next start)", owner, lostLimit)
}

// LostAttempts is how many attempts this Store recorded as lost, their
// runners having died while running them: the expired leases its claims
// took over and the attempts its recoveries (RecoverRunning, RecoverOwn)
// put back, those that made their task dead (tasks.LostLimitReason)
// included. Each lost attempt is recorded once, by one store call: summed
// over the runners of a schema, it is every attempt lost to a crash. The
// pool reports it (pool.Stats.LostToCrashes).
func (s *Store) LostAttempts() int64 { return s.lostAttempts.Load() }

// recover runs the recovery statement q; owner is its $5 unless empty.
func (s *Store) recover(ctx context.Context, op, q, reason, owner string, lostLimit int) (int, error) {
	limit := tasks.LostLimit(lostLimit)
	args := []any{s.clock(), limit, tasks.LostLimitReason(limit), reason}
	if owner != "" {
		args = append(args, owner)
	}
	var n int
	err := retry(func() error {
		return s.pool.QueryRow(ctx, q, args...).Scan(&n)
	})
	if err != nil {
		return 0, s.dbErr(op, err)
	}
	if n > 0 {
		s.lostAttempts.Add(int64(n))
		s.log.Info("recovered tasks left running", zap.Int("tasks", n), zap.String("schema", s.schema), zap.String("owner", owner))
		s.notify() // other runners may take them at once
	}
	return n, nil
}
