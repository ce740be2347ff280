package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// clock is the store's now, at the stored precision.
func (s *Store) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// write runs fn in one IMMEDIATE transaction on the writer connection and
// commits it when fn returns nil; it rolls the transaction back when fn
// fails or ctx is done by then.
//
// Transactions take turns on the connection (wturn). Waiting for the turn,
// and for another process's write transaction (the busy timeout of BEGIN
// IMMEDIATE), ends when ctx is done. fn runs its statements with a
// context that is never done: once BEGIN IMMEDIATE holds the write lock,
// a statement waits for no lock, and the driver then skips the
// cancellation watch (a goroutine) it sets up for each statement run with
// a context that can end. BEGIN, COMMIT and ROLLBACK are statements
// prepared once (database/sql's Tx prepares BEGIN and COMMIT on every
// transaction).
func (s *Store) write(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	select {
	case s.wturn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("sqlite: %s: begin: %w", op, ctx.Err())
	}
	defer func() { <-s.wturn }()
	if _, err := s.st.wBegin.ExecContext(ctx); err != nil {
		// The driver reports a BEGIN during which ctx ended as failed,
		// even one that took effect: leave no transaction open.
		s.rollback()
		return fmt.Errorf("sqlite: %s: begin: %w", op, err)
	}
	wctx := context.WithoutCancel(ctx)
	if err := fn(wctx); err != nil {
		s.rollback()
		return err
	}
	if err := ctx.Err(); err != nil {
		s.rollback()
		return fmt.Errorf("sqlite: %s: commit: %w", op, err)
	}
	if _, err := s.st.wCommit.ExecContext(wctx); err != nil {
		s.rollback()
		return fmt.Errorf("sqlite: %s: commit: %w", op, err)
	}
	return nil
}

// rollback ends the transaction of the writer connection, if one is open
// (SQLite may have rolled it back already, after an error).
func (s *Store) rollback() {
	_, _ = s.st.wRollback.ExecContext(context.Background())
}

// dbErr wraps a database failure of op.
func (s *Store) dbErr(op string, err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR:
		return fmt.Errorf("sqlite: %s: cannot write the store %s (is its disk full, or the file size limited?); "+
			"the write was rolled back and nothing stored before is lost: %w", op, s.path, err)
	case sqlite3.SQLITE_READONLY:
		return fmt.Errorf("sqlite: %s: the store %s has become read-only; the write was rolled back: %w", op, s.path, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// PutModule stores wasm under its hex sha256 and returns the hash. Storing
// the same bytes again stores nothing new. Empty bytes are refused.
func (s *Store) PutModule(ctx context.Context, wasm []byte) (string, error) {
	h, err := specrow.ModuleHash("sqlite", wasm)
	if err != nil {
		return "", err
	}
	now := s.clock()
	err = s.write(ctx, "put module", func(ctx context.Context) error {
		if _, err := s.st.wPutModule.ExecContext(ctx, h, wasm, len(wasm), micros(now)); err != nil {
			return s.dbErr("put module", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return h, nil
}

// Module returns the bytes of the module with that hex sha256, or an error
// wrapping tasks.ErrModuleNotFound.
func (s *Store) Module(ctx context.Context, sha256 string) ([]byte, error) {
	return specrow.Module("sqlite", sha256, func() ([]byte, error) {
		var b []byte
		err := s.st.rModule.QueryRowContext(ctx, sha256).Scan(&b)
		return b, err
	}, sql.ErrNoRows, s.dbErr)
}

// MaxInput is the largest task input the store takes: SQLite's limit on
// one value (SQLITE_MAX_LENGTH).
const MaxInput = 1_000_000_000

// Submit validates spec (tasks.Spec.Validate), fills in its defaults and
// queues it, ready at spec.RunAt (now when zero). With an IdempotencyKey
// already used it returns that first task, whatever its state and spec, and
// existing=true.
func (s *Store) Submit(ctx context.Context, spec tasks.Spec) (task tasks.Task, existing bool, err error) {
	now := s.clock()
	row, err := specrow.New(spec, now, MaxInput)
	if err != nil {
		return tasks.Task{}, false, fmt.Errorf("sqlite: submit: %w", err)
	}
	err = s.write(ctx, "submit", func(ctx context.Context) error {
		if err := s.moduleStored(ctx, row.Spec.Module); err != nil {
			return fmt.Errorf("sqlite: submit: %w", err)
		}
		task, existing, err = s.insertTask(ctx, row, now)
		return err
	})
	if err != nil {
		return tasks.Task{}, false, err
	}
	if !existing {
		s.wake.ping()
	}
	return task, existing, nil
}

// moduleStored checks, in a write transaction, that the module is
// stored: an error wrapping tasks.ErrModuleNotFound when not.
func (s *Store) moduleStored(ctx context.Context, module string) error {
	var one int
	err := s.st.wModuleExists.QueryRowContext(ctx, module).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s (store it first)", tasks.ErrModuleNotFound, module)
	}
	if err != nil {
		return s.dbErr("submit", err)
	}
	return nil
}

// insertTask inserts the task of r, in a write transaction, or returns
// the task that holds its idempotency key (existing).
func (s *Store) insertTask(ctx context.Context, r specrow.Row, now time.Time) (task tasks.Task, existing bool, err error) {
	spec := r.Spec
	task, err = scanTask(s.st.wInsertTask.QueryRowContext(ctx,
		spec.Module, len(spec.Input), r.Args, r.Env, r.Mounts, r.Limits, spec.MaxAttempts, spec.Priority,
		spec.Queue, nullString(spec.IdempotencyKey), micros(r.RunAt),
		micros(now), micros(now), r.Labels, nullString(spec.Export), nullString(spec.OnRetry), spec.Tenant))
	if err == nil && len(spec.Input) > 0 {
		// The task row came back without its input, not stored yet.
		task.Input = bytes.Clone(spec.Input)
		_, err = s.st.wInsertInput.ExecContext(ctx, task.ID, spec.Input)
	}
	if errors.Is(err, sql.ErrNoRows) {
		// ON CONFLICT DO NOTHING: the idempotency key is taken. Writes
		// are serialized (IMMEDIATE), so the first task is there.
		existing = true
		task, err = scanTask(s.st.wTaskByKey.QueryRowContext(ctx, spec.IdempotencyKey))
	}
	if err != nil {
		return tasks.Task{}, false, s.dbErr("submit", err)
	}
	return task, existing, nil
}

// Get returns the task with that id, or an error wrapping tasks.ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (tasks.Task, error) {
	t, err := scanTask(s.st.rTaskByID.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return tasks.Task{}, fmt.Errorf("sqlite: task %d: %w", id, tasks.ErrNotFound)
	}
	if err != nil {
		return tasks.Task{}, s.dbErr("get", err)
	}
	return t, nil
}

// DefaultListLimit is the page size of List when ListFilter.Limit is 0.
const DefaultListLimit = 100

// stateCond is the condition on a task row of a List's state: a known
// constant (checked), written into the query so that SQLite can use the
// partial index for that state. StateClaimed is stored as running.
func stateCond(st tasks.State) string {
	if st == tasks.StateClaimed {
		return `state = 'running' AND began_at IS NULL`
	}
	return `state = '` + string(st) + `'`
}

// listIndex is how List finds the tasks in a state: the partial index that
// holds them (then sorted by id, except for tasks_failed, which is in id
// order) with the term that lets SQLite use it; no index (a walk by id)
// for succeeded tasks, most of the table.
var listIndex = map[tasks.State][2]string{
	tasks.StateQueued:    {"INDEXED BY tasks_ready", ""},
	tasks.StateRunning:   {"INDEXED BY tasks_leases", ""},
	tasks.StateClaimed:   {"INDEXED BY tasks_leases", ""},
	tasks.StateDead:      {"INDEXED BY tasks_failed", " AND state IN ('dead', 'cancelled')"},
	tasks.StateCancelled: {"INDEXED BY tasks_failed", " AND state IN ('dead', 'cancelled')"},
}

// List returns the tasks matching f by ascending id (an empty, non-nil
// slice when none).
func (s *Store) List(ctx context.Context, f tasks.ListFilter) ([]tasks.Task, error) {
	if f.State != "" && !f.State.Valid() && f.State != tasks.StateClaimed {
		return nil, fmt.Errorf("sqlite: list: unknown state %q", f.State)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	// The state is a known constant (checked above), written into the
	// query so that SQLite can use the partial index for that state.
	idx := listIndex[f.State]
	q := `SELECT ` + listCols + ` FROM tasks ` + idx[0] + ` WHERE id > ?`
	args := []any{f.AfterID}
	if f.State != "" {
		q += ` AND ` + stateCond(f.State) + idx[1]
	}
	if f.Queue != "" {
		q += ` AND queue = ?`
		args = append(args, f.Queue)
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr("list", err)
	}
	out, err := scanTasks(rows)
	if err != nil {
		return nil, s.dbErr("list", err)
	}
	if out == nil {
		out = []tasks.Task{}
	}
	return out, nil
}

// Attempts returns the task's attempt records, oldest first; an error
// wrapping tasks.ErrNotFound for an unknown task.
func (s *Store) Attempts(ctx context.Context, id int64) ([]tasks.Attempt, error) {
	rows, err := s.st.rAttempts.QueryContext(ctx, id)
	if err != nil {
		return nil, s.dbErr("attempts", err)
	}
	defer rows.Close()
	out := []tasks.Attempt{}
	for rows.Next() {
		a := tasks.Attempt{TaskID: id}
		var started, ended sql.NullInt64
		var reason, stderr sql.NullString
		var counted, resumed int64
		var from sql.NullString
		if err := rows.Scan(&a.Number, &a.Owner, &started, &ended, &a.Outcome, &a.ExitCode, &reason, &counted, &resumed, &stderr, &a.Work, &from); err != nil {
			return nil, s.dbErr("attempts", err)
		}
		a.StartedAt, a.EndedAt, a.ResumedFrom = fromMicros(started), fromMicros(ended), specrow.ReadResumedFrom(from.String)
		a.Reason, a.Counted, a.Resumed, a.Stderr = reason.String, counted != 0, resumed != 0, stderr.String
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("attempts", err)
	}
	if len(out) == 0 {
		var one int
		err := s.st.rExists.QueryRowContext(ctx, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: attempts of task %d: %w", id, tasks.ErrNotFound)
		}
		if err != nil {
			return nil, s.dbErr("attempts", err)
		}
	}
	return out, nil
}

// Checkpoint returns the task's stored checkpoint: nil if none, a non-nil
// (possibly empty) slice otherwise; an error wrapping tasks.ErrNotFound for
// an unknown task.
func (s *Store) Checkpoint(ctx context.Context, id int64) ([]byte, error) {
	var size int
	var blob []byte
	err := s.st.rCheckpoint.QueryRowContext(ctx, id).Scan(&size, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: checkpoint of task %d: %w", id, tasks.ErrNotFound)
	}
	if err != nil {
		return nil, s.dbErr("checkpoint", err)
	}
	return tasks.CheckpointOf(size, blob), nil
}

// stmtKey names a statement whose text depends on a count: the claim
// of n queues, the insert of n tasks (claimed or not).
type stmtKey struct {
	kind string
	n    int
}

// prepared is the statement of key, its text built by query, prepared
// once on the writer connection (in a write transaction: the connection
// is used by one goroutine at a time). The text is built only the first
// time: a claim's is built from its number of queues, an insert's is
// 10 KB. op names the caller in errors.
func (s *Store) prepared(ctx context.Context, op string, key stmtKey, query func() string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.wStmts[key]; ok {
		return st, nil
	}
	if s.wStmts == nil {
		return nil, fmt.Errorf("sqlite: %s: the store is closed", op)
	}
	st, err := s.wc.PrepareContext(ctx, query())
	if err != nil {
		return nil, s.dbErr(op+": prepare", err)
	}
	s.wStmts[key] = st
	return st, nil
}

// Claim first reaps the expired leases of every queue: each such attempt
// is recorded as "lost" (not counted, ended at the lease expiry), its
// task's lost streak grows by one, and the task goes back to the queue,
// ready since the lease expired (dead when its streak reaches
// req.LostLimit, see tasks.Store.Claim; cancelled when cancellation was
// requested). It looks
// for them only when one may have expired: a lease this Store granted or
// extended is taken over by the first claim after its expiry, one another
// process wrote (another Store on the same file) at most half a second
// later. Then it moves up to req.Max ready tasks to running, by priority
// (highest first), RunAt, then id, each with its checkpoint. With
// req.Queues non-nil it claims only from the listed queues with a positive
// maximum, up to that maximum each. req.Max <= 0 claims nothing; req.Owner
// must be set and req.Lease positive.
func (s *Store) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	if req.Owner == "" {
		return nil, errors.New("sqlite: claim: empty owner")
	}
	if req.Lease <= 0 {
		return nil, fmt.Errorf("sqlite: claim: lease %v is not positive", req.Lease)
	}
	if req.Max <= 0 {
		return nil, nil
	}
	req, exceptPaused, none, err := s.unpaused(ctx, req)
	if err != nil || none {
		return nil, err
	}
	var queues []string
	if req.Queues != nil {
		for q, n := range req.Queues {
			if n > 0 {
				queues = append(queues, q)
			}
		}
		if len(queues) == 0 {
			return nil, nil
		}
		slices.Sort(queues)
	}
	now := s.clock()
	expiry := now.Add(req.Lease)
	args := []any{req.Owner, micros(expiry), micros(now), req.Max}
	for _, q := range queues {
		args = append(args, q, min(req.Queues[q], req.Max))
	}

	var out []tasks.Claimed
	var reaped int64
	var order []int64 // a fair claim's order (nil: the claim order below)
	err = s.write(ctx, "claim", func(ctx context.Context) error {
		out, reaped, order = nil, 0, nil
		if s.reaper.needed(micros(now)) {
			var err error
			if reaped, err = s.reap(ctx, micros(now), req.LostLimit); err != nil {
				return err
			}
		}
		tenanted, err := s.tenanted(ctx)
		if err != nil {
			return err
		}
		var rows *sql.Rows
		if tenanted {
			rows, order, err = s.claimFair(ctx, req, queues, now, expiry)
		} else {
			rows, err = s.claimOrdered(ctx, exceptPaused, queues, args)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r taskRow
			var blob []byte
			if err := rows.Scan(append(r.dest(), &blob)...); err != nil {
				return s.dbErr("claim", err)
			}
			t, err := r.task()
			if err != nil {
				return err
			}
			if out == nil { // sized once: a Claimed is large to copy as out grows
				out = make([]tasks.Claimed, 0, min(req.Max, 256))
			}
			out = append(out, tasks.Claimed{
				Task:       t,
				Lease:      tasks.Lease{TaskID: t.ID, Owner: req.Owner, Token: t.Attempt},
				Checkpoint: tasks.CheckpointOf(t.CheckpointSize, blob),
			})
		}
		if err := rows.Err(); err != nil {
			return s.dbErr("claim", err)
		}
		if len(out) > 0 {
			s.reaper.leased(micros(expiry))
		}
		return nil
	})
	if err != nil {
		// The reaper may have counted on a reap that was rolled back.
		s.reaper.reset()
		return nil, err
	}
	if reaped > 0 {
		s.reaper.lost.Add(reaped)
		s.log.Warn("took over expired leases", zap.Int64("attempts_lost", reaped), zap.String("owner", req.Owner))
	}
	s.sweepSoon() // at most once a minute: the files of snapshots dropped meanwhile
	tasks.SortClaimed(out, order)
	return out, nil
}

// claimOrdered runs the claim statement while no queued task names a
// tenant: the first ready tasks in claim order, of queues (nil: every
// queue, skipping the paused ones when exceptPaused), args being its
// parameters.
func (s *Store) claimOrdered(ctx context.Context, exceptPaused bool, queues []string, args []any) (*sql.Rows, error) {
	st := s.st.wClaimAll
	if exceptPaused {
		var err error
		if st, err = s.prepared(ctx, "claim", stmtKey{"claim unpaused", 0},
			func() string { return claimAllUnpausedSQL }); err != nil {
			return nil, err
		}
	}
	if queues != nil {
		var err error
		if st, err = s.prepared(ctx, "claim", stmtKey{"claim", len(queues)},
			func() string { return claimQueuesSQL(len(queues)) }); err != nil {
			return nil, err
		}
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.dbErr("claim", err)
	}
	return rows, nil
}

// leaseError explains why a write carrying lease l changed nothing:
// tasks.ErrNotFound or tasks.ErrStaleLease (as item), or a database
// failure (as err).
func (s *Store) leaseError(ctx context.Context, op string, l tasks.Lease) (item, err error) {
	var state, owner string
	var attempt int
	err = s.st.wLeaseOf.QueryRowContext(ctx, l.TaskID).Scan(&state, &owner, &attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s: task %d: %w", op, l.TaskID, tasks.ErrNotFound), nil
	}
	if err != nil {
		return nil, s.dbErr(op, err)
	}
	now := fmt.Sprintf("the task is %s", state)
	if state == string(tasks.StateRunning) {
		now += fmt.Sprintf(" as attempt %d of %q", attempt, owner)
	}
	return fmt.Errorf("sqlite: %s: task %d attempt %d of %q: %w (%s)", op, l.TaskID, l.Token, l.Owner,
		tasks.ErrStaleLease, now), nil
}

// stateError explains why an operation that applies to some states
// changed nothing: tasks.ErrNotFound or tasks.ErrInvalidState.
func (s *Store) stateError(ctx context.Context, op string, id int64) error {
	var state string
	err := s.st.wLeaseOf.QueryRowContext(ctx, id).Scan(&state, new(string), new(int))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s: task %d: %w", op, id, tasks.ErrNotFound)
	}
	if err != nil {
		return s.dbErr(op, err)
	}
	return fmt.Errorf("sqlite: %s: task %d is %s: %w", op, id, state, tasks.ErrInvalidState)
}

// Heartbeat extends every lease still held to now+extend, in one
// transaction. A lease is lost when its task is no longer running under
// that owner and token (an expired lease that nobody took over is still
// held, and renewed). cancel lists the held leases whose task's
// cancellation was requested.
func (s *Store) Heartbeat(ctx context.Context, leases []tasks.Lease, extend time.Duration) (lost, cancel []tasks.Lease, err error) {
	if len(leases) == 0 {
		return nil, nil, nil
	}
	if extend <= 0 {
		return nil, nil, fmt.Errorf("sqlite: heartbeat: extension %v is not positive", extend)
	}
	now := s.clock()
	expiry := micros(now.Add(extend))
	err = s.write(ctx, "heartbeat", func(ctx context.Context) error {
		lost, cancel = nil, nil
		st := s.st.wHeartbeat
		for _, l := range leases {
			var c int64
			err := st.QueryRowContext(ctx, expiry, micros(now), l.TaskID, l.Owner, l.Token).Scan(&c)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				lost = append(lost, l)
			case err != nil:
				return s.dbErr("heartbeat", err)
			case c != 0:
				cancel = append(cancel, l)
			}
		}
		if len(lost) < len(leases) {
			// An extension may shorten a lease.
			s.reaper.leased(expiry)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return lost, cancel, nil
}

// SaveCheckpoint replaces the task's checkpoint with blob (nil stores an
// empty checkpoint) if lease still holds the task, drops the task's
// snapshot (the newer of the two wins; its file is deleted after the
// commit) and ends its lost streak; it has committed when it returns nil.
func (s *Store) SaveCheckpoint(ctx context.Context, lease tasks.Lease, blob []byte) error {
	if blob == nil {
		blob = []byte{}
	}
	now := micros(s.clock())
	var file sql.NullString
	err := s.write(ctx, "save checkpoint", func(ctx context.Context) error {
		file = sql.NullString{}
		var snapshots bool
		err := s.st.wCheckpointTask.QueryRowContext(ctx, len(blob), now, lease.TaskID, lease.Owner, lease.Token).Scan(&snapshots)
		if errors.Is(err, sql.ErrNoRows) {
			item, err := s.leaseError(ctx, "save checkpoint", lease)
			return errors.Join(item, err)
		}
		if err != nil {
			return s.dbErr("save checkpoint", err)
		}
		if _, err := s.st.wCheckpointBlob.ExecContext(ctx, lease.TaskID, blob, now); err != nil {
			return s.dbErr("save checkpoint", err)
		}
		if snapshots {
			if file, err = s.dropSnapshotRow(ctx, lease.TaskID); err != nil {
				return s.dbErr("save checkpoint: drop the snapshot", err)
			}
		}
		return nil
	})
	if err == nil && file.Valid {
		s.removeSnapshotFile(file.String)
	}
	return err
}

// Progress records done of total if lease still holds the task.
func (s *Store) Progress(ctx context.Context, lease tasks.Lease, done, total int64) error {
	now := micros(s.clock())
	return s.write(ctx, "progress", func(ctx context.Context) error {
		res, err := s.st.wProgress.ExecContext(ctx, done, total, now, lease.TaskID, lease.Owner, lease.Token)
		if err != nil {
			return s.dbErr("progress", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.dbErr("progress", err)
		} else if n == 0 {
			item, err := s.leaseError(ctx, "progress", lease)
			return errors.Join(item, err)
		}
		return nil
	})
}

// MarkBegun records, in one transaction, that workers began the attempts
// of leases; a lease no longer held, or already marked, is skipped.
func (s *Store) MarkBegun(ctx context.Context, leases []tasks.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	now := micros(s.clock())
	return s.write(ctx, "mark begun", func(ctx context.Context) error {
		for _, l := range leases {
			if _, err := s.st.wMarkBegun.ExecContext(ctx, now, l.TaskID, l.Owner, l.Token); err != nil {
				return s.dbErr("mark begun", err)
			}
		}
		return nil
	})
}

// Release puts back in the queue, in one transaction, the tasks of the
// leases that still hold them, as if they had not been claimed: attempt
// number restored (the next claim hands out the same token again), lease
// cleared, no attempt recorded, failures, run_at and checkpoint unchanged;
// a task whose cancellation was requested becomes cancelled instead. A
// lease that no longer holds its task (ended, taken over, released
// already, unknown task) is skipped.
func (s *Store) Release(ctx context.Context, leases []tasks.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	now := micros(s.clock())
	var n int64
	err := s.write(ctx, "release", func(ctx context.Context) error {
		n = 0
		st := s.st.wRelease
		for _, l := range leases {
			res, err := st.ExecContext(ctx, now, l.TaskID, l.Owner, l.Token)
			if err != nil {
				return s.dbErr("release", err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return s.dbErr("release", err)
			}
			n += k
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n > 0 {
		s.wake.ping() // the released tasks are ready: ListenWakeups' contract
	}
	s.log.Debug("released claimed tasks", zap.Int64("tasks", n), zap.Int("leases", len(leases)))
	return nil
}

// Cancel cancels a queued task at once (FinishedAt set), or sets
// CancelRequested on a running one and returns it still running (the
// worker sees it in Heartbeat's cancel list and ends the attempt). An
// error wraps tasks.ErrInvalidState for a terminal task, tasks.ErrNotFound
// for an unknown one.
func (s *Store) Cancel(ctx context.Context, id int64) (tasks.Task, error) {
	now := micros(s.clock())
	var t tasks.Task
	err := s.write(ctx, "cancel", func(ctx context.Context) error {
		var err error
		t, err = scanTask(s.st.wCancel.QueryRowContext(ctx, now, id))
		if errors.Is(err, sql.ErrNoRows) {
			return s.stateError(ctx, "cancel", id)
		}
		if err != nil {
			return s.dbErr("cancel", err)
		}
		return nil
	})
	return t, err
}

// Retry puts a dead or cancelled task back in the queue, ready now, with
// its failure count, lost streak and cancellation request reset (its
// attempt number, history and checkpoint are kept; it has no snapshot,
// dropped when it ended). An error wraps tasks.ErrInvalidState
// for a task in another state, tasks.ErrNotFound for an unknown one.
func (s *Store) Retry(ctx context.Context, id int64) (tasks.Task, error) {
	now := micros(s.clock())
	var t tasks.Task
	err := s.write(ctx, "retry", func(ctx context.Context) error {
		var err error
		t, err = scanTask(s.st.wRetry.QueryRowContext(ctx, now, id))
		if errors.Is(err, sql.ErrNoRows) {
			return s.stateError(ctx, "retry", id)
		}
		if err != nil {
			return s.dbErr("retry", err)
		}
		return nil
	})
	if err == nil {
		s.wake.ping()
	}
	return t, err
}

// RecoverRunning puts every running task back in the queue, ready now,
// with its lease cleared, its attempt recorded as "lost" and not counted,
// and its lost streak grown by one (tasks.Store.RecoverRunning): a task whose
// streak reaches lostLimit (0: tasks.DefaultLostLimit) is dead instead,
// one whose cancellation was requested cancelled. Call it only while
// holding the store exclusively (after Open with Options.Exclusive): it
// also ends the attempts of any other process still running on the file.
func (s *Store) RecoverRunning(ctx context.Context, lostLimit int) (int, error) {
	now := micros(s.clock())
	limit := tasks.LostLimit(lostLimit)
	why := tasks.LostLimitReason(limit)
	var n int64
	err := s.write(ctx, "recover running", func(ctx context.Context) error {
		res, err := s.st.wRecoverAttempts.ExecContext(ctx, now, limit, why)
		if err != nil {
			return s.dbErr("recover running", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return s.dbErr("recover running", err)
		}
		if n > 0 {
			if _, err := s.st.wRecoverTasks.ExecContext(ctx, now, limit, why); err != nil {
				return s.dbErr("recover running", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		s.reaper.lost.Add(n)
		s.log.Info("recovered tasks left running", zap.Int64("tasks", n), zap.String("path", s.path))
		// Tasks it made dead dropped their snapshots: their files go.
		s.sweepNow(ctx)
	}
	return int(n), nil
}
