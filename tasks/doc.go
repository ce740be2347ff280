// Package tasks is the model of Stint's durable queue, shared by every
// part that reads or writes tasks: Task, Spec and Attempt with the state
// machine, the Store interface every backend implements (store.go;
// tasks/sqlite, tasks/postgres; conformance suite in tasks/storetest) and
// the few optional capabilities only one backend has (capability.go), what
// its methods take and give (bulk.go: SubmitMany; ops.go: bulk actions;
// runners.go: the runners' records; schedule.go: schedules, their periods
// and FireSchedules; fair.go: tenants, their weights and the plan of a
// fair claim), the errors a store returns, the retry policy that spaces
// failed attempts, and CheckSpec, the one check of a spec against what a
// runner allows. A mount's host directory is checked and opened by
// internal/hostdir (mounts.go: OpenMounts, which the pool and `runner run`
// grant mounts with): tasks itself makes no system call.
//
// Every write an attempt makes carries its Lease (owner + fencing token);
// a store refuses a stale one with ErrStaleLease, so an abandoned attempt
// can never complete, fail or checkpoint a task someone else now runs.
//
// The worker pool that claims and runs tasks is package pool; tasks
// imports neither it nor the sandbox.
package tasks
