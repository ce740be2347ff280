package postgres

// The statements. pgx prepares each on first use on every connection (its
// statement cache), so that a statement is parsed and planned once per
// connection, not per call.
//
// Every write that carries a lease has the fence
//
//	t.id = <id> AND <t.state is running> AND t.lease_owner = <owner> AND t.attempt = <token>
//
// in the WHERE of the UPDATE that takes the task row's lock: a stale
// attempt's write matches no row and changes nothing. The state check is
// written as isRunning, which no partial index matches, so that the row
// is found by its primary key (see isRunning).
//
// The batch statements (Heartbeat, Complete, Release) take their items as
// parallel arrays (unnest), one round trip for the batch; their items are
// sorted by task id so that two batches on the same tasks lock the rows in
// the same order.

// isRunning is the fence's state check on the task row t: t.state =
// 'running', in a form the planner cannot prove implies the predicate of
// the partial index tasks_leases (WHERE state = 'running'). Written
// plainly, the planner, which believes few tasks run, walked tasks_leases
// instead of the primary key: that index holds an entry for every task
// claimed since the last vacuum (the dead versions of finished attempts
// too) until a scan finds them dead to every snapshot, which a long
// transaction anywhere (a backup, a report) postpones. The first
// completion of 41 tasks after 10,000 claims read 213 pages in 3.8 ms,
// against 0.3 ms by primary key; and the runner's completions joined the
// batch by a nested loop over all of it (1,640 rows filtered out for 41
// tasks), O(batch²).
const isRunning = `CASE WHEN t.state = 'running' THEN true END`

const readyOrder = `ORDER BY priority DESC, run_at, id`

// noTenants guards the ordered claims: they claim only while no queued
// task names a tenant and no tenant or queue has a limit or a quota (else the fair claim, fair.go, which the batch's
// sqlTenanted tells the Store to run). PostgreSQL evaluates it once per
// statement, on the index tasks_tenanted (empty without tenants). With no tenant, every
// ready task is the empty tenant's: tenant = ” puts the per-queue scan on
// tasks_ready_queue, which leads with the tenant.
const noTenants = `(` + tenantedProbe + `) IS NULL
	AND NOT EXISTS (SELECT 1 FROM tenants WHERE max_running > 0 OR work_quota > 0 OR rate > 0)
	AND NOT EXISTS (SELECT 1 FROM queue_limits) `

// tenantedProbe finds a queued task that names a tenant (NULL: none), a
// scalar subquery ordered as tasks_tenanted. As EXISTS, which drops an
// ORDER BY, PostgreSQL chose a sequential scan that stops at the first
// match once the statistics said most tasks name a tenant, and walked
// every claimed task before it (docs/design/postgres.md, "The probe for
// tenants, and what a fair claim costs PostgreSQL").
const tenantedProbe = `SELECT true FROM tasks WHERE state = 'queued' AND tenant <> '' ORDER BY queue, tenant LIMIT 1`

// sqlTenanted tells whether a claim must be fair: some queued task names a
// tenant, or some tenant or queue has a limit (a queue_limits row has one).
const sqlTenanted = `SELECT (` + tenantedProbe + `) IS NOT NULL
	OR EXISTS (SELECT 1 FROM tenants WHERE max_running > 0 OR work_quota > 0 OR rate > 0)
	OR EXISTS (SELECT 1 FROM queue_limits)`

// Claims: $1 owner, $2 lease expiry, $3 now, $4 the most tasks to claim;
// sqlClaimQueues adds $5 the queue names and $6 their maxima. The ready
// rows are locked FOR UPDATE SKIP LOCKED, so concurrent claims (other
// runners) take different tasks and never wait for each other. The
// checkpoint comes back with the task (looked up only when it has one).
//
// The rows locked go through an array (= ANY(ARRAY(...)), evaluated
// once), not a join: joined, the planner estimated a handful of rows and
// hashed a sequential scan of the whole tasks table (its history included)
// at every claim. The array holds their physical addresses (ctid), so
// that the update takes each row where the lock found it (a TID scan),
// with no second walk down the primary key per task, and no plan for the
// planner to choose: by id, a plan made while the table was empty read the
// whole table at every claim (a sequential scan). A locked row's address
// cannot change while the lock is held; one whose latest version the
// update's snapshot cannot see (updated by a transaction that committed
// after the statement began) is left alone, locked until the claim
// commits and not claimed.
const (
	claimSet = `UPDATE tasks t SET state = 'running', attempt = t.attempt + 1,
	lease_owner = $1, lease_expiry = $2, started_at = $3, updated_at = $3, began_at = NULL,
	resumed = (t.checkpoint_size >= 0), resumed_from = NULL
WHERE t.ctid = ANY(ARRAY(`
	// Inputs and checkpoints of up to tasks.ClaimInline (65536) bytes come
	// back with the claim; larger ones are read when their attempt starts.
	claimReturning = `))
RETURNING ` + taskColsA +
		`CASE WHEN t.input_size BETWEEN 1 AND 65536 THEN (SELECT i.blob FROM inputs i WHERE i.task_id = t.id) END` + taskColsB +
		`CASE WHEN t.result_size > 0 THEN (SELECT r.blob FROM results r WHERE r.task_id = t.id) END` + taskColsC +
		`, CASE WHEN t.checkpoint_size BETWEEN 0 AND 65536 THEN (SELECT c.blob FROM checkpoints c WHERE c.task_id = t.id) END`

	sqlClaimAll = claimSet + `SELECT ctid FROM tasks WHERE state = 'queued' AND run_at <= $3 AND ` + noTenants + readyOrder +
		` LIMIT $4 FOR UPDATE SKIP LOCKED` + claimReturning

	// The first ready tasks of each queue up to its maximum, merged in
	// claim order up to $4: one statement whatever the number of queues.
	sqlClaimQueues = claimSet + `SELECT r.ctid FROM unnest($5::text[], $6::integer[]) AS q(name, n)
	CROSS JOIN LATERAL (SELECT ctid, id, priority, run_at FROM tasks
		WHERE state = 'queued' AND queue = q.name AND tenant = '' AND run_at <= $3 AND ` + noTenants + readyOrder + `
		LIMIT q.n FOR UPDATE SKIP LOCKED) r
	ORDER BY r.priority DESC, r.run_at, r.id LIMIT $4` + claimReturning
)

// The task a lost attempt leaves ($2 the lost-attempt limit, $3 its
// reason, tasks.LostLimitReason): lostAtLimit is whether its lost streak
// reaches the limit with this one, lostState its next state (cancelled
// when cancellation was requested, else dead at the limit, else queued),
// lostSuffix what its reasons end with (at the limit, the limit's reason).
const (
	lostAtLimit = `(NOT t.cancel_requested AND t.lost_streak + 1 >= $2::integer)`
	lostState   = `(CASE WHEN t.cancel_requested THEN 'cancelled' WHEN ` + lostAtLimit + ` THEN 'dead' ELSE 'queued' END)`
	lostSuffix  = `(CASE WHEN ` + lostAtLimit + ` THEN '; ' || $3::text ELSE '' END)`
)

// sqlReap takes over the leases expired at $1: each attempt is recorded as
// "lost" (not counted, ended at the lease expiry), its task's lost streak
// grows by one and the task goes back to the queue, ready since the lease
// expired (dead when the streak reaches the limit $2, cancelled when its
// cancellation was requested). SKIP LOCKED: a task whose row another
// transaction holds (its owner completing it, another runner reaping it)
// is left to that one. The subquery's lease owner and expiry are those of
// the row as locked.
const sqlReap = `WITH lost AS (
	UPDATE tasks t SET
		lost_streak = t.lost_streak + 1,
		state = ` + lostState + `,
		finished_at = CASE WHEN t.cancel_requested OR t.lost_streak + 1 >= $2::integer THEN $1::timestamptz END,
		run_at = x.lease_expiry,
		last_error = 'attempt ' || t.attempt || ' lost: lease of ' || x.lease_owner || ' expired without a heartbeat' || ` + lostSuffix + `,
		lease_owner = NULL, lease_expiry = NULL, updated_at = $1
	FROM (SELECT id, lease_owner, lease_expiry FROM tasks
		WHERE state = 'running' AND lease_expiry < $1 ORDER BY id FOR UPDATE SKIP LOCKED) x
	WHERE t.id = x.id
	RETURNING t.id, t.attempt, x.lease_owner, t.started_at, x.lease_expiry, t.resumed, t.resumed_from, t.state = 'dead' AS dead
)
INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, reason, counted, resumed, resumed_from)
SELECT id, attempt, lease_owner, started_at, lease_expiry, 'lost', -1,
	'lease of ' || lease_owner || ' expired without a heartbeat' || CASE WHEN dead THEN '; ' || $3::text ELSE '' END,
	false, ` + lostResumed + `
FROM lost`

// lostResumed are the resumed and resumed_from columns of a lost
// attempt's record: the claim's resumed (a checkpoint), or'ed with the
// snapshot the attempt resumed from (Store.MarkResumed).
const lostResumed = `resumed OR resumed_from IS NOT NULL, resumed_from`

// nextState is the state a completion leaves the task in (c.state its
// asked state): a requeue becomes cancelled when cancellation was
// requested, dead when the attempts are used up.
const nextState = `(CASE WHEN c.state <> 'queued' THEN c.state
	WHEN t.cancel_requested THEN 'cancelled'
	WHEN t.failures + c.counted::integer >= t.max_attempts THEN 'dead'
	ELSE 'queued' END)`

// keepInRow is whether a completion's attempt is kept in its task row
// (schema version 8) rather than in an attempts row: c.in_row, which the
// caller sets for a success at the first claim (token 1) with outcome
// "succeeded", exit code 0, no reason, not counted and not resumed, and the
// task did not start from a checkpoint. Such an attempt is the task's only
// one (a succeeded task is never claimed again, and the first claim's
// token is 1 only when no attempt was recorded before it: a lost attempt
// is recorded under its own number, which the next claim goes past), and
// everything in its record but its owner, end, stderr and work is implied;
// sqlAttempts reads it back from the row. Any other attempt gets a row.
const keepInRow = `(c.in_row AND NOT t.resumed)`

// sqlComplete ends a batch of attempts: $1 now; the completions' $2 task
// ids, $3 owners, $4 tokens, $5 states, $6 counted, $7 run-at times, $8
// result sizes, $9 reasons, $10 start times (NULL: the claim time), $11
// end times, $12 outcomes, $13 exit codes, $14 resumed, $15 their index in
// the caller's batch, $18 their stderr tails (NULL: none), $19 their work
// units, $20 whether each may be kept in the task row (keepInRow); $16 and $17 the
// index and bytes of the non-empty results of successes. It returns the index of every completion whose
// lease held, and whether its task is ready again at once; the attempt
// record and the result are written from the updated rows only. c is
// MATERIALIZED: inlined, the planner (which guesses 10 rows for an unnest)
// put it on the inner side of a nested loop over the running tasks and
// unnested the 15 arrays again for every one of them, O(batch²).
const sqlComplete = `WITH c AS MATERIALIZED (
	SELECT * FROM unnest($2::bigint[], $3::text[], $4::integer[], $5::text[], $6::boolean[], $7::timestamptz[],
		$8::integer[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::text[], $13::integer[],
		$14::boolean[], $15::integer[], $18::text[], $19::bigint[], $20::boolean[], $21::text[])
	AS c(id, owner, token, state, counted, run_at, result_size, reason, started, ended, outcome, exit_code, resumed, ord, stderr, work, in_row,
		resumed_from)
), done AS (
	UPDATE tasks t SET
		state = ` + nextState + `,
		finished_at = CASE WHEN ` + nextState + ` = 'queued' THEN NULL ELSE $1::timestamptz END,
		run_at = CASE WHEN ` + nextState + ` = 'queued' THEN c.run_at ELSE t.run_at END,
		result_size = CASE WHEN c.state = 'succeeded' THEN c.result_size ELSE t.result_size END,
		last_error = CASE WHEN c.state <> 'succeeded' AND c.reason IS NOT NULL THEN c.reason ELSE t.last_error END,
		failures = t.failures + c.counted::integer, lost_streak = 0,
		started_at = coalesce(c.started, t.started_at),
		att_owner = CASE WHEN ` + keepInRow + ` THEN c.owner END,
		att_ended = CASE WHEN ` + keepInRow + ` THEN c.ended END,
		att_stderr = CASE WHEN ` + keepInRow + ` THEN c.stderr END,
		att_work = CASE WHEN ` + keepInRow + ` THEN c.work END,
		lease_owner = NULL, lease_expiry = NULL, updated_at = $1
	FROM c
	WHERE t.id = c.id AND ` + isRunning + ` AND t.lease_owner = c.owner AND t.attempt = c.token
	RETURNING c.ord, t.id, t.attempt, c.owner, t.started_at AS started, c.ended, c.outcome,
		c.exit_code, c.reason, c.counted, c.resumed OR t.resumed AS resumed, c.stderr, c.work, c.resumed_from,
		t.state = 'queued' AND t.run_at <= $1 AS ready, t.att_owner IS NOT NULL AS in_row, t.tenant, t.queue
), charge AS (
	-- The work of a tenant with a quota (tasks.Store's tenants), in the period
	-- of its latest attempt of the batch.
	INSERT INTO tenant_work AS w (tenant, period, work)
	SELECT d.tenant, max((extract(epoch FROM coalesce(d.ended, $1::timestamptz)) * 1000000)::bigint / q.work_period), sum(d.work)
	FROM done d JOIN tenants q ON q.tenant = d.tenant AND q.work_quota > 0 AND q.work_period > 0
	WHERE d.work > 0
	GROUP BY d.tenant
	ON CONFLICT (tenant) DO UPDATE SET
		work = CASE WHEN w.period = excluded.period THEN w.work + excluded.work
			WHEN w.period < excluded.period THEN excluded.work ELSE w.work END,
		period = greatest(w.period, excluded.period)
), charge_queue AS (
	-- The same for a queue with a quota.
	INSERT INTO queue_work AS w (queue, period, work)
	SELECT d.queue, max((extract(epoch FROM coalesce(d.ended, $1::timestamptz)) * 1000000)::bigint / q.work_period), sum(d.work)
	FROM done d JOIN queue_limits q ON q.queue = d.queue AND q.work_quota > 0 AND q.work_period > 0
	WHERE d.work > 0
	GROUP BY d.queue
	ON CONFLICT (queue) DO UPDATE SET
		work = CASE WHEN w.period = excluded.period THEN w.work + excluded.work
			WHEN w.period < excluded.period THEN excluded.work ELSE w.work END,
		period = greatest(w.period, excluded.period)
), att AS (
	INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, reason, counted, resumed, stderr, work, resumed_from)
	SELECT id, attempt, owner, started, ended, outcome, exit_code, reason, counted, resumed, stderr, work, resumed_from FROM done
	WHERE NOT in_row
), res AS (
	INSERT INTO results (task_id, blob)
	SELECT d.id, r.blob FROM done d JOIN unnest($16::integer[], $17::bytea[]) AS r(ord, blob) ON r.ord = d.ord
	ON CONFLICT (task_id) DO UPDATE SET blob = excluded.blob
)
SELECT ord, ready FROM done`

// sqlHeartbeat extends the leases still held: $1 expiry, $2 now, the
// leases' $3 task ids, $4 owners and $5 tokens. It returns the held
// leases and whether their task's cancellation was requested.
const sqlHeartbeat = `UPDATE tasks t SET lease_expiry = $1, updated_at = $2
FROM unnest($3::bigint[], $4::text[], $5::integer[]) AS l(id, owner, token)
WHERE t.id = l.id AND ` + isRunning + ` AND t.lease_owner = l.owner AND t.attempt = l.token
RETURNING t.id, t.lease_owner, t.attempt, t.cancel_requested`

// sqlMarkBegun marks the attempts a worker began: $1 now, the leases' $2
// task ids, $3 owners and $4 tokens.
const sqlMarkBegun = `UPDATE tasks t SET began_at = $1
FROM unnest($2::bigint[], $3::text[], $4::integer[]) AS l(id, owner, token)
WHERE t.id = l.id AND ` + isRunning + ` AND t.lease_owner = l.owner AND t.attempt = l.token AND t.began_at IS NULL`

// sqlMarkResumed records the snapshot an attempt resumed from: $1 its JSON
// (NULL: none), fence $2..$4 (Store.MarkResumed).
const sqlMarkResumed = `UPDATE tasks t SET resumed_from = $1
WHERE t.id = $2 AND ` + isRunning + ` AND t.lease_owner = $3 AND t.attempt = $4`

// sqlRelease gives back claimed tasks: $1 now, the leases' $2 task ids, $3
// owners and $4 tokens; it returns whether each task released is queued
// (not cancelled). The attempt number goes back to what it was before the
// claim; started_at, resumed and resumed_from are left as the claim set
// them (read only while the task runs; the next claim sets them again). A
// lease given twice joins the row twice, and PostgreSQL updates a row once
// per statement: released once.
const sqlRelease = `UPDATE tasks t SET
	state = CASE WHEN t.cancel_requested THEN 'cancelled' ELSE 'queued' END,
	finished_at = CASE WHEN t.cancel_requested THEN $1::timestamptz END,
	attempt = t.attempt - 1,
	lease_owner = NULL, lease_expiry = NULL, updated_at = $1
FROM unnest($2::bigint[], $3::text[], $4::integer[]) AS l(id, owner, token)
WHERE t.id = l.id AND ` + isRunning + ` AND t.lease_owner = l.owner AND t.attempt = l.token
RETURNING t.state = 'queued'`

// sqlUnclaim gives back the tasks of claims whose reply was lost with
// their connection (they may have committed, unknown to the claimer): $1
// now, the claims' $2 owners, $3 claim times and $4 lease expiries. A
// claim sets started_at and lease_expiry to the same values on every task
// it takes, and nobody renews a lease its owner never saw, so a task still
// running under those three is one of that claim's, its attempt never
// started: it goes back to the queue as sqlRelease puts it (attempt
// number restored, nothing recorded or counted).
const sqlUnclaim = `UPDATE tasks t SET
	state = CASE WHEN t.cancel_requested THEN 'cancelled' ELSE 'queued' END,
	finished_at = CASE WHEN t.cancel_requested THEN $1::timestamptz END,
	attempt = t.attempt - 1,
	lease_owner = NULL, lease_expiry = NULL, updated_at = $1
FROM unnest($2::text[], $3::timestamptz[], $4::timestamptz[]) AS o(owner, started, expiry)
WHERE t.state = 'running' AND t.lease_expiry = o.expiry AND t.lease_owner = o.owner AND t.started_at = o.started`

// Single-task writes with a lease. sqlCheckpoint: $1 size, $2 now, fence
// $3..$5, $6 the bytes; it inserts (or replaces) the checkpoint only when
// the fenced update took the row, ends the lost streak, and drops the
// task's snapshot (the newer of the two wins). sqlProgress: $1 done, $2
// total, $3 now, fence $4..$6.
const (
	sqlCheckpoint = `WITH t AS (
	UPDATE tasks t SET checkpoint_size = $1, lost_streak = 0, updated_at = $2
	WHERE t.id = $3 AND ` + isRunning + ` AND t.lease_owner = $4 AND t.attempt = $5
	RETURNING id, snapshots
), s AS (
	DELETE FROM snapshots WHERE task_id IN (SELECT id FROM t WHERE snapshots > 0)
)
INSERT INTO checkpoints (task_id, blob, updated) SELECT id, $6::bytea, $2 FROM t
ON CONFLICT (task_id) DO UPDATE SET blob = excluded.blob, updated = excluded.updated`
	sqlProgress = `UPDATE tasks t SET progress_done = $1, progress_total = $2, updated_at = $3
	WHERE t.id = $4 AND ` + isRunning + ` AND t.lease_owner = $5 AND t.attempt = $6`
	sqlLeaseOf = `SELECT id, state, coalesce(lease_owner, ''), attempt FROM tasks WHERE id = ANY($1)`
)

// sqlSubmit inserts a task and its input: $1 module, $2 input size, $3 args, $4 env, $5 mounts, $6
// limits, $7 max attempts, $8 priority, $9 queue, $10 idempotency key, $11
// run at, $12 now, $13 input bytes, $14 labels, $15 export, $16 on retry, $17 tenant. No row: the idempotency
// key is taken. A module that is not stored fails the foreign key
// tasks_module_fkey.
const sqlSubmit = `WITH t AS (
	INSERT INTO tasks (module, input_size, args, env, mounts, limits, max_attempts, priority, queue,
		idempotency_key, run_at, state, created_at, updated_at, labels, export, on_retry, tenant)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'queued', $12, $12, $14, $15, $16, $17)
	ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
	RETURNING *
), i AS (
	INSERT INTO inputs (task_id, blob) SELECT id, $13::bytea FROM t WHERE $2::integer > 0
)
SELECT ` + listCols + ` FROM t`

// Tasks by state changes without a lease. sqlCancel: $1 now, $2 id.
// sqlRetry: $1 now, $2 id.
const (
	sqlCancel = `UPDATE tasks t SET
	state = CASE WHEN t.state = 'queued' THEN 'cancelled' ELSE t.state END,
	finished_at = CASE WHEN t.state = 'queued' THEN $1 ELSE t.finished_at END,
	cancel_requested = (t.state = 'running' OR t.cancel_requested),
	updated_at = $1
WHERE t.id = $2 AND t.state IN ('queued', 'running')
RETURNING ` + taskCols
	sqlRetry = `UPDATE tasks t SET state = 'queued', failures = 0, lost_streak = 0, cancel_requested = false, run_at = $1,
	finished_at = NULL, updated_at = $1
WHERE t.id = $2 AND t.state IN ('dead', 'cancelled')
RETURNING ` + taskCols
)

// recoverSQL puts running tasks back in the queue at $1, recording their
// attempts as lost and not counted with reason $4 and growing their lost
// streaks (dead at the limit $2, lostState; $3 the limit's reason);
// ownerCond selects the tasks (and may use $5). It returns how many it
// recovered.
func recoverSQL(ownerCond string) string {
	return `WITH rec AS (
	UPDATE tasks t SET
		lost_streak = t.lost_streak + 1,
		state = ` + lostState + `,
		finished_at = CASE WHEN t.cancel_requested OR t.lost_streak + 1 >= $2::integer THEN $1::timestamptz END,
		last_error = CASE WHEN ` + lostAtLimit + ` THEN 'attempt ' || t.attempt || ' lost: ' || $4::text || '; ' || $3::text
			ELSE t.last_error END,
		run_at = $1, lease_owner = NULL, lease_expiry = NULL, updated_at = $1
	FROM (SELECT id, lease_owner FROM tasks WHERE state = 'running'` + ownerCond + ` ORDER BY id FOR UPDATE) x
	WHERE t.id = x.id
	RETURNING t.id, t.attempt, x.lease_owner, t.started_at, t.resumed, t.resumed_from, t.state = 'dead' AS dead
), att AS (
	INSERT INTO attempts (task_id, number, owner, started, ended, outcome, exit_code, reason, counted, resumed, resumed_from)
	SELECT id, attempt, coalesce(lease_owner, ''), started_at, $1, 'lost', -1,
		$4::text || CASE WHEN dead THEN '; ' || $3::text ELSE '' END, false, ` + lostResumed + ` FROM rec
)
SELECT count(*) FROM rec`
}

var (
	sqlRecoverAll = recoverSQL(``)
	sqlRecoverOwn = recoverSQL(` AND lease_owner = $5`)
)

// Reads and modules.
const (
	sqlPutModule = `INSERT INTO modules (sha256, bytes, size, created) VALUES ($1, $2, $3, $4)
		ON CONFLICT (sha256) DO NOTHING`
	sqlModule    = `SELECT bytes FROM modules WHERE sha256 = $1`
	sqlTaskByID  = `SELECT ` + taskCols + ` FROM tasks t WHERE t.id = $1`
	sqlTaskByKey = `SELECT ` + taskCols + ` FROM tasks t WHERE t.idempotency_key = $1`
	sqlExists    = `SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1)`
	sqlAttempts  = `SELECT number, owner, started, ended, outcome, exit_code, reason, counted, resumed, stderr, work, resumed_from FROM attempts WHERE task_id = $1
	UNION ALL SELECT 1, att_owner, started_at, att_ended, 'succeeded', 0, NULL, false, false, att_stderr, att_work, NULL
		FROM tasks WHERE id = $1 AND att_owner IS NOT NULL
	ORDER BY 1`
	sqlCheckpointOf = `SELECT t.checkpoint_size, c.blob FROM tasks t LEFT JOIN checkpoints c ON c.task_id = t.id WHERE t.id = $1`
	sqlStateOf      = `SELECT state FROM tasks WHERE id = $1`
)

// sqlPrune deletes up to $3 tasks with ids above $1 that ended before $2
// (their inputs, results, checkpoints and snapshots go with them: ON
// DELETE CASCADE), with their attempt records, and returns their ids. A task
// locked by another transaction (a Retry in progress) is skipped; the lock
// re-checks the state, so a task retried meanwhile stays. It also deletes
// the attempts, in the batch's id range, whose task is gone: those a
// runner of schema version 5 or older (whose Prune relied on a foreign key that
// version 6 dropped) left behind. The statement's snapshot still sees the
// tasks it deletes, hence the two conditions.
const sqlPrune = `WITH d AS (
	DELETE FROM tasks WHERE id IN (
		SELECT id FROM tasks WHERE id > $1 AND state IN ('succeeded', 'dead', 'cancelled') AND finished_at < $2
		ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
	RETURNING id
), a AS (
	DELETE FROM attempts a WHERE a.task_id > $1 AND a.task_id <= (SELECT max(id) FROM d)
		AND (a.task_id IN (SELECT id FROM d) OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task_id))
)
SELECT id FROM d`
