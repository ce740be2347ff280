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
	// written (Store.AppendSnapshot).
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
// (Get, Checkpoint): what a pool claims ahead of its workers holds at most
// ClaimInline bytes of payload a task.
const ClaimInline = 64 << 10

// Why: with every payload inline, a backlog of large inputs made a pool
// hold the inputs of the batch it claimed ahead at once (40 queued tasks
// of 60 MB took a runner to 9 GB), and a claim's transaction read them
// all; only running attempts hold more now.

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

// Store is the durable queue, the one interface every backend implements:
// tasks/sqlite (one node, one process) and tasks/postgres (several runners
// sharing a database), both checked by the conformance suite in
// tasks/storetest. Its methods are grouped by what they serve: modules,
// submits and reads, the attempts of a runner, snapshots, an operator's
// actions, tenants, runners and schedules. The few things only one backend
// can do are optional interfaces of their own (capability.go): test for
// one with a type assertion.
//
// All times are the store's clock. Writes that carry a Lease fail with
// ErrStaleLease unless the task is running under that exact owner and token.
type Store interface {
	// PutModule stores wasm content-addressed and returns its hex sha256.
	// Storing the same bytes twice stores one module.
	PutModule(ctx context.Context, wasm []byte) (string, error)
	// Module returns the bytes of a stored module, ErrModuleNotFound if none.
	Module(ctx context.Context, sha256 string) ([]byte, error)
	// NameModule records name (CheckModuleName) for the stored module
	// sha256, for people: a list shows it instead of a hash; a module
	// stored under several names keeps the latest. ErrModuleNotFound if
	// none.
	NameModule(ctx context.Context, sha256, name string) error
	// ModuleNames returns the name of each named module among shas (a
	// module with no name, or not stored, is left out).
	ModuleNames(ctx context.Context, shas []string) (map[string]string, error)

	// Submit queues a task. With an IdempotencyKey already used, it returns
	// the first task and existing=true. ErrModuleNotFound if the module is
	// not stored; ErrInvalidSpec (wrapped) for a bad spec.
	Submit(ctx context.Context, spec Spec) (task Task, existing bool, err error)
	// SubmitMany is Submit for every spec of specs, in one transaction,
	// with one wake-up: results[i] is the outcome of specs[i]. Every spec
	// is validated first (Spec.Validate, and the store's own limits); an
	// invalid one, or one whose module is not stored, fails the whole call
	// with an error that names its index (wrapping ErrInvalidSpec or
	// ErrModuleNotFound), and nothing is stored. Idempotency keys behave
	// as in Submit: a key already used returns the first task with
	// Existing set, and a key repeated inside specs makes one task, its
	// later occurrences returned with Existing set (as successive Submits
	// would).
	SubmitMany(ctx context.Context, specs []Spec) ([]Submitted, error)
	// Get returns one task, ErrNotFound if none.
	Get(ctx context.Context, id int64) (Task, error)
	// List returns tasks by ascending id, without their Input and Result
	// (InputSize and ResultSize are set; Get returns the bytes): a list
	// stays small whatever the tasks carry.
	List(ctx context.Context, f ListFilter) ([]Task, error)
	// ListNewest returns the tasks matching f by descending id, without
	// their Input and Result as List does (an empty, non-nil slice when
	// none), without walking every task: for a dashboard.
	ListNewest(ctx context.Context, f NewestFilter) ([]Task, error)
	// CountTasks counts the tasks in each state, in total and by queue
	// (see TaskCounts), from one snapshot of the store, without walking
	// every task.
	CountTasks(ctx context.Context) (TaskCounts, error)
	// Attempts returns a task's attempt history, oldest first.
	Attempts(ctx context.Context, id int64) ([]Attempt, error)
	// Checkpoint returns the stored checkpoint of a task (nil if none).
	Checkpoint(ctx context.Context, id int64) ([]byte, error)

	// Claim atomically moves to running, under a new lease, up to req.Max
	// of: the queued tasks whose RunAt has come (by priority, highest
	// first, then RunAt, then id) and the running tasks whose lease
	// expired, skipping paused queues (PauseQueue). Inputs and checkpoints
	// over ClaimInline bytes are left out (Claimed.PayloadLeftOut). A lost
	// attempt is recorded "lost", not counted (its runner died), and its
	// task's LostStreak grows by one; at req.LostLimit (0:
	// DefaultLostLimit) the task is dead instead, its LastError and the
	// attempt's reason ending with LostLimitReason (cancelled if its
	// cancellation was requested). The streak goes back to 0 when the task
	// stores a snapshot or a checkpoint, when an attempt of it ends through
	// Complete, and on Retry. Each claim increments Attempt; a claimed
	// task's Snapshot says whether its attempt may resume from one.
	Claim(ctx context.Context, req ClaimRequest) ([]Claimed, error)
	// Heartbeat extends the given leases to now+extend. It returns the
	// leases that are no longer held (lost) and the tasks whose
	// cancellation was requested (cancel).
	Heartbeat(ctx context.Context, leases []Lease, extend time.Duration) (lost, cancel []Lease, err error)
	// MarkBegun sets Task.BeganAt (cleared by Claim) for the leases held
	// and not yet marked, in one transaction.
	MarkBegun(ctx context.Context, leases []Lease) error
	// SaveCheckpoint durably replaces the task's checkpoint; it has
	// committed when it returns nil.
	SaveCheckpoint(ctx context.Context, lease Lease, blob []byte) error
	// Progress records a progress report.
	Progress(ctx context.Context, lease Lease, done, total int64) error
	// Complete ends attempts in one transaction; errs[i] is the result of
	// cs[i] (ErrStaleLease for a stale one), err a failure of the batch.
	Complete(ctx context.Context, cs []Completion) (errs []error, err error)
	// Release gives back, in one transaction, claimed tasks no worker
	// began (a pool that claimed ahead and is stopping): each lease still
	// held goes back to queued as if never claimed (attempt number
	// restored, lease cleared, nothing recorded, failures and run_at
	// unchanged), or to cancelled if its cancellation was requested; a
	// lease no longer held is skipped. The next claim may hand out the same
	// token again (a released attempt never wrote): a write with a released
	// lease is refused (ErrStaleLease) until the task is claimed again, and
	// after a claim by another owner, but a claim by the same owner hands
	// out an equal lease, so never use a lease you released.
	Release(ctx context.Context, leases []Lease) error
	// RecoverRunning makes every running task claimable again at once,
	// recording its attempt as "lost" and not counted, and grows the
	// task's lost streak (Task.LostStreak) by one. A task whose streak
	// reaches lostLimit (0: DefaultLostLimit) is dead instead, its
	// LastError and its attempt's reason ending with LostLimitReason; a
	// task whose cancellation was requested becomes cancelled. It returns
	// how many it recovered. Only the one process that holds a store
	// exclusively (tasks/sqlite opened Exclusive) may call it: on a shared
	// store it would end the attempts of live runners (see Recover).
	RecoverRunning(ctx context.Context, lostLimit int) (int, error)
	// ListenWakeups tells a runner when another process made a task ready
	// (submitted, retried, released), so that it need not wait for its
	// next poll: it returns a channel that gets a value (coalesced) after
	// each wake-up, and a func that stops listening. tasks/sqlite sends a
	// datagram per store file on Linux (elsewhere its channel is nil:
	// never a wake-up), tasks/postgres uses LISTEN/NOTIFY.
	ListenWakeups() (<-chan struct{}, func() error, error)

	// The latest snapshot of each task (a suspended guest), so that an
	// interrupted guest resumes where it was whoever wrote it. A task has
	// at most one; it is dropped when the task ends (succeeded, dead or
	// cancelled), when the task is deleted or pruned, and when its guest
	// saves a checkpoint (the newer of the two wins). Task.Snapshot
	// describes it and Task.Snapshots counts those stored.

	// SaveSnapshot durably replaces the task's snapshot, fenced by lease
	// (ErrStaleLease otherwise); info.Size, TakenAt, Owner and Attempt are
	// filled by the store. It also ends the task's run of lost attempts
	// (Task.LostStreak): the attempt made progress.
	SaveSnapshot(ctx context.Context, lease Lease, blob []byte, info SnapshotInfo) error
	// AppendSnapshot durably extends the task's snapshot with blob (what
	// changed since: sandbox.Snapshot.EncodeDelta), fenced by lease
	// (ErrStaleLease otherwise). The stored snapshot must be one this
	// attempt saved and exactly base bytes long (ErrSnapshotMoved
	// otherwise: save it whole instead). Info is as SaveSnapshot's; Size
	// then counts the whole, base and blob. It counts as a snapshot stored.
	AppendSnapshot(ctx context.Context, lease Lease, base int, blob []byte, info SnapshotInfo) error
	// Snapshot returns the task's snapshot (nil blob when none).
	Snapshot(ctx context.Context, id int64) ([]byte, SnapshotInfo, error)
	// DropSnapshot deletes the task's snapshot, fenced by lease (a
	// snapshot this runner cannot resume: another Stint version, say).
	DropSnapshot(ctx context.Context, lease Lease) error

	// Cancel cancels a queued task at once (returned state cancelled) or,
	// for a running task, sets CancelRequested (the worker ends it).
	// ErrInvalidState for a task already terminal.
	Cancel(ctx context.Context, id int64) (Task, error)
	// Retry puts a dead or cancelled task back in the queue with its
	// failure count and lost streak reset; ErrInvalidState otherwise.
	Retry(ctx context.Context, id int64) (Task, error)
	// Delete deletes a task that is not running, with everything stored
	// for it but its module. ErrInvalidState for a running task (cancel it
	// first), ErrNotFound for an unknown one.
	Delete(ctx context.Context, id int64) error
	// ActBatch applies a to each task of ids (at most BulkBatch of them)
	// in one transaction, and returns how many it acted on. A task in a
	// state a does not apply to (Action.Applies: it moved on since it was
	// read), or gone, is left alone and not counted: it is not an error.
	// Each task changes as Retry, Cancel or Delete would change it, and a
	// retry wakes the runners as Retry does. ErrInvalidSpec for an unknown
	// action or more than BulkBatch ids.
	ActBatch(ctx context.Context, a Action, ids []int64) (done int, err error)
	// PauseQueue pauses queue (pausing a paused queue keeps its first
	// pause time). A queue need hold no task to be paused. A paused queue
	// stays paused, in the store, until resumed: no runner sharing the
	// store claims its queued tasks meanwhile (tasks/sqlite reads the
	// paused queues at every claim, tasks/postgres at most once a second,
	// so another runner honours a pause within a second); its running
	// attempts go on, and it still takes submissions.
	PauseQueue(ctx context.Context, queue string) error
	// ResumeQueue resumes queue; resuming a queue that is not paused does
	// nothing.
	ResumeQueue(ctx context.Context, queue string) error
	// PausedQueues lists the paused queues by name.
	PausedQueues(ctx context.Context) ([]PausedQueue, error)
	// Prune deletes the tasks that ended (succeeded, dead or cancelled)
	// before before, with everything stored for them but their module, and
	// returns how many it deleted. Their idempotency keys are free again.
	Prune(ctx context.Context, before time.Time) (int, error)

	// The settings of tenants, the same in every queue, and the limits of
	// queues, the same for every tenant (docs/operations.md, "Tenants"):
	// a tenant's weight in fair claims (1 unless set), and a tenant's or a
	// queue's limits across every runner of the store (SharedLimits; none
	// unless set, 0 removes one). Max running: a claim takes none of its
	// tasks while that many run or are claimed (they wait, and others' go
	// first). Work quota: the most work units its attempts may do per
	// period (periods counted from the Unix epoch: an hour's start at each
	// whole hour); once its attempts recorded in a period did quota, a
	// claim takes none of its tasks until the next period (they wait,
	// throttled, and never fail for it), and attempts running then run to
	// their end and count in the period they end in. Rate: a token bucket
	// kept in the store, of rate tokens a second and at most max(1, rate)
	// of them, from which each claim of its tasks takes one a task. A task
	// starts only within its tenant's limits and its queue's.

	// SetTenantWeight sets tenant's weight (CheckTenantWeight).
	SetTenantWeight(ctx context.Context, tenant string, weight int) error
	// SetTenantMaxRunning sets the most of tenant's tasks running at once.
	SetTenantMaxRunning(ctx context.Context, tenant string, n int) error
	// SetTenantWorkQuota sets the most work units tenant's attempts may
	// do per period.
	SetTenantWorkQuota(ctx context.Context, tenant string, quota int64, period time.Duration) error
	// SetTenantRate sets the most of tenant's tasks started per second.
	SetTenantRate(ctx context.Context, tenant string, rate float64) error
	// Tenants returns the tenants with a setting that is not the default
	// or with a task queued or running (the empty tenant only with a
	// setting), with their tasks running, ready and scheduled now and the
	// work units they used in their quota's current period.
	Tenants(ctx context.Context) (map[string]Tenant, error)
	// SetQueueMaxRunning, SetQueueWorkQuota and SetQueueRate are their
	// SetTenant namesakes for queue (CheckQueueName), whatever the tenant.
	SetQueueMaxRunning(ctx context.Context, queue string, n int) error
	SetQueueWorkQuota(ctx context.Context, queue string, quota int64, period time.Duration) error
	SetQueueRate(ctx context.Context, queue string, rate float64) error
	// QueueLimits returns the queues with a limit, as Tenants does.
	QueueLimits(ctx context.Context) (map[string]SharedLimits, error)

	// The runners that work the store record themselves in it, so that any
	// client lists them. A runner records itself at start and with each
	// heartbeat, and removes its record when it stops cleanly; the record
	// of one that died stays, shown Silent, until PruneRunners deletes it.

	// RecordRunner inserts or replaces the record of r.Owner, its LastSeen
	// set to the store's now. Silent is ignored. Draining stays true once
	// set for the same runner (same Owner and Started), whatever r says:
	// draining reports the record's, true when RequestDrain asked this
	// runner to stop claiming since it last recorded itself.
	RecordRunner(ctx context.Context, r RunnerInfo) (draining bool, err error)
	// RequestDrain asks the runner owner to stop claiming tasks (its
	// record's Draining becomes true; the runner stops at its next
	// heartbeat and finishes what it runs). ErrRunnerNotFound if no such
	// record.
	RequestDrain(ctx context.Context, owner string) error
	// Runners returns every recorded runner by owner, each with Silent set
	// by the store's clock (an empty, non-nil slice when none).
	Runners(ctx context.Context) ([]RunnerInfo, error)
	// RemoveRunner deletes the record of owner (none: nothing to do).
	RemoveRunner(ctx context.Context, owner string) error
	// PruneRunners deletes the records last seen before before and
	// returns how many it deleted.
	PruneRunners(ctx context.Context, before time.Time) (int, error)

	// AddSchedule stores a new schedule (Validate), its Created set to the
	// store's now and its LastRun cleared, and returns it.
	// ErrScheduleExists when the name is taken, ErrTooManySchedules when
	// the store holds its most.
	AddSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// Schedules returns every schedule by name (an empty, non-nil slice
	// when none).
	Schedules(ctx context.Context) ([]Schedule, error)
	// ScheduleStates returns every schedule by name, as Schedules does but
	// without their Specs (a task's input may be megabytes): what their
	// periods and states need (metrics, a count).
	ScheduleStates(ctx context.Context) ([]Schedule, error)
	// DueSchedules returns, by name, the unpaused schedules that may be
	// due at now: those whose next period (DeferSchedule) starts at or
	// before now, and those whose next period is not known (added,
	// resumed, or stored by an older version). Their Spec is left empty
	// (a task's input may be megabytes): GetSchedule gives it. One query
	// on an index, whatever the number of schedules that are not due.
	DueSchedules(ctx context.Context, now time.Time) ([]Schedule, error)
	// DeferSchedule records that schedule sc's next period starts at
	// next, so that DueSchedules leaves it out until then. sc is named by
	// its Name and Created: a schedule removed meanwhile, or removed and
	// added again under its name, is left as it is, and no error.
	DeferSchedule(ctx context.Context, sc Schedule, next time.Time) error
	// GetSchedule returns one schedule, ErrScheduleNotFound if none.
	GetSchedule(ctx context.Context, name string) (Schedule, error)
	// RemoveSchedule deletes a schedule (its tasks stay),
	// ErrScheduleNotFound if none.
	RemoveSchedule(ctx context.Context, name string) error
	// PauseSchedule pauses (paused true) or resumes a schedule and returns
	// it, ErrScheduleNotFound if none. Resuming sets LastRun to the
	// store's now, so that the periods paused are not made up.
	PauseSchedule(ctx context.Context, name string, paused bool) (Schedule, error)
	// MarkScheduleRun records that the task taskID was submitted for the
	// period starting at period: LastRun becomes period unless it is
	// already later. A schedule removed meanwhile is no error.
	MarkScheduleRun(ctx context.Context, name string, period time.Time, taskID int64) error

	// Close releases the store (and its lock).
	Close() error
}
