// Package tasks is Stint's durable task runner: the task model and its
// state machine, the Store interface with its backends (tasks/sqlite for a
// single node), and the worker pool that claims tasks under leases, runs
// each in the sandbox, records checkpoints, and retries with backoff.
//
// Every write an attempt makes carries its Lease (owner + fencing token);
// a store refuses a stale one with ErrStaleLease, so an abandoned attempt
// can never complete, fail or checkpoint a task someone else now runs.
package tasks
