package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// The columns scanned into a tasks.Task, in taskRow.dest order, are
// taskColsA, the input, taskColsB, the result, taskColsC.
const (
	taskColsA = `id, module, `
	taskColsB = `, args, env, mounts, limits, max_attempts, priority, queue,
	idempotency_key, run_at, state, attempt, failures, lease_owner, lease_expiry, started_at, began_at, cancel_requested,
	checkpoint_size, progress_done, progress_total, `
	taskColsC = `, last_error, created_at, updated_at, finished_at, input_size, result_size, labels, export, on_retry,
	snapshots, lost_streak, tenant, ` + snapshotCol
)

// snapshotCol reads what describes a task's snapshot, without its blob,
// as the JSON array tasks.DecodeSnapshotInfo decodes (NULL: none). Only a task that
// stored one and has not ended looks it up (a task's snapshot is dropped
// when it ends).
const snapshotCol = `CASE WHEN snapshots > 0 AND state IN ('queued', 'running') THEN
	(SELECT json_array(s.size, s.taken_at, s.owner, s.attempt, s.work, s.run_time, s.suspended)
		FROM snapshots s WHERE s.task_id = tasks.id) END`

// taskCols read a task whole, its input and result from their tables
// (looked up only when not empty).
const taskCols = taskColsA +
	`CASE WHEN input_size > 0 THEN (SELECT i.blob FROM inputs i WHERE i.task_id = tasks.id) END` + taskColsB +
	`CASE WHEN result_size > 0 THEN (SELECT r.blob FROM results r WHERE r.task_id = tasks.id) END` + taskColsC

// listCols read a task without its input and result (List).
const listCols = taskColsA + `NULL` + taskColsB + `NULL` + taskColsC

// The claim and reap statements name their index (INDEXED BY): without
// statistics, SQLite's planner prefers tasks_state's equality on state and
// then sorts every ready task, which is O(backlog) per claim.
//
// Parameters of the claim statements: ?1 owner, ?2 lease expiry, ?3 now,
// ?4 the most tasks to claim; per-queue statements add (queue, max) pairs
// from ?5 on.
//
// Every LIMIT is written +?N, not ?N: SQLite peeks at the value bound to a
// bare LIMIT parameter when it plans the statement, and then re-prepares
// (parses and plans again) the statement every time a different value is
// bound, which a pool whose free slots vary does on most claims (measured:
// a re-prepare cost about as much as the rest of a small claim). The unary
// plus makes the limit an expression SQLite does not peek at; the plan is
// the same (TestClaimPlans), as the INDEXED BY terms fix it anyway.
const claimSet = `UPDATE tasks SET state = 'running', attempt = attempt + 1,
	lease_owner = ?1, lease_expiry = ?2, started_at = ?3, updated_at = ?3, began_at = NULL,
	resumed = (checkpoint_size >= 0), resumed_from = NULL
WHERE id IN (`

// A claim returns inputs and checkpoints of up to tasks.ClaimInline
// (65536) bytes; larger ones are read when their attempt starts.
const claimReturning = `)
RETURNING ` + taskColsA +
	`CASE WHEN input_size BETWEEN 1 AND 65536 THEN (SELECT i.blob FROM inputs i WHERE i.task_id = tasks.id) END` + taskColsB +
	`CASE WHEN result_size > 0 THEN (SELECT r.blob FROM results r WHERE r.task_id = tasks.id) END` + taskColsC +
	`, CASE WHEN checkpoint_size BETWEEN 0 AND 65536 THEN (SELECT c.blob FROM checkpoints c WHERE c.task_id = tasks.id) END`

const readyOrder = `ORDER BY priority DESC, run_at, id`

const claimAllSQL = claimSet + `SELECT id FROM tasks INDEXED BY tasks_ready WHERE state = 'queued' AND run_at <= ?3 ` + readyOrder + ` LIMIT +?4` + claimReturning

// claimQueuesSQL is the claim statement for n queues: the first ready
// tasks of each queue up to its maximum, merged in claim order up to ?4.
// It runs only while no queued task names a tenant (else claimFair), so
// every ready task is the empty tenant's: tenant = ” puts the scan on the
// index, which leads with the tenant.
func claimQueuesSQL(n int) string {
	var b strings.Builder
	b.WriteString(claimSet)
	b.WriteString(`SELECT id FROM (`)
	for i := range n {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		fmt.Fprintf(&b, `SELECT * FROM (SELECT id, priority, run_at FROM tasks INDEXED BY tasks_ready_queue
			WHERE state = 'queued' AND queue = ?%d AND tenant = '' AND run_at <= ?3 %s LIMIT +?%d)`, 5+2*i, readyOrder, 6+2*i)
	}
	b.WriteString(`) ` + readyOrder + ` LIMIT +?4`)
	b.WriteString(claimReturning)
	return b.String()
}

// nextState is the state a completion (?2 its asked state, ?3 1 when
// counted) leaves the task in: a requeue becomes cancelled when cancel
// was requested, dead when the attempts are used up.
const nextState = `(CASE WHEN ?2 <> 'queued' THEN ?2
	WHEN cancel_requested <> 0 THEN 'cancelled'
	WHEN failures + ?3 >= max_attempts THEN 'dead'
	ELSE 'queued' END)`

// The task a lost attempt (?2 the lost-attempt limit, ?3 its reason)
// leaves: lostAtLimit is whether its lost streak reaches the limit with
// this one, lostState its next state (cancelled when cancellation was
// requested, else dead at the limit, else queued), lostSuffix what its
// reasons end with (at the limit, the limit's reason).
const (
	lostAtLimit = `(cancel_requested = 0 AND lost_streak + 1 >= ?2)`
	lostState   = `(CASE WHEN cancel_requested <> 0 THEN 'cancelled' WHEN ` + lostAtLimit + ` THEN 'dead' ELSE 'queued' END)`
	lostSuffix  = `(CASE WHEN ` + lostAtLimit + ` THEN '; ' || ?3 ELSE '' END)`
)

// Lease fence: ?A id, ?B owner, ?C token, numbered per statement.
const fence = `id = ?%d AND state = 'running' AND lease_owner = ?%d AND attempt = ?%d`

// lostResumed are the resumed and resumed_from columns of a lost
// attempt's record: the claim's resumed (a checkpoint), or'ed with the
// snapshot the attempt resumed from (MarkResumed).
const lostResumed = `max(resumed, resumed_from IS NOT NULL), resumed_from`

var (
	sqlPutModule = `INSERT INTO modules (sha256, bytes, size, created) VALUES (?, ?, ?, ?)
		ON CONFLICT (sha256) DO NOTHING`
	sqlModuleExists = `SELECT 1 FROM modules WHERE sha256 = ?`
	sqlInsertTask   = `INSERT INTO tasks (module, input_size, args, env, mounts, limits, max_attempts, priority, queue,
		idempotency_key, run_at, state, created_at, updated_at, labels, export, on_retry, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)
		ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING ` + taskCols
	sqlInsertInput = `INSERT INTO inputs (task_id, blob) VALUES (?, ?)`
	sqlTaskByKey   = `SELECT ` + taskCols + ` FROM tasks WHERE idempotency_key = ?`
	sqlTaskByID    = `SELECT ` + taskCols + ` FROM tasks WHERE id = ?`
	sqlLeaseOf     = `SELECT state, coalesce(lease_owner, ''), attempt FROM tasks WHERE id = ?`
	// Takeovers: ?1 now, ?2 the lost-attempt limit, ?3 its reason
	// (tasks.LostLimitReason). A lost attempt is not counted; the task's
	// lost streak grows, and at the limit it is dead (lostAtLimit).
	sqlReapAttempts = `INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, reason, counted, resumed,
		resumed_from)
		SELECT id, attempt, lease_owner, started_at, lease_expiry, 'lost', -1,
			'lease of ' || lease_owner || ' expired without a heartbeat' || ` + lostSuffix + `, 0, ` + lostResumed + `
		FROM tasks INDEXED BY tasks_leases WHERE state = 'running' AND lease_expiry < ?1`
	sqlReapTasks = `UPDATE tasks INDEXED BY tasks_leases SET
			lost_streak = lost_streak + 1,
			state = ` + lostState + `,
			finished_at = CASE WHEN cancel_requested <> 0 OR lost_streak + 1 >= ?2 THEN ?1 END,
			run_at = lease_expiry,
			last_error = 'attempt ' || attempt || ' lost: lease of ' || lease_owner || ' expired without a heartbeat' || ` + lostSuffix + `,
			lease_owner = NULL, lease_expiry = NULL, updated_at = ?1
		WHERE state = 'running' AND lease_expiry < ?1`
	sqlEarliestLease = `SELECT min(lease_expiry) FROM tasks INDEXED BY tasks_leases WHERE state = 'running'`
	sqlClaimAll      = claimAllSQL
	// ?1 expiry, ?2 now, fence ?3..?5.
	sqlHeartbeat = `UPDATE tasks SET lease_expiry = ?1, updated_at = ?2 WHERE ` + fmt.Sprintf(fence, 3, 4, 5) +
		` RETURNING cancel_requested`
	// ?1 size, ?2 now, fence ?3..?5. It returns whether the task stored
	// snapshots (the one it has is dropped: the newer wins).
	sqlCheckpointTask = `UPDATE tasks SET checkpoint_size = ?1, lost_streak = 0, updated_at = ?2 WHERE ` + fmt.Sprintf(fence, 3, 4, 5) +
		` RETURNING snapshots > 0`
	sqlDropSnapshot   = `DELETE FROM snapshots WHERE task_id = ? RETURNING file`
	sqlCheckpointBlob = `INSERT INTO checkpoints (task_id, blob, updated) VALUES (?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET blob = excluded.blob, updated = excluded.updated`
	// ?1 now, fence ?2..?4: a worker began the attempt (MarkBegun).
	sqlMarkBegun = `UPDATE tasks SET began_at = ?1 WHERE began_at IS NULL AND ` + fmt.Sprintf(fence, 2, 3, 4)
	// ?1 the snapshot resumed from (JSON; NULL: none), fence ?2..?4 (MarkResumed).
	sqlMarkResumed = `UPDATE tasks SET resumed_from = ?1 WHERE ` + fmt.Sprintf(fence, 2, 3, 4)
	// ?1 done, ?2 total, ?3 now, fence ?4..?6.
	sqlProgress = `UPDATE tasks SET progress_done = ?1, progress_total = ?2, updated_at = ?3 WHERE ` + fmt.Sprintf(fence, 4, 5, 6)
	// ?1 id, ?2 state, ?3 counted, ?4 run_at, ?5 result size, ?6 reason, ?7 now, ?8 owner, ?9 token.
	sqlComplete = `UPDATE tasks SET
			state = ` + nextState + `,
			finished_at = CASE WHEN ` + nextState + ` = 'queued' THEN NULL ELSE ?7 END,
			run_at = CASE WHEN ` + nextState + ` = 'queued' THEN ?4 ELSE run_at END,
			result_size = CASE WHEN ?2 = 'succeeded' THEN ?5 ELSE result_size END,
			last_error = CASE WHEN ?2 <> 'succeeded' AND ?6 IS NOT NULL THEN ?6 ELSE last_error END,
			failures = failures + ?3, lost_streak = 0,
			lease_owner = NULL, lease_expiry = NULL, updated_at = ?7
		WHERE ` + fmt.Sprintf(fence, 1, 8, 9)
	// The result of a succeeded task; written after sqlComplete, in the
	// same transaction, when not empty.
	sqlPutResult = `INSERT INTO results (task_id, blob) VALUES (?, ?)
		ON CONFLICT (task_id) DO UPDATE SET blob = excluded.blob`
	// The record of the attempt a completion ends, taken from the task
	// while the lease holds it: nothing when it does not. Fence ?1..?3,
	// ?4 started (NULL: the claim time), ?5 ended, ?6 outcome, ?7 exit
	// code, ?8 reason, ?9 counted, ?10 resumed (or'ed with the task's),
	// ?11 the stderr tail, ?12 the work units, ?13 the snapshot it
	// resumed from (JSON; NULL: none).
	sqlEndAttempt = `INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, reason, counted, resumed, stderr, work,
		resumed_from)
		SELECT id, attempt, lease_owner, coalesce(?4, started_at), ?5, ?6, ?7, ?8, ?9, max(?10, resumed), ?11, ?12, ?13
		FROM tasks WHERE ` + fmt.Sprintf(fence, 1, 2, 3)
	// ?1 now, fence ?2..?4. The attempt number goes back to what it was
	// before the claim; started_at, resumed and resumed_from are left as
	// the claim set them (they are read only while the task runs, and the
	// next claim sets them again).
	sqlRelease = `UPDATE tasks SET
			state = CASE WHEN cancel_requested <> 0 THEN 'cancelled' ELSE 'queued' END,
			finished_at = CASE WHEN cancel_requested <> 0 THEN ?1 END,
			attempt = attempt - 1,
			lease_owner = NULL, lease_expiry = NULL, updated_at = ?1
		WHERE ` + fmt.Sprintf(fence, 2, 3, 4)
	// ?1 now, ?2 id.
	sqlCancel = `UPDATE tasks SET
			state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
			finished_at = CASE WHEN state = 'queued' THEN ?1 ELSE finished_at END,
			cancel_requested = CASE WHEN state = 'running' THEN 1 ELSE cancel_requested END,
			updated_at = ?1
		WHERE id = ?2 AND state IN ('queued', 'running')
		RETURNING ` + taskCols
	sqlRetry = `UPDATE tasks SET state = 'queued', failures = 0, lost_streak = 0, cancel_requested = 0, run_at = ?1,
			finished_at = NULL, updated_at = ?1
		WHERE id = ?2 AND state IN ('dead', 'cancelled')
		RETURNING ` + taskCols
	// ?1 now, ?2 the lost-attempt limit, ?3 its reason: as a takeover,
	// the attempt is lost, not counted, and the lost streak grows.
	sqlRecoverAttempts = `INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, reason, counted, resumed,
		resumed_from)
		SELECT id, attempt, coalesce(lease_owner, ''), started_at, ?1, 'lost', -1,
			'` + recoveredReason + `' || ` + lostSuffix + `, 0, ` + lostResumed + `
		FROM tasks WHERE state = 'running'`
	sqlRecoverTasks = `UPDATE tasks SET
			lost_streak = lost_streak + 1,
			state = ` + lostState + `,
			finished_at = CASE WHEN cancel_requested <> 0 OR lost_streak + 1 >= ?2 THEN ?1 END,
			last_error = CASE WHEN ` + lostAtLimit + ` THEN 'attempt ' || attempt || ' lost: ` + recoveredReason + `; ' || ?3
				ELSE last_error END,
			run_at = ?1, lease_owner = NULL, lease_expiry = NULL, updated_at = ?1
		WHERE state = 'running'`
)

const (
	sqlExists     = `SELECT 1 FROM tasks WHERE id = ?`
	sqlModule     = `SELECT bytes FROM modules WHERE sha256 = ?`
	sqlAttempts   = `SELECT number, owner, started, ended, outcome, exit_code, reason, counted, resumed, stderr, work, resumed_from FROM attempts WHERE task_id = ? ORDER BY number`
	sqlCheckpoint = `SELECT t.checkpoint_size, c.blob FROM tasks t LEFT JOIN checkpoints c ON c.task_id = t.id WHERE t.id = ?`
)

// recoveredReason is the reason of an attempt RecoverRunning recovers.
const recoveredReason = `the runner stopped while the attempt ran (recovered at start)`

// stmts are the prepared statements: w* on the writer connection (run
// inside write transactions), r* on the reader pool.
type stmts struct {
	wBegin, wCommit, wRollback                                              *sql.Stmt
	wPutModule, wModuleExists, wInsertTask, wTaskByKey, wTaskByID, wLeaseOf *sql.Stmt
	wReapAttempts, wReapTasks, wEarliestLease, wClaimAll, wHeartbeat        *sql.Stmt
	wCheckpointTask, wCheckpointBlob, wProgress, wComplete, wEndAttempt     *sql.Stmt
	wDropSnapshot, wMarkBegun, wMarkResumed                                 *sql.Stmt
	wRelease, wInsertInput, wPutResult                                      *sql.Stmt
	wCancel, wRetry, wRecoverAttempts, wRecoverTasks                        *sql.Stmt
	rTaskByID, rExists, rModule, rAttempts, rCheckpoint                     *sql.Stmt
	all                                                                     []*sql.Stmt
}

// preparer is a *sql.DB or a *sql.Conn.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func (s *stmts) prepare(ctx context.Context, w, r preparer) error {
	for _, p := range []struct {
		db  preparer
		dst **sql.Stmt
		q   string
	}{
		{w, &s.wBegin, `BEGIN IMMEDIATE`},
		{w, &s.wCommit, `COMMIT`},
		{w, &s.wRollback, `ROLLBACK`},
		{w, &s.wPutModule, sqlPutModule},
		{w, &s.wModuleExists, sqlModuleExists},
		{w, &s.wInsertTask, sqlInsertTask},
		{w, &s.wInsertInput, sqlInsertInput},
		{w, &s.wTaskByKey, sqlTaskByKey},
		{w, &s.wTaskByID, sqlTaskByID},
		{w, &s.wLeaseOf, sqlLeaseOf},
		{w, &s.wReapAttempts, sqlReapAttempts},
		{w, &s.wReapTasks, sqlReapTasks},
		{w, &s.wEarliestLease, sqlEarliestLease},
		{w, &s.wClaimAll, sqlClaimAll},
		{w, &s.wHeartbeat, sqlHeartbeat},
		{w, &s.wCheckpointTask, sqlCheckpointTask},
		{w, &s.wCheckpointBlob, sqlCheckpointBlob},
		{w, &s.wDropSnapshot, sqlDropSnapshot},
		{w, &s.wProgress, sqlProgress},
		{w, &s.wMarkBegun, sqlMarkBegun},
		{w, &s.wMarkResumed, sqlMarkResumed},
		{w, &s.wComplete, sqlComplete},
		{w, &s.wPutResult, sqlPutResult},
		{w, &s.wEndAttempt, sqlEndAttempt},
		{w, &s.wRelease, sqlRelease},
		{w, &s.wCancel, sqlCancel},
		{w, &s.wRetry, sqlRetry},
		{w, &s.wRecoverAttempts, sqlRecoverAttempts},
		{w, &s.wRecoverTasks, sqlRecoverTasks},
		{r, &s.rTaskByID, sqlTaskByID},
		{r, &s.rExists, sqlExists},
		{r, &s.rModule, sqlModule},
		{r, &s.rAttempts, sqlAttempts},
		{r, &s.rCheckpoint, sqlCheckpoint},
	} {
		st, err := p.db.PrepareContext(ctx, p.q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", strings.Join(strings.Fields(p.q), " "), err)
		}
		*p.dst = st
		s.all = append(s.all, st)
	}
	return nil
}

func (s *stmts) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	s.all = nil
	return errors.Join(errs...)
}
