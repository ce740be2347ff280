package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// bulkRows is the most tasks one statement of SubmitMany inserts: 18
// parameters a task (21 claimed), under SQLite's limit of 32,766 per statement.
const bulkRows = 500

// SubmitMany is Submit for every spec, in one write transaction, with one
// wake-up (tasks.Store.SubmitMany): results[i] is the outcome of specs[i].
// Every spec is checked first; an invalid one, or one whose module is not
// stored, fails the call with an error naming its index, nothing stored.
// A key repeated inside specs makes one task, returned as existing for
// its later occurrences.
//
// The tasks go in multi-row inserts of up to 500, with ids given in the
// order of specs (the transaction holds the write lock, so they follow
// the last id ever used); the tasks whose key was taken are read back by
// key in one query. The call holds the store's write lock throughout
// (claims and completions wait): submit tens of thousands of tasks in
// calls of a few thousand while a runner works the store.
func (s *Store) SubmitMany(ctx context.Context, specs []tasks.Spec) ([]tasks.Submitted, error) {
	return s.submitMany(ctx, specs, nil)
}

// SubmitManyClaimed is SubmitMany with every task it creates stored
// running, claimed by owner under a lease of lease
// (tasks.ClaimingSubmitter): the columns a claim would set, set by the
// insert, so that a pool alone on its queue skips the claim's
// transaction.
func (s *Store) SubmitManyClaimed(ctx context.Context, specs []tasks.Spec, owner string, lease time.Duration) ([]tasks.Submitted, error) {
	if owner == "" {
		return nil, errors.New("sqlite: submit many claimed: empty owner")
	}
	if lease <= 0 {
		return nil, fmt.Errorf("sqlite: submit many claimed: lease %v is not positive", lease)
	}
	return s.submitMany(ctx, specs, &claimAs{owner: owner, lease: lease})
}

// claimAs is the claim SubmitManyClaimed stores its new tasks under.
type claimAs struct {
	owner  string
	lease  time.Duration
	expiry time.Time // now + lease, set by submitMany
}

func (s *Store) submitMany(ctx context.Context, specs []tasks.Spec, claim *claimAs) ([]tasks.Submitted, error) {
	if len(specs) == 0 {
		return []tasks.Submitted{}, nil
	}
	now := s.clock()
	if claim != nil {
		claim.expiry = now.Add(claim.lease)
	}
	// A key repeated in specs: only its first occurrence is inserted.
	rows, send, firstOf, err := specrow.Many(specs, now, MaxInput)
	if err != nil {
		return nil, fmt.Errorf("sqlite: submit many: %w", err)
	}
	var out []tasks.Submitted
	created := false
	err = s.write(ctx, "submit many", func(ctx context.Context) error {
		out, created = make([]tasks.Submitted, len(specs)), false
		checked := map[string]bool{}
		for i, r := range rows {
			if checked[r.Spec.Module] {
				continue
			}
			if err := s.moduleStored(ctx, r.Spec.Module); err != nil {
				return fmt.Errorf("sqlite: submit many: spec %d: %w", i, err)
			}
			checked[r.Spec.Module] = true
		}
		var next int64
		if err := s.wc.QueryRowContext(ctx, `SELECT max(
			coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'tasks'), 0),
			coalesce((SELECT max(id) FROM tasks), 0)) + 1`).Scan(&next); err != nil {
			return s.dbErr("submit many", err)
		}
		var taken []int // rows whose key another task holds
		for start := 0; start < len(send); start += bulkRows {
			chunk := send[start:min(start+bulkRows, len(send))]
			c, t, err := s.insertChunk(ctx, rows, chunk, next+int64(start), now, claim, out)
			if err != nil {
				return err
			}
			created = created || c
			taken = append(taken, t...)
		}
		return s.readTaken(ctx, rows, taken, out)
	})
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		if k := r.Spec.IdempotencyKey; k != "" && firstOf[k] != i {
			out[i] = tasks.Submitted{Task: out[firstOf[k]].Task, Existing: true}
		}
	}
	if created && claim != nil {
		s.reaper.leased(micros(claim.expiry))
	} else if created {
		s.wake.ping()
	}
	return out, nil
}

// insertTasksSQL is the statement that inserts n tasks (18 parameters
// each) unless their key is taken, returning the ids inserted; claimed,
// the tasks are inserted running, attempt 1, with 3 parameters more each
// (lease owner, lease expiry, started at).
func insertTasksSQL(n int, claimed bool) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO tasks (id, module, input_size, args, env, mounts, limits, max_attempts, priority, queue,
		idempotency_key, run_at, state, created_at, updated_at, labels, export, on_retry, tenant`)
	if claimed {
		q.WriteString(`, attempt, lease_owner, lease_expiry, started_at`)
	}
	q.WriteString(`) VALUES `)
	for j := range n {
		if j > 0 {
			q.WriteString(",")
		}
		if claimed {
			q.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`)
		} else {
			q.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)`)
		}
	}
	q.WriteString(` ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING id`)
	return q.String()
}

// insertChunk inserts the rows of idx with the ids first, first+1, ...,
// and their inputs, reads the inserted tasks back into out, and returns
// the rows whose key was taken (not inserted).
func (s *Store) insertChunk(ctx context.Context, rows []specrow.Row, idx []int, first int64, now time.Time,
	claim *claimAs, out []tasks.Submitted) (created bool, taken []int, err error) {
	args := make([]any, 0, 21*len(idx))
	for j, i := range idx {
		r := rows[i]
		sp := r.Spec
		args = append(args, first+int64(j), sp.Module, len(sp.Input), r.Args, r.Env, r.Mounts, r.Limits, sp.MaxAttempts,
			sp.Priority, sp.Queue, nullString(sp.IdempotencyKey), micros(r.RunAt),
			micros(now), micros(now), r.Labels, nullString(sp.Export), nullString(sp.OnRetry), sp.Tenant)
		if claim != nil {
			args = append(args, claim.owner, micros(claim.expiry), micros(now))
		}
	}
	var res *sql.Rows
	if len(idx) == bulkRows {
		// A full chunk: its statement is prepared once (parsing 500 rows
		// of parameters was a fifth of the call).
		var st *sql.Stmt
		key := stmtKey{"insert", bulkRows}
		if claim != nil {
			key.kind = "insert claimed"
		}
		if st, err = s.prepared(ctx, "submit many", key, func() string { return insertTasksSQL(bulkRows, claim != nil) }); err != nil {
			return false, nil, err
		}
		res, err = st.QueryContext(ctx, args...)
	} else {
		res, err = s.wc.QueryContext(ctx, insertTasksSQL(len(idx), claim != nil), args...)
	}
	if err != nil {
		return false, nil, s.dbErr("submit many", err)
	}
	inserted := map[int64]bool{}
	for res.Next() {
		var id int64
		if err := res.Scan(&id); err != nil {
			_ = res.Close()
			return false, nil, s.dbErr("submit many", err)
		}
		inserted[id] = true
	}
	if err := res.Err(); err != nil {
		return false, nil, s.dbErr("submit many", err)
	}
	// The inputs of the inserted tasks.
	var q strings.Builder
	args = args[:0]
	for j, i := range idx {
		id := first + int64(j)
		if !inserted[id] {
			taken = append(taken, i)
			continue
		}
		if in := rows[i].Spec.Input; len(in) > 0 {
			if len(args) > 0 {
				q.WriteString(",")
			}
			q.WriteString("(?, ?)")
			args = append(args, id, in)
		}
	}
	if len(args) > 0 {
		if _, err := s.wc.ExecContext(ctx, `INSERT INTO inputs (task_id, blob) VALUES `+q.String(), args...); err != nil {
			return false, nil, s.dbErr("submit many", err)
		}
	}
	if len(inserted) == 0 {
		return false, taken, nil
	}
	// The inserted tasks as stored, decoded from the values just bound
	// (taskRow.task, as a read would): reading them back was a quarter of
	// the call.
	for j, i := range idx {
		id := first + int64(j)
		if !inserted[id] {
			continue
		}
		t, err := insertedTask(rows[i], id, now, claim)
		if err != nil {
			return false, nil, err
		}
		out[i] = tasks.Submitted{Task: t}
	}
	return true, taken, nil
}

// insertedTask is the task row r was inserted as, with id, at now: what
// Get would read (taskRow.task decodes it the same way).
func insertedTask(r specrow.Row, id int64, now time.Time, claim *claimAs) (tasks.Task, error) {
	sp := r.Spec
	var tr taskRow
	t := &tr.t
	t.ID, t.Module, t.MaxAttempts, t.Priority, t.Queue = id, sp.Module, sp.MaxAttempts, sp.Priority, sp.Queue
	t.CheckpointSize, t.InputSize = -1, len(sp.Input)
	if len(sp.Input) > 0 {
		t.Input = bytes.Clone(sp.Input)
	}
	tr.Args, tr.Env, tr.Mounts = storedJSON(r.Args), storedJSON(r.Env), storedJSON(r.Mounts)
	tr.Limits, tr.Labels = storedJSON(r.Limits), storedJSON(r.Labels)
	tr.export, tr.idem = storedString(nullString(sp.Export)), storedString(nullString(sp.IdempotencyKey))
	tr.onRetry = storedString(nullString(sp.OnRetry))
	tr.state = string(tasks.StateQueued)
	if claim != nil {
		tr.state, t.Attempt = string(tasks.StateRunning), 1
		tr.owner = sql.NullString{String: claim.owner, Valid: true}
		tr.leaseExpiry = sql.NullInt64{Int64: micros(claim.expiry), Valid: true}
		tr.startedAt = sql.NullInt64{Int64: micros(now), Valid: true}
	}
	tr.runAt, tr.created, tr.updated = micros(r.RunAt), micros(now), micros(now)
	return tr.task()
}

// storedJSON is the JSON column a *string parameter stores, as a read
// scans it (nil: NULL).
func storedJSON(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// storedString is the column a TEXT parameter (a string, a *string or
// nil) stores.
func storedString(v any) sql.NullString {
	switch s := v.(type) {
	case string:
		return sql.NullString{String: s, Valid: true}
	case *string:
		if s != nil {
			return sql.NullString{String: *s, Valid: true}
		}
	}
	return sql.NullString{}
}

// readTaken reads into out, as existing, the tasks that hold the keys of
// the rows taken, in one query.
func (s *Store) readTaken(ctx context.Context, rows []specrow.Row, taken []int, out []tasks.Submitted) error {
	if len(taken) == 0 {
		return nil
	}
	keys := make([]string, len(taken))
	rowOf := make(map[string]int, len(taken))
	for j, i := range taken {
		keys[j] = rows[i].Spec.IdempotencyKey
		rowOf[keys[j]] = i
	}
	js, err := json.Marshal(keys)
	if err != nil {
		return fmt.Errorf("sqlite: submit many: %w", err)
	}
	res, err := s.wc.QueryContext(ctx, `SELECT `+taskCols+` FROM tasks
		WHERE idempotency_key IN (SELECT value FROM json_each(?))`, string(js))
	if err != nil {
		return s.dbErr("submit many", err)
	}
	ts, err := scanTasks(res)
	if err != nil {
		return s.dbErr("submit many", err)
	}
	for _, t := range ts {
		if i, ok := rowOf[t.IdempotencyKey]; ok {
			out[i] = tasks.Submitted{Task: t, Existing: true}
			delete(rowOf, t.IdempotencyKey)
		}
	}
	for k, i := range rowOf {
		// Writes are serialized: the task that holds the key is there.
		return fmt.Errorf("sqlite: submit many: spec %d: idempotency key %q: its task was not found", i, k)
	}
	return nil
}
