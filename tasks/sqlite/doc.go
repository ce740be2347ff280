// Package sqlite is the embedded, single-node backend of tasks.Store: one
// SQLite file (through the pure-Go modernc.org/sqlite driver, so
// CGO_ENABLED=0 works) holding the modules, the tasks, their checkpoints,
// what describes their latest snapshots and their attempt history; the
// snapshots' bytes are files in a directory beside it (SnapshotDir).
//
// # Opening
//
// Open creates the file (and its directory) when missing, applies the
// schema migrations in one transaction, and refuses a database written by a
// newer Stint (ErrSchemaTooNew), a file that is not a SQLite database, and a
// file or directory it cannot write. The database runs in WAL mode with
// synchronous=NORMAL (a crash of the machine may lose the last few
// commits, never corrupt the file), foreign keys on, and a busy timeout so
// that several processes may use one file: every write is an IMMEDIATE
// transaction.
//
// `runner serve` opens the store with Options.Exclusive: it takes a
// non-blocking flock on path+".lock" (writing its pid there), so a second
// serve on the same data directory fails at once with an error wrapping
// tasks.ErrLocked, and then calls RecoverRunning to make the tasks the
// previous process left running claimable again. CLI commands (submit,
// list, cancel, ...) open the same file without Exclusive while serve runs.
//
// # Connections
//
// Writes go through one connection (database/sql pool of size 1), which
// serializes them in the process without SQLite busy waits; reads (Get,
// List, Attempts, Module, Checkpoint) use a separate pool of query-only
// connections, so they never queue behind a write batch (WAL lets them read
// the last committed state while a write is in progress). Measured on a
// 2-core machine while one pool claimed and completed tasks flat out: a Get
// took about 17 µs on the read pool, 300-430 µs through the writer.
//
// Other processes (the CLI next to `runner serve`) write through SQLite's
// file locks: their IMMEDIATE transaction waits, polling, up to
// Options.BusyTimeout for a gap between the server's transactions.
//
// # Wake-ups
//
// Submit and Retry, once committed, send one byte to a Unix datagram socket
// named after the store file in Linux's abstract namespace; a runner that
// called ListenWakeups on its own Store for that file gets a value on its
// channel and can claim at once instead of at its next poll (`runner
// serve` does: a task the CLI submits starts in about half a millisecond
// instead of 50 ms on average). Sending never blocks or fails; off Linux,
// or with no listener, nothing happens and polling finds the task.
//
// # Data
//
// A task's input and result live in tables of their own (inputs,
// results), written once, at submit and at success; the task row keeps
// their sizes. SQLite rewrites a whole row, overflow pages included, when
// an update changes its size, as claims and completions do: in the row, a
// large input was copied at every claim. List reads neither. A task's
// latest snapshot (tasks.Store.SaveSnapshot, up to hundreds of MB; snapshot.go) is
// a file in the snapshot directory, SnapshotDir (stint.db-snapshots/ beside
// stint.db), written and synced before the short transaction that points
// the task's row in table snapshots at it, so that no other write of the
// store waits for the big one; List and Claim read what describes it
// (Task.Snapshot, looked up only for a task that stored one) from the row,
// only Snapshot reads the file. The row is dropped when its task ends (a
// trigger, whatever statement ends it), when a checkpoint is saved after
// it, and with its task (Delete, Prune, ON DELETE CASCADE); a sweep deletes
// the files no row names once they are a minute old (snapfiles.go has the
// rules that keep rows and files in step).
//
// Times are stored as integer microseconds since the Unix epoch, read back
// in UTC: every time a Store returns is truncated to the microsecond. A
// task's checkpoint is kept after the task ends, successful or not (it is
// small, bounded by the task's checkpoint limit, and useful to inspect); it
// goes with the task when Prune deletes it. Attempt records use exit code
// -1 when no exit code is known (a lost attempt).
//
// # Performance
//
// Claim is one UPDATE ... RETURNING over the ready index (with the
// checkpoints joined in the same statement; while some queued task names
// a tenant, or a tenant or a queue has a limit, the claim is fair
// instead: fair.go, tenants in turn as
// tasks/fair.go plans it, each queue's tenants walked and their first
// ready tasks read in one statement each); Complete and Heartbeat take
// one transaction for their whole batch, with prepared statements. See
// BenchmarkClaimComplete for the throughput on your machine, and
// BenchmarkClaimSmall for the cost of a claim and a completion of a task
// or two, which is mostly per transaction. What keeps that cost down:
//
//   - the claim statements write their LIMITs as +?N, so that SQLite does
//     not re-prepare them whenever the number of tasks asked for changes;
//   - a claim looks for expired leases only when one may have expired,
//     not on every call: at once after the expiry of a lease this Store
//     granted or extended, and at least every half second for the leases
//     of other processes on the same file;
//   - write transactions run on a connection the Store holds, with BEGIN
//     IMMEDIATE, COMMIT and ROLLBACK prepared once, and their statements
//     run without the driver's per-statement cancellation watch (a
//     context only ends the wait to begin a transaction);
//   - a batch of completions is two statements per chunk of up to 64
//     (complete.go): the attempt records, inserted from the task rows
//     under the leases' fences, then the tasks' update (and a third, the
//     results, when some stdout is not empty); each statement joins its
//     tasks to a VALUES list padded to a power of two, so that a few
//     statements prepared once serve every batch size. A lone completion
//     uses the same three statements for one task.
package sqlite
