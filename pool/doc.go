// Package pool is Stint's worker pool: it claims tasks from a tasks.Store
// under leases, runs each in an Executor (the sandbox runtime), records
// checkpoints and progress, and decides with the task's retry policy what
// each outcome means (succeeded, queued again with backoff, dead).
//
// Every write an attempt makes carries its tasks.Lease (owner + fencing
// token); a store refuses a stale one, so an abandoned attempt can never
// complete, fail or checkpoint a task someone else now runs.
//
// A Pool runs Workers tasks at once. A task it claimed is shown claimed
// (tasks.StateClaimed) until a worker begins it: the pool marks the begun
// attempts in the store (tasks.Store.MarkBegun) at most every BegunEvery,
// in one write, leaving out those that ended meanwhile. It claims short tasks ahead of its
// free workers (Config.ClaimAhead: as many as they run in that time, at
// most Config.ClaimBatch; a tenant's task, when the pool holds no other
// of that tenant's, starts before the held tasks of others) and writes
// completions in batches, so that a
// store transaction carries tens to hundreds of tasks; with a store that
// can (tasks.CompletingClaimer) a batch of completions also claims, in
// the same round trip, the room it leaves, unless a claim is under way
// already. The flow is pipelined: a claim is sized on the work in hand
// (an attempt that ended no longer counts, though its completion is not
// yet written) and goes to the store beside the completions being
// written, and two batches of completions may be written at once, each
// on its own connection, so that the workers do not wait for a commit
// and a database can work on several statements at once. It renews
// leases with a
// heartbeat, writes the guests' progress about once a second, and backs
// off while the store fails. It looks for work at each Poll, at once after
// Pool.Submit, and on every value of a channel given to WakeOn (wake-ups
// from other processes, see tasks.Store.ListenWakeups). StopIntake, RequestStop,
// ForceStop and Idle are the phases package shutdown drives; Stop does
// them all. An attempt stopped by the pool, or not run because the sandbox
// runtime was closed, is queued again with its checkpoint and not counted
// against the task's attempts; with a resumable runtime and a store that
// keeps snapshots, ForceStop first suspends the guests that can be, and
// their tasks resume where they stopped.
//
// The files follow the pool's jobs (every one is named here: internal/maps
// checks it): pool.go (the Pool: New, Start, Submit, Stats), config.go,
// claim.go (claiming and claiming ahead), run.go (compiling and running an
// attempt), input.go (an attempt's stdin from Config.Input), spec.go (a
// task's spec and limits as the sandbox takes them: SandboxSpec,
// SandboxLimits), record.go (the outcome's meaning and the batched
// writes), heartbeat.go (leases, cancellations, progress), begun.go
// (marking the attempts workers began), stop.go (the
// stop ladder), wait.go (waiting for a task, wake-ups), mounts.go (the
// runner's own check of a task's mounts), events.go (Config.OnEvent),
// snapshot.go (snapshots in the queue: resuming from a task's stored
// snapshot, background snapshots, suspending on a drain or a deadline)
// and executor.go (the Executor, what the pool needs of the sandbox).
package pool
