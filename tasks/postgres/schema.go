package postgres

// SchemaVersion is the schema version this code writes. Open applies the
// migrations up to it and refuses a schema with a higher version.
const SchemaVersion = 18

// migrations[i] takes the schema from version i to i+1. Open runs them in
// order, all in one transaction under an advisory lock, so that a failed
// upgrade leaves the schema as it was and runners starting together
// migrate once. Never edit a released migration: append a new one. Runners
// of two versions share the database during a rolling upgrade, so a
// migration must leave the previous version's statements working (add
// tables, columns with defaults and indexes; drop in a later version).
//
// Unqualified names: the tables go in the store's schema (the first
// existing schema of the search path, see Options.Schema).
var migrations = [SchemaVersion]string{
	// 1: the initial schema, as SQLite's version 2: inputs, results and
	// checkpoints in tables of their own, out of the tasks rows that every
	// claim, heartbeat and completion rewrites (PostgreSQL writes a new
	// version of the whole row at each update; TOASTed values are carried
	// over by pointer, but a row under the TOAST threshold is copied whole).
	`
CREATE TABLE modules (
	sha256  text PRIMARY KEY,
	bytes   bytea NOT NULL,
	size    integer NOT NULL,
	created timestamptz NOT NULL
);

CREATE TABLE tasks (
	id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	module           text NOT NULL REFERENCES modules (sha256),
	-- json, not jsonb: kept as written (jsonb refuses the \u0000 of a NUL
	-- in an arg or an env value, which a spec may hold), never queried.
	args             json,     -- NULL when empty
	env              json,     -- NULL when empty
	mounts           json,     -- NULL when empty
	limits           json,     -- NULL when all zero
	max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
	priority         integer NOT NULL DEFAULT 0,
	queue            text NOT NULL,
	idempotency_key  text,
	run_at           timestamptz NOT NULL,
	state            text NOT NULL
	                 CHECK (state IN ('queued', 'running', 'succeeded', 'dead', 'cancelled')),
	attempt          integer NOT NULL DEFAULT 0,
	failures         integer NOT NULL DEFAULT 0,
	lease_owner      text,
	lease_expiry     timestamptz,
	started_at       timestamptz, -- start of the latest attempt
	resumed          boolean NOT NULL DEFAULT false, -- the latest attempt started from a checkpoint
	cancel_requested boolean NOT NULL DEFAULT false,
	checkpoint_size  integer NOT NULL DEFAULT -1,
	progress_done    bigint NOT NULL DEFAULT 0,
	progress_total   bigint NOT NULL DEFAULT 0,
	input_size       integer NOT NULL DEFAULT 0,
	result_size      integer NOT NULL DEFAULT 0,
	last_error       text,
	created_at       timestamptz NOT NULL,
	updated_at       timestamptz NOT NULL,
	finished_at      timestamptz
);

-- Claims: ready tasks in claim order, across all queues and per queue.
CREATE INDEX tasks_ready ON tasks (priority DESC, run_at, id) WHERE state = 'queued';
CREATE INDEX tasks_ready_queue ON tasks (queue, priority DESC, run_at, id) WHERE state = 'queued';
-- Takeovers and recovery: running tasks by lease expiry.
CREATE INDEX tasks_leases ON tasks (lease_expiry) WHERE state = 'running';
-- List of dead and cancelled tasks (succeeded tasks are most of the
-- table: walked by id).
CREATE INDEX tasks_failed ON tasks (state, id) WHERE state IN ('dead', 'cancelled');
CREATE UNIQUE INDEX tasks_idempotency ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE inputs (
	task_id bigint PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	blob    bytea NOT NULL
);
CREATE TABLE results (
	task_id bigint PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	blob    bytea NOT NULL
);
CREATE TABLE checkpoints (
	task_id bigint PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	blob    bytea NOT NULL,
	updated timestamptz NOT NULL
);

CREATE TABLE attempts (
	task_id   bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	number    integer NOT NULL,
	owner     text NOT NULL,
	started   timestamptz,
	ended     timestamptz,
	outcome   text NOT NULL,
	exit_code integer NOT NULL,
	reason    text,
	counted   boolean NOT NULL,
	resumed   boolean NOT NULL,
	PRIMARY KEY (task_id, number)
);
`,
	// 2: a task's labels (NULL: none) and the tail of each attempt's
	// stderr. Nullable columns: version 1's statements still work.
	`
ALTER TABLE tasks ADD COLUMN labels json;
ALTER TABLE attempts ADD COLUMN stderr text;
`,
	// 3: the export a plugin task calls instead of _start (NULL: _start).
	// Nullable: version 2's statements still work.
	`
ALTER TABLE tasks ADD COLUMN export text;
`,
	// 4: the work units each attempt's guest did (0: none counted, or an
	// attempt recorded before). With its default, version 3's statements
	// still work.
	`
ALTER TABLE attempts ADD COLUMN work bigint NOT NULL DEFAULT 0;
`,
	// 5: the runners that work the store (tasks.Store.RecordRunner) and the
	// schedules (tasks.Schedule): new tables, so version 4's
	// statements still work. lease is in microseconds, every in nanoseconds (0: a cron
	// schedule), spec the task's JSON as text (kept as written).
	`
CREATE TABLE runners (
	owner     text PRIMARY KEY,
	host      text NOT NULL,
	pid       integer NOT NULL,
	version   text NOT NULL,
	started   timestamptz NOT NULL,
	last_seen timestamptz NOT NULL,
	lease     bigint NOT NULL,
	workers   integer NOT NULL,
	in_flight integer NOT NULL,
	draining  boolean NOT NULL
);
CREATE TABLE schedules (
	name      text PRIMARY KEY,
	every     bigint NOT NULL DEFAULT 0,
	cron      text NOT NULL DEFAULT '',
	spec      text NOT NULL,
	paused    boolean NOT NULL DEFAULT false,
	created   timestamptz NOT NULL,
	last_run  timestamptz,
	last_task bigint
);
`,
	// 6: attempts without their foreign key to tasks. Its check ran a
	// query per attempt recorded (SELECT ... FOR KEY SHARE of the task
	// row): 10,000 attempt rows took 365 ms to insert with it, 59 ms
	// without. Every attempt is inserted from the UPDATE of its task row,
	// in the same statement, so it never names a missing task; Prune now
	// deletes a task's attempts itself (ON DELETE CASCADE did). A runner of
	// version 5 or older that prunes during a rolling upgrade leaves the attempts
	// of the tasks it deletes: version 6's Prune deletes those too (see
	// sqlPrune).
	`
ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_task_id_fkey;
`,
	// 7: paused queues (no claim takes their tasks) and a name for each
	// module (the file it came from, or the API's name; NULL: none). A new
	// table and a nullable column: version 6's statements still work
	// (a runner of version 6 or older does not honour a pause).
	`
CREATE TABLE paused_queues (
	queue  text PRIMARY KEY,
	paused timestamptz NOT NULL
);
ALTER TABLE modules ADD COLUMN name text;
`,
	// 8: the attempt of a task that succeeded at its first claim, kept in
	// the task row instead of an attempts row (see sqlComplete): its owner
	// (NULL: no attempt kept here), end, stderr tail and work units; its
	// start is started_at, and the rest is implied (number 1, outcome
	// "succeeded", exit code 0, no reason, not counted, not resumed).
	// Recording it cost an attempts row and its primary key entry per
	// task. Nullable columns without defaults (no table rewrite): version
	// 7's statements still work, but a version 7 runner's history of such
	// a task shows no attempt.
	`
ALTER TABLE tasks ADD COLUMN att_owner text, ADD COLUMN att_ended timestamptz,
	ADD COLUMN att_stderr text, ADD COLUMN att_work bigint;
`,
	// 9: the latest snapshot of each task (tasks.Store.SaveSnapshot), in a table
	// of its own so that the tasks rows stay small (its blob TOASTed out of
	// line: reading the other columns reads none of it). It goes with its
	// task (ON DELETE CASCADE) and, by trigger tasks_ended_snapshot, when
	// its task ends, whatever statement ends it (a version 8 runner's
	// too). run_time is in nanoseconds. The tasks rows count the snapshots
	// stored (which also tells whether to look for one) and the attempts
	// lost in a row without progress. A new table, columns with constant
	// defaults (no table rewrite) and a trigger: version 8's statements
	// still work (a version 8 runner still counts a lost attempt, and
	// grows no lost streak).
	`
CREATE TABLE snapshots (
	task_id   bigint PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	size      integer NOT NULL,
	taken_at  timestamptz NOT NULL,
	owner     text NOT NULL,
	attempt   integer NOT NULL,
	work      bigint NOT NULL,
	run_time  bigint NOT NULL,
	suspended boolean NOT NULL,
	blob      bytea NOT NULL
);
ALTER TABLE tasks ADD COLUMN snapshots integer NOT NULL DEFAULT 0,
	ADD COLUMN lost_streak integer NOT NULL DEFAULT 0;
CREATE FUNCTION tasks_ended_snapshot() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
	EXECUTE format('DELETE FROM %I.snapshots WHERE task_id = $1', TG_TABLE_SCHEMA) USING NEW.id;
	RETURN NULL;
END
$fn$;
CREATE TRIGGER tasks_ended_snapshot AFTER UPDATE OF state ON tasks FOR EACH ROW
	WHEN (NEW.snapshots > 0 AND NEW.state IN ('succeeded', 'dead', 'cancelled'))
	EXECUTE FUNCTION tasks_ended_snapshot();
`,
	// 10: what a retry does with the task's snapshot (tasks.Spec.OnRetry;
	// NULL: resume, the default). Nullable: version 9's statements still
	// work (a version 9 runner resumes every task that has a snapshot).
	`
ALTER TABLE tasks ADD COLUMN on_retry text;
`,
	// 11: a schedule's overlap policy (tasks.Schedule.Overlap; '': skip,
	// the default). A constant default (no table rewrite): version 10's
	// statements still work (a version 10 runner fires as "allow").
	`
ALTER TABLE schedules ADD COLUMN overlap text NOT NULL DEFAULT '';
`,
	// 12: when a schedule's next period starts (tasks.Store's
	// DeferSchedule; NULL: not known yet), so that the scheduler reads
	// only the unpaused schedules that may be due; and, of a runner's
	// tasks in flight, those claimed that wait for a worker
	// (tasks.RunnerInfo.Held). Nullable or with a constant default:
	// version 11's statements still work (a version 11 runner reads every
	// schedule, and records no held tasks).
	`
ALTER TABLE schedules ADD COLUMN next_due timestamptz;
CREATE INDEX schedules_due ON schedules (next_due) WHERE NOT paused;
ALTER TABLE runners ADD COLUMN held integer NOT NULL DEFAULT 0;
`,
	// 13: tenants and fair claims (tasks/fair.go): a task's tenant (a
	// constant default: no table rewrite); the per-queue ready index
	// leads with it, so that a fair claim reads each tenant's first ready
	// tasks in claim order (and a claim with no tenants, the empty
	// tenant's: all of them); tasks_tenanted holds only queued tasks that
	// name a tenant, empty unless tenants are used, so that telling
	// whether a claim must be fair is one probe. Each tenant's settings
	// (tasks.Store's tenants; absent: weight 1, no limit, no quota), each
	// flow's pass, each queue's clock, and the work units of a tenant with
	// a quota in its current period, charged as attempts are recorded
	// (sqlComplete), and the token bucket of a tenant with a rate. A version 12 runner still works: it claims
	// without fairness or limits.
	`
ALTER TABLE tasks ADD COLUMN tenant text NOT NULL DEFAULT '';
DROP INDEX tasks_ready_queue;
CREATE INDEX tasks_ready_queue ON tasks (queue, tenant, priority DESC, run_at, id) WHERE state = 'queued';
CREATE INDEX tasks_tenanted ON tasks (queue, tenant) WHERE state = 'queued' AND tenant <> '';
CREATE TABLE tenants (
	tenant      text PRIMARY KEY,
	weight      integer NOT NULL DEFAULT 1,
	max_running integer NOT NULL DEFAULT 0,
	work_quota  bigint NOT NULL DEFAULT 0,
	work_period bigint NOT NULL DEFAULT 0, -- microseconds
	rate        double precision NOT NULL DEFAULT 0 -- starts a second
);
-- A rate-limited tenant's token bucket: what it held at "at".
CREATE TABLE tenant_tokens (
	tenant text PRIMARY KEY,
	tokens double precision NOT NULL,
	at     timestamptz NOT NULL
);
-- The work units a tenant with a quota used in its current period (the
-- period's number since the epoch), charged by the statement that records
-- its attempts (sqlComplete).
CREATE TABLE tenant_work (
	tenant text PRIMARY KEY,
	period bigint NOT NULL,
	work   bigint NOT NULL
);
CREATE TABLE fair_passes (
	queue  text NOT NULL,
	tenant text NOT NULL,
	pass   bigint NOT NULL,
	PRIMARY KEY (queue, tenant)
);
CREATE TABLE fair_clocks (
	queue text PRIMARY KEY,
	clock bigint NOT NULL
);
`,
	// 14: what an attempt appended to its task's snapshot
	// (tasks.Store.AppendSnapshot: a delta of the pages that
	// changed), so that a snapshot grows by its delta without rewriting
	// its blob. A snapshot's bytes are its blob, then the parts of the
	// attempt that took it from the blob's end to its size, in order of
	// their offset; a whole save deletes the parts, and they go with their
	// snapshot (ON DELETE CASCADE). A version 13 runner still works: it
	// never appends, and the parts of another attempt are never read.
	`
CREATE TABLE snapshot_parts (
	task_id bigint NOT NULL REFERENCES snapshots (task_id) ON DELETE CASCADE,
	attempt integer NOT NULL,
	off     bigint NOT NULL,
	blob    bytea NOT NULL,
	PRIMARY KEY (task_id, off)
);
`,
	// 15: when a worker began a running task's attempt (tasks.Task.BeganAt,
	// Store.MarkBegun; NULL: claimed, no worker has begun it; a nullable
	// column: no table rewrite). The tasks running before the upgrade
	// count as begun at their claim. A version 14 runner still works: it
	// marks nothing (its attempts are shown claimed while they run), and
	// its claims leave the mark of the task's previous attempt (a task it
	// claimed may be shown running).
	`
ALTER TABLE tasks ADD COLUMN began_at timestamptz;
UPDATE tasks SET began_at = started_at WHERE state = 'running';
`,
	// 16: the limits of queues (tasks.Store's SetQueue*), beside those of
	// tenants: a queue's settings (absent: no limit) with its token bucket
	// (tokens at tokens_at; NULL: full), its row locked by the fair claims
	// that may take its tasks (they take turns, across runners), and the
	// work units of a queue with a quota in its current period, charged
	// by sqlComplete (a table of its own: a completion never waits for a
	// claim's lock). A version 15 runner still works, without the queues'
	// limits: its claims pass them, and its completions charge no queue.
	`
CREATE TABLE queue_limits (
	queue       text PRIMARY KEY,
	max_running integer NOT NULL DEFAULT 0,
	work_quota  bigint NOT NULL DEFAULT 0,
	work_period bigint NOT NULL DEFAULT 0, -- microseconds
	rate        double precision NOT NULL DEFAULT 0, -- starts a second
	tokens      double precision NOT NULL DEFAULT 0,
	tokens_at   timestamptz
);
CREATE TABLE queue_work (
	queue  text PRIMARY KEY,
	period bigint NOT NULL,
	work   bigint NOT NULL
);
`,
	// 17: the snapshot an attempt resumed from (tasks.Attempt.ResumedFrom:
	// a tasks.SnapshotInfo as JSON; NULL: none), kept once the task's
	// snapshot is dropped. A version 16 runner still works: its attempts
	// record none.
	`
ALTER TABLE attempts ADD COLUMN resumed_from text;
`,
	// 18: the snapshot the running attempt of a task resumed from (JSON as
	// attempts.resumed_from; NULL: none), written as it resumes
	// (Store.MarkResumed) and cleared by the claim, so that an attempt
	// the store records as lost says what it resumed from. A version 17
	// runner still works; its attempts mark none, and its claims leave
	// the column as it was, so that while both versions run, an attempt a
	// version 17 runner claimed and lost may be recorded as resumed from
	// the snapshot an earlier attempt resumed from.
	`
ALTER TABLE tasks ADD COLUMN resumed_from text;
`,
}
