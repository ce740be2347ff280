package server

import "time"

// The server's own shapes of the counters it exports and shows. It does
// not import package pool or package sandbox to name their Stats: those
// bring the WebAssembly runtime (wazero) into every program that serves
// the API. The caller fills them from its pool and runtime.

// PoolStats are the worker pool's counters (pool.Stats, field for field:
// convert with server.PoolStats(p.Stats())): the stint_pool_* metrics and
// the dashboard's runner section.
type PoolStats struct {
	// Running: attempts in flight (claimed and not yet recorded).
	Running int
	// Held: of Running, the tasks claimed that wait for a free worker
	// (claimed ahead); the store shows them claimed. GivenBack: tasks
	// claimed ahead that waited too long behind busy workers and went
	// back to the queue, for any runner.
	Held, GivenBack int
	// Started: attempts a worker has started.
	Started int
	// Finished: attempts that ended on their own (any outcome).
	Finished int
	// Interrupted: attempts that stopped on the pool's RequestStop.
	Interrupted int
	// Forced: attempts the pool's ForceStop ended.
	Forced int
	// Lost: attempts whose result was dropped (lease taken over, or the
	// store could not record them).
	Lost int
	// Unrecorded: attempts whose results the store still refused when the
	// pool stopped.
	Unrecorded int
	// LostToCrashes: attempts lost to crashes (their runners died while
	// running them) that the pool's store recorded as lost, those that
	// made their task dead included.
	LostToCrashes int
	// Suspended: attempts suspended with their snapshot stored (a drain,
	// a deadline); Resumed: attempts that resumed from a snapshot.
	Suspended, Resumed int
	// Snapshots, SnapshotBytes, SnapshotTime: the snapshots stored, their
	// encoded bytes, and the time encoding and writing them took;
	// SnapshotDeltas: those stored as what changed since the one before.
	Snapshots      int
	SnapshotDeltas int
	SnapshotBytes  int64
	SnapshotTime   time.Duration
}

// SandboxStats are the sandbox runtime's counters the stint_sandbox_*
// metrics export: those of sandbox.Stats the server reads, each with its
// name and meaning there.
type SandboxStats struct {
	// Modules: compiled modules kept in memory now.
	Modules int
	// Compilations: modules compiled or loaded from the on-disk cache.
	Compilations int64
	// Evictions: modules dropped to stay within the limits.
	Evictions int64
	// CacheFailures: compilations without the on-disk cache (it failed).
	CacheFailures int64
	// Compiling: compilations running now; CompilingAbandoned: those of
	// them no caller waits for any more.
	Compiling, CompilingAbandoned int
	// CompileWaiting: of Compiling, those waiting for their turn or for
	// compile memory (limits.compile_memory), not yet in wazero.
	CompileWaiting int
	// CompileTimeouts: modules refused because compiling them took longer
	// than the compile budget.
	CompileTimeouts int64
	// Abandoned: runs the stop watchdog gave up on; Stray: those of them
	// still running now.
	Abandoned int64
	Stray     int
	// Refused: modules refused for good.
	Refused int
}
