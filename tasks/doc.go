// Package tasks is Stint's durable task runner: the task model and its
// state machine, the Store interface with its backends (tasks/sqlite for a
// single node), and the worker pool that claims tasks under leases, runs
// each in the sandbox, records checkpoints, and retries with backoff.
//
// Every write an attempt makes carries its Lease (owner + fencing token);
// a store refuses a stale one with ErrStaleLease, so an abandoned attempt
// can never complete, fail or checkpoint a task someone else now runs.
//
// A Pool runs Workers tasks at once. It claims short tasks ahead of its
// free workers (PoolConfig.ClaimAhead) and writes completions in batches,
// so that a store transaction carries tens of tasks; it renews leases with
// a heartbeat, writes the guests' progress about once a second, and backs
// off while the store fails. It looks for work at each Poll, at once after
// Pool.Submit, and on every value of a channel given to WakeOn (wake-ups
// from other processes, see sqlite.Store.ListenWakeups). StopIntake,
// RequestStop, ForceStop and Idle are the phases package shutdown drives;
// Stop does them all. An attempt stopped by the pool, or not run because
// the sandbox runtime was closed, is queued again with its checkpoint and
// not counted against the task's attempts.
package tasks
