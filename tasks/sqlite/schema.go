package sqlite

// SchemaVersion is the schema version this code writes. Open applies the
// migrations up to it and refuses a database with a higher version.
const SchemaVersion = 17

// migrations[i] takes the schema from version i to i+1. They run in order,
// all in one transaction, so a failed upgrade leaves the database as it
// was. Never edit a released migration: append a new one.
//
// Times are integer microseconds since the Unix epoch (NULL: unset).
var migrations = [SchemaVersion]string{
	// 1: the initial schema.
	`
CREATE TABLE modules (
	sha256  TEXT PRIMARY KEY,
	bytes   BLOB NOT NULL,
	size    INTEGER NOT NULL,
	created INTEGER NOT NULL
);

CREATE TABLE tasks (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	module           TEXT NOT NULL REFERENCES modules (sha256),
	input            BLOB,
	args             TEXT,    -- JSON array, NULL when empty
	env              TEXT,    -- JSON object, NULL when empty
	mounts           TEXT,    -- JSON array, NULL when empty
	limits           TEXT,    -- JSON object, NULL when all zero
	max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
	priority         INTEGER NOT NULL DEFAULT 0,
	queue            TEXT NOT NULL,
	idempotency_key  TEXT,
	run_at           INTEGER NOT NULL,
	state            TEXT NOT NULL
	                 CHECK (state IN ('queued', 'running', 'succeeded', 'dead', 'cancelled')),
	attempt          INTEGER NOT NULL DEFAULT 0,
	failures         INTEGER NOT NULL DEFAULT 0,
	lease_owner      TEXT,
	lease_expiry     INTEGER,
	started_at       INTEGER, -- start of the latest attempt
	resumed          INTEGER NOT NULL DEFAULT 0, -- the latest attempt started from a checkpoint
	cancel_requested INTEGER NOT NULL DEFAULT 0,
	checkpoint_size  INTEGER NOT NULL DEFAULT -1,
	progress_done    INTEGER NOT NULL DEFAULT 0,
	progress_total   INTEGER NOT NULL DEFAULT 0,
	result           BLOB,
	last_error       TEXT,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	finished_at      INTEGER
);

-- Claims: ready tasks in claim order, across all queues and per queue.
CREATE INDEX tasks_ready ON tasks (priority DESC, run_at, id) WHERE state = 'queued';
CREATE INDEX tasks_ready_queue ON tasks (queue, priority DESC, run_at, id) WHERE state = 'queued';
-- Takeovers: running tasks by lease expiry.
CREATE INDEX tasks_leases ON tasks (lease_expiry) WHERE state = 'running';
-- List of dead and cancelled tasks. There is no index on state for all
-- states: keeping one up to date costs about a third of the claim and
-- complete throughput. List of queued and running tasks uses the partial
-- indexes above; succeeded tasks are most of the table.
CREATE INDEX tasks_failed ON tasks (state, id) WHERE state IN ('dead', 'cancelled');
CREATE UNIQUE INDEX tasks_idempotency ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE checkpoints (
	task_id INTEGER PRIMARY KEY REFERENCES tasks (id),
	blob    BLOB NOT NULL,
	updated INTEGER NOT NULL
);

CREATE TABLE attempts (
	task_id   INTEGER NOT NULL REFERENCES tasks (id),
	number    INTEGER NOT NULL,
	owner     TEXT NOT NULL,
	started   INTEGER,
	ended     INTEGER,
	outcome   TEXT NOT NULL,
	exit_code INTEGER NOT NULL,
	reason    TEXT,
	counted   INTEGER NOT NULL,
	resumed   INTEGER NOT NULL,
	PRIMARY KEY (task_id, number)
) WITHOUT ROWID;
`,
	// 2: inputs and results out of the tasks rows. SQLite rewrites a whole
	// row, overflow pages included, when an update changes its size, as a
	// claim and a completion do: a task's input was written again at each
	// claim, and both were read by every List. The rows keep their sizes.
	`
CREATE TABLE inputs (
	task_id INTEGER PRIMARY KEY REFERENCES tasks (id),
	blob    BLOB NOT NULL
);
CREATE TABLE results (
	task_id INTEGER PRIMARY KEY REFERENCES tasks (id),
	blob    BLOB NOT NULL
);
INSERT INTO inputs (task_id, blob) SELECT id, input FROM tasks WHERE length(input) > 0;
INSERT INTO results (task_id, blob) SELECT id, result FROM tasks WHERE length(result) > 0;
ALTER TABLE tasks ADD COLUMN input_size INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN result_size INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET input_size = coalesce(length(input), 0), result_size = coalesce(length(result), 0)
	WHERE input IS NOT NULL OR result IS NOT NULL;
ALTER TABLE tasks DROP COLUMN input;
ALTER TABLE tasks DROP COLUMN result;
`,
	// 3: a task's labels (JSON object; NULL: none) and the tail of each
	// attempt's stderr.
	`
ALTER TABLE tasks ADD COLUMN labels TEXT;
ALTER TABLE attempts ADD COLUMN stderr TEXT;
`,
	// 4: the export a plugin task calls instead of _start (NULL: _start).
	`
ALTER TABLE tasks ADD COLUMN export TEXT;
`,
	// 5: the work units each attempt's guest did (0: none counted, or an
	// attempt recorded before).
	`
ALTER TABLE attempts ADD COLUMN work INTEGER NOT NULL DEFAULT 0;
`,
	// 6: the runners that work the store (tasks.Store.RecordRunner) and the
	// schedules (tasks.Schedule). lease is in microseconds, every in
	// nanoseconds (0: a cron schedule), spec the task's JSON.
	`
CREATE TABLE runners (
	owner     TEXT PRIMARY KEY,
	host      TEXT NOT NULL,
	pid       INTEGER NOT NULL,
	version   TEXT NOT NULL,
	started   INTEGER NOT NULL,
	last_seen INTEGER NOT NULL,
	lease     INTEGER NOT NULL,
	workers   INTEGER NOT NULL,
	in_flight INTEGER NOT NULL,
	draining  INTEGER NOT NULL
);
CREATE TABLE schedules (
	name      TEXT PRIMARY KEY,
	every     INTEGER NOT NULL DEFAULT 0,
	cron      TEXT NOT NULL DEFAULT '',
	spec      TEXT NOT NULL,
	paused    INTEGER NOT NULL DEFAULT 0,
	created   INTEGER NOT NULL,
	last_run  INTEGER,
	last_task INTEGER
);
`,
	// 7: paused queues (no claim takes their tasks); the count of
	// succeeded tasks by queue, kept by triggers (succeeded tasks are in no
	// index: counting them by queue sorted the table); a name for each
	// module (the file it came from, or the API's name; NULL: none).
	`
CREATE TABLE paused_queues (
	queue  TEXT PRIMARY KEY,
	paused INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE queue_succeeded (
	queue TEXT PRIMARY KEY,
	n     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO queue_succeeded (queue, n) SELECT queue, count(*) FROM tasks WHERE state = 'succeeded' GROUP BY queue;
CREATE TRIGGER tasks_succeeded_in AFTER UPDATE OF state ON tasks
	WHEN new.state = 'succeeded' AND old.state <> 'succeeded'
BEGIN
	INSERT INTO queue_succeeded (queue, n) VALUES (new.queue, 1)
		ON CONFLICT (queue) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_succeeded_out AFTER UPDATE OF state ON tasks
	WHEN old.state = 'succeeded' AND new.state <> 'succeeded'
BEGIN
	UPDATE queue_succeeded SET n = n - 1 WHERE queue = old.queue;
END;
CREATE TRIGGER tasks_succeeded_insert AFTER INSERT ON tasks
	WHEN new.state = 'succeeded'
BEGIN
	INSERT INTO queue_succeeded (queue, n) VALUES (new.queue, 1)
		ON CONFLICT (queue) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_succeeded_delete AFTER DELETE ON tasks
	WHEN old.state = 'succeeded'
BEGIN
	UPDATE queue_succeeded SET n = n - 1 WHERE queue = old.queue;
END;
ALTER TABLE modules ADD COLUMN name TEXT;
`,
	// 8: the latest snapshot of each task (tasks.Store.SaveSnapshot), in a table
	// of its own so that the tasks rows stay small. Its blob is the last
	// column: reading the others (List, Claim) reads none of the blob's
	// overflow pages. It goes with its task (ON DELETE CASCADE; Delete and
	// Prune also name the table) and, by trigger tasks_ended_snapshot, when
	// its task ends, whatever statement ends it. taken_at is in
	// microseconds, run_time in nanoseconds. The tasks rows count the
	// snapshots stored (which also tells whether to look for one) and the
	// attempts lost in a row without progress.
	`
CREATE TABLE snapshots (
	task_id   INTEGER PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	size      INTEGER NOT NULL,
	taken_at  INTEGER NOT NULL,
	owner     TEXT NOT NULL,
	attempt   INTEGER NOT NULL,
	work      INTEGER NOT NULL,
	run_time  INTEGER NOT NULL,
	suspended INTEGER NOT NULL,
	blob      BLOB NOT NULL
);
ALTER TABLE tasks ADD COLUMN snapshots INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN lost_streak INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER tasks_ended_snapshot AFTER UPDATE OF state ON tasks
	WHEN new.snapshots > 0 AND new.state IN ('succeeded', 'dead', 'cancelled')
BEGIN
	DELETE FROM snapshots WHERE task_id = new.id;
END;
`,
	// 9: a snapshot's bytes live in a file beside the database
	// (SnapshotDir, snapfiles.go), which its row names (file); the row's
	// blob is NULL. Rows of version 8 keep their blob (file NULL) and are
	// read as before (Snapshot reads the blob when file is NULL) until a
	// newer snapshot replaces them or they are dropped: nothing is lost at
	// the upgrade. SQLite cannot make a column nullable, so the table is
	// built again (and the trigger that names it with it); file comes
	// before blob so that reading it reads no overflow page of an old
	// row's blob.
	`
DROP TRIGGER tasks_ended_snapshot;
CREATE TABLE snapshots_v9 (
	task_id   INTEGER PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	size      INTEGER NOT NULL,
	taken_at  INTEGER NOT NULL,
	owner     TEXT NOT NULL,
	attempt   INTEGER NOT NULL,
	work      INTEGER NOT NULL,
	run_time  INTEGER NOT NULL,
	suspended INTEGER NOT NULL,
	file      TEXT,
	blob      BLOB,
	CHECK ((file IS NULL) <> (blob IS NULL))
);
INSERT INTO snapshots_v9 (task_id, size, taken_at, owner, attempt, work, run_time, suspended, file, blob)
	SELECT task_id, size, taken_at, owner, attempt, work, run_time, suspended, NULL, blob FROM snapshots;
DROP TABLE snapshots;
ALTER TABLE snapshots_v9 RENAME TO snapshots;
CREATE TRIGGER tasks_ended_snapshot AFTER UPDATE OF state ON tasks
	WHEN new.snapshots > 0 AND new.state IN ('succeeded', 'dead', 'cancelled')
BEGIN
	DELETE FROM snapshots WHERE task_id = new.id;
END;
`,
	// 10: what a retry does with the task's snapshot (tasks.Spec.OnRetry;
	// NULL: resume, the default).
	`
ALTER TABLE tasks ADD COLUMN on_retry TEXT;
`,
	// 11: a schedule's overlap policy (tasks.Schedule.Overlap; '': skip,
	// the default).
	`
ALTER TABLE schedules ADD COLUMN overlap TEXT NOT NULL DEFAULT '';
`,
	// 12: when a schedule's next period starts (tasks.Store's
	// DeferSchedule; microseconds; 0: not known yet), so that the
	// scheduler reads only the unpaused schedules that may be due, on the
	// index: a row's columns after its spec (megabytes, in overflow pages)
	// are not read unless it is due; and, of a runner's tasks in flight,
	// those claimed that wait for a worker (tasks.RunnerInfo.Held).
	`
ALTER TABLE schedules ADD COLUMN next_due INTEGER NOT NULL DEFAULT 0;
CREATE INDEX schedules_due ON schedules (next_due) WHERE paused = 0;
ALTER TABLE runners ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
`,
	// 13: tenants and fair claims (tasks/fair.go). A task's tenant; the
	// per-queue ready index leads with it, so that a fair claim reads
	// each tenant's first ready tasks in claim order (and a claim with no
	// tenants, those of the empty tenant: all of them); tasks_tenanted
	// holds only queued tasks that name a tenant, empty unless tenants
	// are used, so that telling whether a claim must be fair is one probe
	// and costs nothing otherwise. Each tenant's settings
	// (tasks.Store's tenants; absent: weight 1, no limit, no quota), each
	// flow's pass, each queue's clock, and the work units of a tenant with
	// a quota in its current period, charged by a trigger as attempts are
	// recorded, and the token bucket of a tenant with a rate.
	`
ALTER TABLE tasks ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
DROP INDEX tasks_ready_queue;
CREATE INDEX tasks_ready_queue ON tasks (queue, tenant, priority DESC, run_at, id) WHERE state = 'queued';
CREATE INDEX tasks_tenanted ON tasks (queue, tenant) WHERE state = 'queued' AND tenant <> '';
CREATE TABLE tenants (
	tenant      TEXT PRIMARY KEY,
	weight      INTEGER NOT NULL DEFAULT 1,
	max_running INTEGER NOT NULL DEFAULT 0,
	work_quota  INTEGER NOT NULL DEFAULT 0,
	work_period INTEGER NOT NULL DEFAULT 0, -- microseconds
	rate        REAL NOT NULL DEFAULT 0     -- starts a second
);
-- A rate-limited tenant's token bucket: what it held at "at" (microseconds).
CREATE TABLE tenant_tokens (
	tenant TEXT PRIMARY KEY,
	tokens REAL NOT NULL,
	at     INTEGER NOT NULL
);
-- The work units a tenant with a quota used in its current period (the
-- period's number since the epoch), charged as its attempts are recorded.
CREATE TABLE tenant_work (
	tenant TEXT PRIMARY KEY,
	period INTEGER NOT NULL,
	work   INTEGER NOT NULL
);
CREATE TRIGGER attempts_charge_work AFTER INSERT ON attempts
	WHEN new.work > 0 AND EXISTS (SELECT 1 FROM tenants WHERE work_quota > 0)
BEGIN
	INSERT INTO tenant_work AS w (tenant, period, work)
		SELECT t.tenant, coalesce(new.ended, 0) / q.work_period, new.work
		FROM tasks t JOIN tenants q ON q.tenant = t.tenant
		WHERE t.id = new.task_id AND q.work_quota > 0 AND q.work_period > 0
	ON CONFLICT (tenant) DO UPDATE SET
		work = CASE WHEN w.period = excluded.period THEN w.work + excluded.work
			WHEN w.period < excluded.period THEN excluded.work ELSE w.work END,
		period = max(w.period, excluded.period);
END;
`,
	// 16: the snapshot an attempt resumed from (tasks.Attempt.ResumedFrom:
	// a tasks.SnapshotInfo as JSON; NULL: none), kept once the task's
	// snapshot is dropped.
	`
ALTER TABLE attempts ADD COLUMN resumed_from TEXT;
CREATE TABLE fair_passes (
	queue  TEXT NOT NULL,
	tenant TEXT NOT NULL,
	pass   INTEGER NOT NULL,
	PRIMARY KEY (queue, tenant)
);
CREATE TABLE fair_clocks (
	queue TEXT PRIMARY KEY,
	clock INTEGER NOT NULL
);
`,
	// 14: when a worker began a running task's attempt (tasks.Task.BeganAt,
	// Store.MarkBegun; NULL: claimed, no worker has begun it). The tasks
	// running before the upgrade count as begun at their claim.
	`
ALTER TABLE tasks ADD COLUMN began_at INTEGER;
UPDATE tasks SET began_at = started_at WHERE state = 'running';
`,
	// 15: the limits of queues (tasks.Store's SetQueue*), beside those of
	// tenants: a queue's settings (absent: no limit) with its token
	// bucket (tokens at tokens_at, microseconds; 0: full), and the work
	// units of a queue with a quota in its current period, charged by a
	// trigger as attempts are recorded while some queue has a quota.
	`
CREATE TABLE queue_limits (
	queue       TEXT PRIMARY KEY,
	max_running INTEGER NOT NULL DEFAULT 0,
	work_quota  INTEGER NOT NULL DEFAULT 0,
	work_period INTEGER NOT NULL DEFAULT 0, -- microseconds
	rate        REAL NOT NULL DEFAULT 0,    -- starts a second
	tokens      REAL NOT NULL DEFAULT 0,
	tokens_at   INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE queue_work (
	queue  TEXT PRIMARY KEY,
	period INTEGER NOT NULL,
	work   INTEGER NOT NULL
);
CREATE TRIGGER attempts_charge_queue_work AFTER INSERT ON attempts
	WHEN new.work > 0 AND EXISTS (SELECT 1 FROM queue_limits WHERE work_quota > 0)
BEGIN
	INSERT INTO queue_work AS w (queue, period, work)
		SELECT t.queue, coalesce(new.ended, 0) / q.work_period, new.work
		FROM tasks t JOIN queue_limits q ON q.queue = t.queue
		WHERE t.id = new.task_id AND q.work_quota > 0 AND q.work_period > 0
	ON CONFLICT (queue) DO UPDATE SET
		work = CASE WHEN w.period = excluded.period THEN w.work + excluded.work
			WHEN w.period < excluded.period THEN excluded.work ELSE w.work END,
		period = max(w.period, excluded.period);
END;
`,
	// 17: the snapshot the running attempt of a task resumed from (JSON as
	// attempts.resumed_from; NULL: none), written as it resumes
	// (Store.MarkResumed) and cleared by the claim, so that an attempt
	// the store records as lost says what it resumed from.
	`
ALTER TABLE tasks ADD COLUMN resumed_from TEXT;
`,
}
