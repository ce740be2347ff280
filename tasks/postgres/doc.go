// Package postgres is the backend of tasks.Store for several runners on one
// queue: the modules, tasks, inputs, results, checkpoints, snapshots and
// attempt history in a PostgreSQL schema, through github.com/jackc/pgx/v5 (one
// pgxpool per Store). It passes the conformance suite of tasks/storetest,
// as tasks/sqlite does, and adds what a shared store needs: RecoverOwn,
// wake-ups across machines (ListenWakeups), pruning once across runners,
// and Ping for readiness.
//
// # Opening
//
// Open takes a connection string (postgres://user@host:5432/db?..., or
// key=value pairs) and Options. The store lives in one schema: Options.Schema
// (created when missing), else the connection's search path (public by
// default). Several schemas hold independent stores in one database.
//
// The store's connections use READ COMMITTED whatever the server's default
// (its statements rely on a locked row being checked again, not refused),
// and application_name "stint" unless the connection string sets one.
// Through a pooler such as PgBouncer, use session pooling: the wake-up
// listener's LISTEN and Prune's advisory lock are session state. Keep
// synchronous_commit on (the default) for the store: a claim lost in a
// crash of PostgreSQL after its commit was acknowledged could hand the same
// lease out twice, defeating fencing.
//
// Open brings the schema up to SchemaVersion in one transaction under a
// transaction-level advisory lock named after the schema: runners starting
// together migrate once (the others wait for the lock, then find the schema
// up to date). It refuses a schema written by a newer Stint
// (ErrSchemaTooNew) and a schema holding another application's tables
// (ErrNotStore).
//
// # Claims, leases and fencing
//
// A claim is one round trip and one transaction: a statement that takes
// over the expired leases (their attempts recorded as lost and not
// counted, their tasks' lost streaks grown, dead at the claim's LostLimit,
// as on SQLite), then
//
//	UPDATE tasks ... WHERE ctid = ANY(ARRAY(SELECT ctid ... ORDER BY priority DESC,
//	    run_at, id LIMIT n FOR UPDATE SKIP LOCKED)) ... RETURNING ...
//
// (per queue, a LATERAL subquery of that form for each queue and its
// maximum). Runners claiming at once lock different rows and never wait for
// each other; the update takes each locked row at its address (a TID scan,
// see claimSet in stmts.go). The fenced writes find their rows by primary key (the
// fence's state check is written so that no partial index matches it; see
// isRunning in stmts.go). Every write of an attempt (heartbeat, checkpoint, progress,
// completion, release) carries its lease and is fenced on owner and token in
// the UPDATE that takes the row, so a runner whose lease moved on (it was
// partitioned, or stopped, past its lease) has every write refused with
// tasks.ErrStaleLease, whatever it does once it is back. Heartbeat,
// Complete and Release write their whole batch in one statement (the items
// as arrays, unnest), Complete with its attempt records and results.
// While some queued task names a tenant, or a tenant or a queue has a
// limit, those claims take nothing (a guard evaluated once per statement)
// and the claim is fair instead (fair.go: tenants in turn, tasks/fair.go,
// within the tenants' and queues' limits, whose rows it locks), in one
// transaction of a few round trips.
// CompleteAndClaim (tasks.CompletingClaimer, completeclaim.go) sends a
// Complete's statement and a Claim's in one batch: one round trip, one
// implicit transaction, the same fencing.
//
// There is no exclusive lock: RecoverRunning, tasks.Store's single-node
// recovery, ends every runner's attempts, and a shared store's runners call
// RecoverOwn with their own (stable) owner id instead. The tasks of a runner
// that died and does not come back are claimed again once their leases
// expire, by the next claim of any runner.
//
// # Time
//
// Times come from Options.Now (default time.Now), never from PostgreSQL's
// now(): the conformance suite moves a fake clock. Runners sharing a store
// must therefore keep their clocks synchronized (NTP): a runner whose clock
// is ahead by d takes over leases d early. Times are stored as timestamptz,
// to the microsecond, and returned in UTC.
//
// # Wake-ups
//
// Once committed, Submit and Retry notify the schema's channel (Channel);
// so do Release, the recoveries, and a Complete that requeues a task ready
// at once (an attempt interrupted by a stopping runner), so that an idle
// runner elsewhere takes the task at once. The NOTIFY goes in a
// transaction of its own, sent by a goroutine of the Store that coalesces
// the wake-ups asked for meanwhile, without waiting for its commit to be
// flushed: PostgreSQL serializes notifying commits, and a NOTIFY in each
// submit's transaction made every submit wait for the flush of the one
// before. ListenWakeups returns a channel of such wake-ups from a
// connection of its own, which it opens again, with backoff, when it is
// lost, and then sends one wake-up (what was
// notified meanwhile is lost). Polling stays the fallback.
//
// # Data
//
// A task's input and result live in tables of their own (inputs, results),
// written once, at submit and at success, and its checkpoint in
// checkpoints; the task row, rewritten by every claim, heartbeat and
// completion, keeps their sizes. List reads neither. A task's latest
// snapshot (tasks.Store.SaveSnapshot, a bytea of up to hundreds of MB, TOASTed)
// is in snapshots: List and Claim read its small columns (Task.Snapshot,
// looked up only for a task that stored one), Snapshot alone its blob; a
// trigger drops it when its task ends, whatever statement ends it, and
// SaveCheckpoint when a checkpoint is saved after it. Deleting a task
// (Prune, Delete) deletes them with it (ON DELETE CASCADE), and its attempt
// records (by the same statement: since schema version 6 attempts have no
// foreign key, whose check cost a query per attempt recorded).
//
// The attempt of a task that succeeded at its first claim, plainly
// (outcome "succeeded", exit code 0, no reason, not counted, not resumed),
// has no attempts row (schema version 8): its owner, end, stderr tail and
// work units are columns of the task row (att_*), written by the
// completion's update, and its start is started_at; Attempts reads it
// back from there, so the history is the same. Every other attempt (a
// failure, a lost or interrupted one, any attempt after the first) has its
// row. That saves, for most tasks, a heap row and an index entry. During a
// rolling upgrade from version 7, a runner of version 7 shows no attempt
// for such a task.
//
// # Periodic work
//
// Prune runs under a session advisory lock of the schema: when another
// runner holds it, Prune returns at once without work, so that retention
// runs once across runners however many call it.
//
// # Connection loss
//
// Every error that comes from PostgreSQL being unreachable wraps
// ErrUnavailable and the driver's error, and names the database
// (host:port/name, every host of a connection string that has several;
// never credentials). The pool opens new connections as
// they are needed, so calls work again as soon as PostgreSQL is back; Ping
// tells a readiness probe when that is. A write whose connection is lost
// while it commits may have committed: a fenced one retried applies once
// or is refused as stale; a claim's is given back by the Store's next
// Claim (see Claim). Open fails at once when PostgreSQL cannot be reached;
// waiting for it is the caller's (stint.Config.StoreWait, `runner serve`'s
// store_wait).
//
// A failover needs nothing of the Store but a connection string that
// names every server that may be the primary and asks for the writable
// one (postgres://u@db1:5432,db2:5432/db?target_session_attrs=read-write):
// pgx tries the hosts in turn for each new connection, the pool's and the
// wake-up listener's, and refuses a standby, so once a standby is
// promoted the Store works on it without being told. Fencing holds across
// it only with synchronous replication (an acknowledged claim or result is
// on the standby) and an old primary that stays down.
package postgres
