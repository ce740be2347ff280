package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// Bulk submits (SubmitMany) and counts per state (Counts).

// The chunks of a SubmitMany: at most bulkRows tasks, or about bulkBytes
// of input, per statement. The rows go as arrays (unnest), so PostgreSQL's
// limit of 65,535 parameters does not apply; the chunks keep each message
// and each statement's memory bounded.
const (
	bulkRows  = 1000
	bulkBytes = 16 << 20
)

// sqlBulkIDs reserves $1 task ids from the tasks' identity sequence ($2
// the schema).
const sqlBulkIDs = `SELECT nextval(pg_get_serial_sequence(format('%I.tasks', $2::text), 'id'))
FROM generate_series(1, $1::integer)`

// sqlBulkSubmit inserts the tasks of the arrays $1.. $14, $16 (the
// exports), $17 (the on-retry choices) and $18 (the tenants; one element a task, ids
// reserved with sqlBulkIDs) and their inputs; $15 now. It returns the
// tasks inserted (without their inputs); a task whose idempotency key is
// taken is not inserted.
const sqlBulkSubmit = `WITH x AS (
	SELECT * FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::integer[], $9::integer[], $10::text[], $11::text[], $12::timestamptz[], $13::text[], $14::bytea[], $16::text[],
		$17::text[], $18::text[])
		AS x(id, module, input_size, args, env, mounts, limits, max_attempts, priority, queue,
			idempotency_key, run_at, labels, input, export, on_retry, tenant)
), t AS (
	INSERT INTO tasks (id, module, input_size, args, env, mounts, limits, max_attempts, priority, queue,
		idempotency_key, run_at, state, created_at, updated_at, labels, export, on_retry, tenant)
	OVERRIDING SYSTEM VALUE
	SELECT id, module, input_size, args::json, env::json, mounts::json, limits::json, max_attempts, priority, queue,
		idempotency_key, run_at, 'queued', $15, $15, labels::json, export, on_retry, tenant
	FROM x ORDER BY id
	ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
	RETURNING *
), i AS (
	INSERT INTO inputs (task_id, blob) SELECT t.id, x.input FROM t JOIN x ON x.id = t.id WHERE x.input_size > 0
)
SELECT ` + listCols + ` FROM t`

// sqlTasksByKeys reads the tasks holding the idempotency keys $1.
const sqlTasksByKeys = `SELECT ` + taskCols + ` FROM tasks t WHERE t.idempotency_key = ANY($1::text[])`

// SubmitMany is Submit for every spec, in one transaction, with one
// wake-up (tasks.Store.SubmitMany): results[i] is the outcome of specs[i].
// Every spec is checked first; an invalid one, or one whose module is not
// stored, fails the call with an error naming its index, nothing stored.
// A key repeated inside specs makes one task, returned as existing for
// its later occurrences.
//
// The tasks go in chunks of up to 1,000, each one statement (unnest of
// arrays): one round trip per chunk, and one commit in all. Their ids are
// reserved first, in the order of specs, so they ascend as specs go. A
// key another transaction is inserting waits for it, as in Submit.
func (s *Store) SubmitMany(ctx context.Context, specs []tasks.Spec) ([]tasks.Submitted, error) {
	if len(specs) == 0 {
		return []tasks.Submitted{}, nil
	}
	now := s.clock()
	// A key repeated in specs: only its first occurrence is inserted.
	rows, send, firstOf, err := specrow.Many(specs, now, MaxInput)
	if err != nil {
		return nil, fmt.Errorf("postgres: submit many: %w", err)
	}
	var out []tasks.Submitted
	created := false
	err = retry(func() error {
		out, created = make([]tasks.Submitted, len(specs)), false
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := s.modulesStored(ctx, tx, rows); err != nil {
				return err
			}
			var ids []int64
			idRows, err := tx.Query(ctx, sqlBulkIDs, len(send), s.schema)
			if err != nil {
				return err
			}
			if ids, err = pgx.CollectRows(idRows, pgx.RowTo[int64]); err != nil {
				return err
			}
			slices.Sort(ids)
			for start := 0; start < len(send); {
				end, size := start, 0
				for end < len(send) && end-start < bulkRows && (end == start || size+len(rows[send[end]].Spec.Input) <= bulkBytes) {
					size += len(rows[send[end]].Spec.Input)
					end++
				}
				c, err := s.insertChunk(ctx, tx, rows, send[start:end], ids[start:end], now, out)
				if err != nil {
					return err
				}
				created = created || c
				start = end
			}
			return nil
		})
	})
	if err != nil {
		if errors.Is(err, tasks.ErrModuleNotFound) || errors.Is(err, errKeyVanished) {
			return nil, err
		}
		return nil, s.dbErr("submit many", err)
	}
	for i, r := range rows {
		if k := r.Spec.IdempotencyKey; k != "" && firstOf[k] != i {
			out[i] = tasks.Submitted{Task: out[firstOf[k]].Task, Existing: true}
		}
	}
	if created {
		s.notify()
	}
	return out, nil
}

// errKeyVanished: the task holding a key was deleted (pruned) between
// the conflict and its read.
var errKeyVanished = errors.New("the task holding an idempotency key disappeared; try again")

// modulesStored checks that the modules of rows are stored: an error
// naming the first row whose module is not, wrapping
// tasks.ErrModuleNotFound.
func (s *Store) modulesStored(ctx context.Context, tx pgx.Tx, rows []specrow.Row) error {
	var mods []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Spec.Module] {
			seen[r.Spec.Module] = true
			mods = append(mods, r.Spec.Module)
		}
	}
	res, err := tx.Query(ctx, `SELECT sha256 FROM modules WHERE sha256 = ANY($1::text[])`, mods)
	if err != nil {
		return err
	}
	found, err := pgx.CollectRows(res, pgx.RowTo[string])
	if err != nil {
		return err
	}
	stored := map[string]bool{}
	for _, m := range found {
		stored[m] = true
	}
	for i, r := range rows {
		if !stored[r.Spec.Module] {
			return fmt.Errorf("postgres: submit many: spec %d: %w: %s (store it first)", i, tasks.ErrModuleNotFound, r.Spec.Module)
		}
	}
	return nil
}

// insertChunk inserts the rows of idx with the ids reserved for them and
// fills in their results in out; the rows whose key is taken get the
// task that holds it. created reports whether a task was inserted.
func (s *Store) insertChunk(ctx context.Context, tx pgx.Tx, rows []specrow.Row, idx []int, ids []int64, now time.Time,
	out []tasks.Submitted) (created bool, err error) {
	n := len(idx)
	var (
		modules, queues, tenants          = make([]string, n), make([]string, n), make([]string, n)
		sizes, maxes, prios               = make([]int, n), make([]int, n), make([]int, n)
		args, env, mounts, limits, labels = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		keys, exports, onRetry            = make([]*string, n), make([]*string, n), make([]*string, n)
		runAts                            = make([]time.Time, n)
		inputs                            = make([][]byte, n)
	)
	byID := make(map[int64]int, n)
	for j, i := range idx {
		r := rows[i]
		byID[ids[j]] = i
		modules[j], queues[j], tenants[j] = r.Spec.Module, r.Spec.Queue, r.Spec.Tenant
		sizes[j], maxes[j], prios[j] = len(r.Spec.Input), r.Spec.MaxAttempts, r.Spec.Priority
		args[j], env[j], mounts[j], limits[j], labels[j] = r.Args, r.Env, r.Mounts, r.Limits, r.Labels
		keys[j], exports[j] = nullString(r.Spec.IdempotencyKey), nullString(r.Spec.Export)
		onRetry[j] = nullString(r.Spec.OnRetry)
		runAts[j] = r.RunAt
		if len(r.Spec.Input) > 0 {
			inputs[j] = r.Spec.Input
		}
	}
	res, err := tx.Query(ctx, sqlBulkSubmit, ids, modules, sizes, args, env, mounts, limits, maxes, prios, queues,
		keys, runAts, labels, inputs, now, exports, onRetry, tenants)
	if err != nil {
		return false, err
	}
	inserted, err := scanTasks(res)
	if err != nil {
		return false, err
	}
	done := make(map[int]bool, len(inserted))
	for _, t := range inserted {
		i, ok := byID[t.ID]
		if !ok {
			return false, fmt.Errorf("insert returned task %d, not one of the chunk", t.ID)
		}
		if len(rows[i].Spec.Input) > 0 {
			t.Input = bytes.Clone(rows[i].Spec.Input)
		}
		out[i] = tasks.Submitted{Task: t}
		done[i] = true
	}
	var taken []string
	keyOf := map[string]int{}
	for _, i := range idx {
		if !done[i] {
			k := rows[i].Spec.IdempotencyKey
			taken = append(taken, k)
			keyOf[k] = i
		}
	}
	if len(taken) == 0 {
		return len(inserted) > 0, nil
	}
	res, err = tx.Query(ctx, sqlTasksByKeys, taken)
	if err != nil {
		return false, err
	}
	holders, err := scanTasks(res)
	if err != nil {
		return false, err
	}
	for _, t := range holders {
		out[keyOf[t.IdempotencyKey]] = tasks.Submitted{Task: t, Existing: true}
		delete(keyOf, t.IdempotencyKey)
	}
	for k, i := range keyOf {
		return false, fmt.Errorf("postgres: submit many: spec %d: idempotency key %q: %w", i, k, errKeyVanished)
	}
	return len(inserted) > 0, nil
}
