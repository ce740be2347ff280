package postgres

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// pruneBatch is how many tasks one Prune statement deletes at most, so
// that no transaction holds many rows for long.
const pruneBatch = 500

// Prune deletes the tasks that ended (succeeded, dead or cancelled) before
// before, with their inputs, results, checkpoints, snapshots and attempt
// records, and returns how many it deleted. Modules stay (other tasks may name them);
// the idempotency keys of deleted tasks are free again.
//
// It runs once across runners: it first tries the schema's prune lock (a
// session advisory lock), and when another Store holds it (another runner
// pruning now) it returns 0 and nil at once, without work. Holding it, it
// deletes in batches of a few hundred tasks, each its own transaction,
// walking the tasks by id, so that it may run next to busy pools; when ctx
// ends it stops after the batch in hand and returns what it deleted with
// ctx's error.
func (s *Store) Prune(ctx context.Context, before time.Time) (deleted int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("postgres: prune: %w", err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, s.dbErr("prune", err)
	}
	key := lockKey("prune", s.schema)
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
		conn.Release()
		return 0, s.dbErr("prune: take the prune lock", err)
	}
	if !got {
		conn.Release()
		s.log.Debug("another runner is pruning the store; skipped", zap.String("schema", s.schema))
		return 0, nil
	}
	defer func() {
		// A session lock outlives the borrowing: release it before the
		// connection goes back to the pool, or close the connection.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key); uerr != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
		conn.Release()
	}()
	cutoff := before.UTC().Truncate(time.Microsecond)
	var after int64
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("postgres: prune: %w", err)
		}
		rows, err := conn.Query(ctx, sqlPrune, after, cutoff, pruneBatch)
		if err != nil {
			return deleted, s.dbErr("prune", err)
		}
		n := 0
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return deleted, s.dbErr("prune", err)
			}
			after = max(after, id)
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return deleted, s.dbErr("prune", err)
		}
		deleted += n
		if n < pruneBatch {
			return deleted, nil
		}
	}
}
