package postgres

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// RecoverRunning puts every running task back in the queue, ready now,
// with its lease cleared and its attempt recorded as "lost" and not
// counted (a task whose cancellation was requested becomes cancelled
// instead), and returns how many it recovered.
//
// It is the single-node recovery of tasks.Store, and ends the attempts of
// every runner on the schema, live ones included (their writes are then
// refused, and their tasks run again). Several runners sharing the store
// must not call it: each calls RecoverOwn with its own owner id at start,
// and the tasks of a runner that died without restarting move on when
// their leases expire.
func (s *Store) RecoverRunning(ctx context.Context) (int, error) {
	return s.recover(ctx, "recover running", sqlRecoverAll,
		"the runner stopped while the attempt ran (recovered at start)", "")
}

// RecoverOwn is RecoverRunning for the attempts of one owner: it puts the
// tasks running under a lease of owner back in the queue, ready now, with
// their attempts recorded as "lost" and not counted (cancelled when their
// cancellation was requested), and returns how many it recovered. The
// tasks other owners run are left alone.
//
// A runner with a stable owner id (the same across its restarts: a host
// or pod name) calls it at start, before it claims: the attempts its
// previous process left running resume at once from their checkpoints,
// instead of at their lease expiry and counted. A runner whose owner id is
// new at every start has nothing to recover.
func (s *Store) RecoverOwn(ctx context.Context, owner string) (int, error) {
	if owner == "" {
		return 0, errors.New("postgres: recover own attempts: empty owner")
	}
	return s.recover(ctx, "recover own attempts", sqlRecoverOwn,
		"the runner stopped while the attempt ran (recovered by its next start)", owner)
}

// recover runs the recovery statement q; owner is its $3 unless empty.
func (s *Store) recover(ctx context.Context, op, q, reason, owner string) (int, error) {
	args := []any{s.clock(), reason}
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
		s.log.Info("recovered tasks left running", zap.Int("tasks", n), zap.String("schema", s.schema), zap.String("owner", owner))
		s.notify() // other runners may take them at once
	}
	return n, nil
}
