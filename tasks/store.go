package tasks

import (
	"context"
	"errors"
	"time"
)

// Errors a Store returns for conditions; test them with errors.Is.
var (
	// ErrNotFound: no task with that id.
	ErrNotFound = errors.New("task not found")
	// ErrModuleNotFound: no stored module with that sha256.
	ErrModuleNotFound = errors.New("module not found")
	// ErrStaleLease: the write carries a fencing token (attempt number) or
	// owner that is no longer the task's running attempt; it was refused.
	ErrStaleLease = errors.New("stale lease: the attempt no longer owns the task")
	// ErrSnapshotMoved: an append to a task's snapshot found it other than
	// the one it extends (not this attempt's, or another size); nothing was
	// written (Snapshotter.AppendSnapshot).
	ErrSnapshotMoved = errors.New("the stored snapshot is not the one the append extends")
	// ErrInvalidState: the operation does not apply to the task's state
	// (retrying a running task, say).
	ErrInvalidState = errors.New("operation not allowed in this task state")
	// ErrLocked: another process holds the store (single-node backends).
	ErrLocked = errors.New("store is locked by another runner")
	// ErrInvalidSpec: the submitted spec is not valid.
	ErrInvalidSpec = errors.New("invalid task spec")
)

// Lease identifies one running attempt: the owner and the fencing token.
// Every write an attempt makes carries its lease.
type Lease struct {
	TaskID int64  `json:"task_id"`
	Owner  string `json:"owner"`
	// Token is the attempt number; it grows by one on every claim.
	Token int `json:"token"`
}

// ClaimRequest asks for up to Max ready tasks.
type ClaimRequest struct {
	// Owner names the claiming worker pool (unique per process).
	Owner string
	// Queues limits the claim to these queues, each with its own maximum
	// number of tasks to claim; nil means every queue, up to Max in all.
	Queues map[string]int
	// Max is the most tasks to claim in all.
	Max int
	// Lease is how long the claim holds before another owner may take over.
	Lease time.Duration
	// LostLimit is how many attempts in a row a task may lose without
	// progress before a claim that takes it over makes it dead (0:
	// DefaultLostLimit).
	LostLimit int
}

// ClaimInline is the largest input, and the largest checkpoint, that Claim
// returns with a claimed task. A larger one is left out (Task.Input, or
// Claimed.Checkpoint, is nil while Task.InputSize, or Task.CheckpointSize,
// says how big it is) and the worker reads it when the attempt starts
// (Get, Checkpoint). A pool claims up to a batch of tasks ahead of its
// workers: with every payload inline, a backlog of large inputs made it
// hold the batch's inputs at once (40 queued tasks of 60 MB took a runner
// to 9 GB), and a claim's transaction read them all. Now what is claimed
// ahead holds at most ClaimInline bytes of payload a task; only running
// attempts hold more.
const ClaimInline = 64 << 10

// PayloadLeftOut reports whether Claim left the task's input or its
// checkpoint out (see ClaimInline): the worker must read them.
func (c Claimed) PayloadLeftOut() (input, checkpoint bool) {
	return c.Task.InputSize > ClaimInline && c.Task.Input == nil,
		c.Task.CheckpointSize > ClaimInline && c.Checkpoint == nil
}

// CheckpointOf is the checkpoint a Store returns (Claimed.Checkpoint,
// Checkpoint) from what it read: size is the stored checkpoint's size (-1:
// none) and blob its bytes, nil when the claim left it out (over
// ClaimInline) or when the database gave an empty value as NULL. It is nil
// when there is no checkpoint or it was left out, and never nil when there
// is one, even an empty one.
func CheckpointOf(size int, blob []byte) []byte {
	if size < 0 || (blob == nil && size > ClaimInline) { // none, or left out of a claim
		return nil
	}
	if blob == nil {
		return []byte{}
	}
	return blob
}

// Claimed is a task handed to a worker, with its lease and the checkpoint
// its attempt starts from (nil if none). An input or a checkpoint over
// ClaimInline bytes is left out: see PayloadLeftOut.
type Claimed struct {
	Task       Task
	Lease      Lease
	Checkpoint []byte
}

// Completion is the end of an attempt, as decided by the worker pool's
// retry policy, written with the attempt's lease.
type Completion struct {
	Lease Lease
	// State is the task's next state: StateSucceeded, StateQueued (retry or
	// interrupted), StateDead or StateCancelled. The store turns StateQueued
	// into StateDead when a counted attempt uses up MaxAttempts, and into
	// StateCancelled when the task's cancellation was requested.
	State State
	// RunAt is when a requeued task becomes ready again (zero: now).
	RunAt time.Time
	// Result is stored on success (the guest's stdout).
	Result []byte
	// Attempt is the attempt record to keep (TaskID, Number and Owner are
	// filled from Lease by the store).
	Attempt Attempt
}

// Resolved is c with the defaults every Store applies, as of now: the
// attempt's EndedAt (now) and Outcome (DefaultOutcome), RunAt (now), and
// Result only for a success (nil otherwise: nothing is stored).
func (c Completion) Resolved(now time.Time) Completion {
	if c.Attempt.EndedAt.IsZero() {
		c.Attempt.EndedAt = now
	}
	if c.Attempt.Outcome == "" {
		c.Attempt.Outcome = DefaultOutcome(c.State, c.Attempt.Counted)
	}
	if c.RunAt.IsZero() {
		c.RunAt = now
	}
	if c.State != StateSucceeded {
		c.Result = nil
	}
	return c
}

// DefaultOutcome is the outcome a Store records for an attempt whose
// Completion left Attempt.Outcome empty: "succeeded" or "cancelled" when
// the task goes to that state, else "failed" for a counted attempt and
// "interrupted" for one that is not counted.
func DefaultOutcome(st State, counted bool) string {
	switch {
	case st == StateSucceeded:
		return "succeeded"
	case st == StateCancelled:
		return "cancelled"
	case counted:
		return "failed"
	default:
		return "interrupted"
	}
}

// ListFilter selects tasks for List. Zero fields match everything.
type ListFilter struct {
	State State
	Queue string
	// AfterID pages: only ids greater than it.
	AfterID int64
	// Limit caps the number of tasks returned (default 100).
	Limit int
}

// Store is the durable queue. Implementations: tasks/sqlite (one node,
// one process) and tasks/postgres (several runners sharing a database).
// Every backend passes the conformance suite in tasks/storetest. What only
// some backends can do is an optional interface of its own (capability.go):
// test for it with a type assertion.
//
// All times are the store's clock. Writes that carry a Lease fail with
// ErrStaleLease unless the task is running under that exact owner and token.
type Store interface {
	// PutModule stores wasm content-addressed and returns its hex sha256.
	// Storing the same bytes twice stores one module.
	PutModule(ctx context.Context, wasm []byte) (string, error)
	// Module returns the bytes of a stored module, ErrModuleNotFound if none.
	Module(ctx context.Context, sha256 string) ([]byte, error)

	// Submit queues a task. With an IdempotencyKey already used, it returns
	// the first task and existing=true. ErrModuleNotFound if the module is
	// not stored; ErrInvalidSpec (wrapped) for a bad spec.
	Submit(ctx context.Context, spec Spec) (task Task, existing bool, err error)
	// Get returns one task, ErrNotFound if none.
	Get(ctx context.Context, id int64) (Task, error)
	// List returns tasks by ascending id, without their Input and Result
	// (InputSize and ResultSize are set; Get returns the bytes): a list
	// stays small whatever the tasks carry.
	List(ctx context.Context, f ListFilter) ([]Task, error)
	// Attempts returns a task's attempt history, oldest first.
	Attempts(ctx context.Context, id int64) ([]Attempt, error)
	// Checkpoint returns the stored checkpoint of a task (nil if none).
	Checkpoint(ctx context.Context, id int64) ([]byte, error)

	// Claim atomically moves up to req.Max ready tasks to running under a
	// new lease, each with its input and checkpoint up to ClaimInline bytes
	// (larger ones are left out: Claimed.PayloadLeftOut): queued tasks whose RunAt has come (by priority, highest
	// first, then RunAt, then id), and running tasks whose lease expired.
	// Such a lost attempt is recorded with outcome "lost" and not counted
	// (Failures unchanged: its runner died, the task may not be at fault),
	// and its task's LostStreak grows by one; a task whose streak reaches
	// req.LostLimit (0: DefaultLostLimit) becomes dead instead of being
	// claimed, its LastError and the attempt's reason ending with
	// LostLimitReason (a task whose cancellation was requested becomes
	// cancelled). The streak goes back to 0 when the task stores a
	// snapshot or a checkpoint, when an attempt of it ends through
	// Complete, and on Retry. Each claim increments Attempt; a claimed
	// task's Snapshot says whether its attempt may resume from one.
	Claim(ctx context.Context, req ClaimRequest) ([]Claimed, error)
	// Heartbeat extends the given leases to now+extend. It returns the
	// leases that are no longer held (lost) and the tasks whose
	// cancellation was requested (cancel).
	Heartbeat(ctx context.Context, leases []Lease, extend time.Duration) (lost, cancel []Lease, err error)
	// SaveCheckpoint durably replaces the task's checkpoint; it has
	// committed when it returns nil.
	SaveCheckpoint(ctx context.Context, lease Lease, blob []byte) error
	// Progress records a progress report.
	Progress(ctx context.Context, lease Lease, done, total int64) error
	// Complete ends attempts in one transaction; errs[i] is the result of
	// cs[i] (ErrStaleLease for a stale one), err a failure of the batch.
	Complete(ctx context.Context, cs []Completion) (errs []error, err error)
	// Release gives back claimed tasks whose attempt never started (a pool
	// that claimed ahead and is stopping): each lease still held goes back to
	// queued as if it had not been claimed — its attempt number is restored,
	// its lease cleared, no attempt is recorded, failures unchanged, ready at
	// once (run_at unchanged). A lease no longer held is skipped silently. One
	// transaction.
	//
	// A task whose cancellation was requested becomes cancelled instead (as
	// with RecoverRunning), its attempt number restored all the same.
	//
	// Restoring the attempt number means the next claim hands out the same
	// token again. Fencing allows it: it only has to keep apart attempts
	// that write, and a released attempt never started, so it never wrote
	// and never will (the caller drops it with the release). Until the task
	// is claimed again, a write with the released lease is refused
	// (ErrStaleLease): the task is no longer running. Once another owner
	// claims it, the lease differs by owner and is still refused; a claim by
	// the same owner hands out an equal lease, which is why the caller must
	// never use a lease it released.
	Release(ctx context.Context, leases []Lease) error

	// Cancel cancels a queued task at once (returned state cancelled) or,
	// for a running task, sets CancelRequested (the worker ends it).
	// ErrInvalidState for a task already terminal.
	Cancel(ctx context.Context, id int64) (Task, error)
	// Retry puts a dead or cancelled task back in the queue with its
	// failure count and lost streak reset; ErrInvalidState otherwise.
	Retry(ctx context.Context, id int64) (Task, error)
	// Close releases the store (and its lock).
	Close() error
}
