package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// A completion batch is written with three statements per chunk of up to
// completeRows completions, instead of three per completion: the completions' values go in as the rows of a VALUES list
// joined to their tasks by id, under the same lease fence. A chunk's
// statements are prepared once per size, its size rounded up to a power
// of two and the list padded with rows of NULLs, which join no task.
// Through database/sql and the driver, each statement costs its own
// binding, stepping and resetting: completing batches of 16 took 22 µs a
// task with three statements per completion, 16 µs with three per chunk
// (BenchmarkCompleteBatch, docs/design/durable-queue.md, "Completions in
// chunks"). A chunk of one
// is written with the statements of one completion (completeOne).

// completeRows is the most completions written by one chunk's statements.
const completeRows = 64

// The columns of a completion's row in the VALUES list of the attempt
// record (sqlEndAttempts) and of the task update (sqlCompleteTasks).
const (
	endAttemptCols    = 13 // id, owner, token, started, ended, outcome, exit code, reason, counted, resumed, stderr, work, resumed from
	completeTasksCols = 9  // id, owner, token, state, counted, run at, result size, reason, now
	putResultCols     = 2  // id, bytes
)

// valuesList is a VALUES list of n rows of cols parameters each.
func valuesList(n, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return "VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// sqlEndAttempts records the attempts of n completions (endAttemptCols
// each), from their task rows while the lease still holds them (the
// fence); it returns the ids of the tasks whose lease held.
func sqlEndAttempts(n int) string {
	return `INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, reason, counted, resumed, stderr, work, resumed_from)
	SELECT t.id, t.attempt, t.lease_owner, coalesce(c.column4, t.started_at), c.column5, c.column6, c.column7, c.column8,
		c.column9, max(c.column10, t.resumed), c.column11, c.column12, c.column13
	FROM (` + valuesList(n, endAttemptCols) + `) AS c
	JOIN tasks t ON t.id = c.column1 AND t.state = 'running' AND t.lease_owner = c.column2 AND t.attempt = c.column3
	RETURNING task_id`
}

// completeNextState is the state a completion (c.column4 its asked state,
// c.column5 1 when counted) leaves its task in: a requeue becomes
// cancelled when cancellation was requested, dead when the attempts are
// used up.
const completeNextState = `(CASE WHEN c.column4 <> 'queued' THEN c.column4
	WHEN tasks.cancel_requested <> 0 THEN 'cancelled'
	WHEN tasks.failures + c.column5 >= tasks.max_attempts THEN 'dead'
	ELSE 'queued' END)`

// sqlCompleteTasks ends the attempts of n completions (completeTasksCols
// each) on their task rows, under the same fence.
func sqlCompleteTasks(n int) string {
	return `UPDATE tasks SET
			state = ` + completeNextState + `,
			finished_at = CASE WHEN ` + completeNextState + ` = 'queued' THEN NULL ELSE c.column9 END,
			run_at = CASE WHEN ` + completeNextState + ` = 'queued' THEN c.column6 ELSE tasks.run_at END,
			result_size = CASE WHEN c.column4 = 'succeeded' THEN c.column7 ELSE tasks.result_size END,
			last_error = CASE WHEN c.column4 <> 'succeeded' AND c.column8 IS NOT NULL THEN c.column8 ELSE tasks.last_error END,
			failures = tasks.failures + c.column5, lost_streak = 0,
			lease_owner = NULL, lease_expiry = NULL, updated_at = c.column9
		FROM (` + valuesList(n, completeTasksCols) + `) AS c
		WHERE tasks.id = c.column1 AND tasks.state = 'running' AND tasks.lease_owner = c.column2 AND tasks.attempt = c.column3`
}

// sqlPutResults stores the results of n succeeded tasks (putResultCols
// each); rows of NULLs (padding) are left out.
func sqlPutResults(n int) string {
	return `INSERT INTO results (task_id, blob)
	SELECT column1, column2 FROM (` + valuesList(n, putResultCols) + `) WHERE column1 IS NOT NULL
	ON CONFLICT (task_id) DO UPDATE SET blob = excluded.blob`
}

// paddedRows is n rounded up to a power of two: the size of the statement
// a chunk of n completions uses.
func paddedRows(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

// completeRounds splits the indexes idx of cs into rounds in which no
// task appears twice, each at most completeRows long, in order: a task
// completed twice in one batch is ended by its first completion, and its
// second finds the lease gone, as if each were written alone.
func completeRounds(cs []tasks.Completion, idx []int) [][]int {
	var rounds [][]int
	var cur []int
	seen := map[int64]bool{}
	var later []int
	for len(idx) > 0 {
		for _, i := range idx {
			id := cs[i].Lease.TaskID
			if seen[id] || len(cur) == completeRows {
				later = append(later, i)
				continue
			}
			seen[id] = true
			cur = append(cur, i)
		}
		rounds = append(rounds, cur)
		cur, idx, later = nil, later, nil
		clear(seen)
	}
	return rounds
}

// completeOne writes the completion c with the statements of one
// completion (sqlEndAttempt, sqlComplete, sqlPutResult), cheaper than
// a chunk's for one (BenchmarkCompleteBatch/1: 80 against 94 µs); *errp
// is set if its lease did not hold.
func (s *Store) completeOne(ctx context.Context, c tasks.Completion, now time.Time, errp *error) error {
	c = c.Resolved(now)
	a := c.Attempt
	// The attempt record first, from the task row while the lease still
	// holds it (the fence); then the task.
	res, err := s.st.wEndAttempt.ExecContext(ctx, c.Lease.TaskID, c.Lease.Owner, c.Lease.Token, nullMicros(a.StartedAt),
		micros(a.EndedAt), a.Outcome, a.ExitCode, nullString(a.Reason), boolInt(a.Counted), boolInt(a.Resumed), nullString(a.Stderr), a.Work,
		specrow.ResumedFrom(a.ResumedFrom))
	if err != nil {
		return s.dbErr("complete: record attempt", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.dbErr("complete: record attempt", err)
	} else if n == 0 {
		item, err := s.leaseError(ctx, "complete", c.Lease)
		*errp = item
		return err
	}
	if _, err := s.st.wComplete.ExecContext(ctx, c.Lease.TaskID, string(c.State), boolInt(a.Counted), micros(c.RunAt),
		len(c.Result), nullString(a.Reason), micros(now), c.Lease.Owner, c.Lease.Token); err != nil {
		return s.dbErr("complete", err)
	}
	if len(c.Result) > 0 {
		if _, err := s.st.wPutResult.ExecContext(ctx, c.Lease.TaskID, c.Result); err != nil {
			return s.dbErr("complete", err)
		}
	}
	return nil
}

// completeChunk writes the completions idx of cs (no task twice) with
// three statements (one's with completeOne); errs[i] is set for each
// whose lease did not hold.
func (s *Store) completeChunk(ctx context.Context, cs []tasks.Completion, idx []int, now time.Time, errs []error) error {
	if len(idx) == 1 {
		return s.completeOne(ctx, cs[idx[0]], now, &errs[idx[0]])
	}
	n := paddedRows(len(idx))
	attempts, err := s.prepared(ctx, "complete", stmtKey{"complete attempts", n}, func() string { return sqlEndAttempts(n) })
	if err != nil {
		return err
	}
	resolved := make([]tasks.Completion, len(idx))
	args := make([]any, 0, n*endAttemptCols)
	for k, i := range idx {
		c := cs[i].Resolved(now)
		resolved[k] = c
		a := c.Attempt
		args = append(args, c.Lease.TaskID, c.Lease.Owner, c.Lease.Token, nullMicros(a.StartedAt), micros(a.EndedAt),
			a.Outcome, a.ExitCode, nullString(a.Reason), boolInt(a.Counted), boolInt(a.Resumed), nullString(a.Stderr), a.Work,
			specrow.ResumedFrom(a.ResumedFrom))
	}
	args = padArgs(args, n*endAttemptCols)
	rows, err := attempts.QueryContext(ctx, args...)
	if err != nil {
		return s.dbErr("complete: record attempts", err)
	}
	held := make(map[int64]bool, len(idx))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return s.dbErr("complete: record attempts", err)
		}
		held[id] = true
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("complete: record attempts", err)
	}
	if len(held) > 0 {
		update, err := s.prepared(ctx, "complete", stmtKey{"complete tasks", n}, func() string { return sqlCompleteTasks(n) })
		if err != nil {
			return err
		}
		args = args[:0]
		var results []any
		for _, c := range resolved {
			if !held[c.Lease.TaskID] {
				continue
			}
			args = append(args, c.Lease.TaskID, c.Lease.Owner, c.Lease.Token, string(c.State), boolInt(c.Attempt.Counted),
				micros(c.RunAt), len(c.Result), nullString(c.Attempt.Reason), micros(now))
			if len(c.Result) > 0 {
				results = append(results, c.Lease.TaskID, c.Result)
			}
		}
		if _, err := update.ExecContext(ctx, padArgs(args, n*completeTasksCols)...); err != nil {
			return s.dbErr("complete", err)
		}
		if len(results) > 0 {
			m := paddedRows(len(results) / putResultCols)
			put, err := s.prepared(ctx, "complete", stmtKey{"complete results", m}, func() string { return sqlPutResults(m) })
			if err != nil {
				return err
			}
			if _, err := put.ExecContext(ctx, padArgs(results, m*putResultCols)...); err != nil {
				return s.dbErr("complete: store results", err)
			}
		}
	}
	for _, i := range idx {
		if l := cs[i].Lease; !held[l.TaskID] {
			item, err := s.leaseError(ctx, "complete", l)
			if err != nil {
				return err
			}
			errs[i] = item
		}
	}
	return nil
}

// padArgs appends NULLs to args up to n (the padding rows).
func padArgs(args []any, n int) []any {
	for len(args) < n {
		args = append(args, nil)
	}
	return args
}

// Complete ends the attempts of cs in one transaction, each only if its
// lease still holds the task (errs[i] wraps tasks.ErrStaleLease, or
// tasks.ErrNotFound, otherwise; tasks.ErrInvalidState for a State that
// does not end an attempt). For each: the task takes c.State (see
// tasks.Completion.State for when the store changes it), a requeued task
// becomes ready at c.RunAt (now when zero), a succeeded task stores
// c.Result, any other stores c.Attempt.Reason (when set) as LastError, a
// counted attempt adds one failure, a terminal state sets FinishedAt, and
// the attempt record is kept (StartedAt defaults to the claim time,
// EndedAt to now, Outcome to one derived from the state, Resumed is also
// set when the attempt was handed a checkpoint). The checkpoint is kept in
// every case; the snapshot is kept unless the task ended (dropped then),
// and the task's lost streak ends. When the batch itself fails, err is
// set and every errs[i] is err.
func (s *Store) Complete(ctx context.Context, cs []tasks.Completion) (errs []error, err error) {
	errs = make([]error, len(cs))
	if len(cs) == 0 {
		return errs, nil
	}
	now := s.clock()
	err = s.write(ctx, "complete", func(ctx context.Context) error {
		clear(errs)
		idx := make([]int, 0, len(cs))
		for i, c := range cs {
			switch c.State {
			case tasks.StateSucceeded, tasks.StateQueued, tasks.StateDead, tasks.StateCancelled:
				idx = append(idx, i)
			default:
				errs[i] = fmt.Errorf("sqlite: complete: task %d: %w: an attempt cannot end in state %q",
					c.Lease.TaskID, tasks.ErrInvalidState, c.State)
			}
		}
		for _, round := range completeRounds(cs, idx) {
			if err := s.completeChunk(ctx, cs, round, now, errs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs, err
	}
	s.sweepSoon() // at most once a minute: the files of the snapshots of tasks that ended
	return errs, nil
}
