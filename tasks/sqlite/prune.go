package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// pruneBatch is how many tasks one Prune transaction deletes at most, so
// that claims and completions wait for no long write.
const pruneBatch = 500

// Prune deletes the tasks that ended (succeeded, dead or cancelled) before
// before, with their inputs, results, checkpoints, snapshots and attempt
// records, and returns how many it deleted; then it sweeps the snapshot
// files no task needs (snapfiles.go). Modules stay (other tasks may
// name them); the idempotency keys of deleted tasks are free again. It
// works in batches of a few hundred tasks, each its own transaction,
// walking the tasks by id, so it may run next to a busy pool; when ctx
// ends it stops after the batch in hand and returns what it deleted with
// ctx's error.
func (s *Store) Prune(ctx context.Context, before time.Time) (int, error) {
	cutoff := micros(before)
	// A terminal task that is retried meanwhile is queued again: the
	// delete checks the state once more, in its transaction.
	const ended = `state IN ('succeeded', 'dead', 'cancelled') AND finished_at < ?`
	var (
		deleted int
		after   int64
	)
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("sqlite: prune: %w", err)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT id FROM tasks WHERE id > ? AND `+ended+` ORDER BY id LIMIT ?`,
			after, cutoff, pruneBatch)
		if err != nil {
			return deleted, s.dbErr("prune", err)
		}
		var ids []any
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close()
				return deleted, s.dbErr("prune", err)
			}
			ids = append(ids, id)
			after = id
		}
		if err := rows.Close(); err != nil {
			return deleted, s.dbErr("prune", err)
		}
		if len(ids) == 0 {
			s.sweepNow(ctx)
			return deleted, nil
		}
		in := `(` + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + `)`
		args := append(append([]any{}, ids...), cutoff)
		var n int64
		err = s.write(ctx, "prune", func(ctx context.Context) error {
			gone := `SELECT id FROM tasks WHERE id IN ` + in + ` AND ` + ended
			for _, table := range []string{"attempts", "checkpoints", "inputs", "results", "snapshots"} {
				if _, err := s.wc.ExecContext(ctx, `DELETE FROM `+table+` WHERE task_id IN (`+gone+`)`, args...); err != nil {
					return s.dbErr("prune", err)
				}
			}
			res, err := s.wc.ExecContext(ctx, `DELETE FROM tasks WHERE id IN `+in+` AND `+ended, args...)
			if err != nil {
				return s.dbErr("prune", err)
			}
			if n, err = res.RowsAffected(); err != nil {
				return s.dbErr("prune", err)
			}
			return nil
		})
		if err != nil {
			return deleted, err
		}
		deleted += int(n)
	}
}
