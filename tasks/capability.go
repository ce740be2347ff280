package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The optional capabilities of a Store: what only one backend can do. A
// caller tests for one with a type assertion (s.(tasks.Pinger)) and does
// without it when the store lacks it.

// ClaimingSubmitter is a Store that can store new tasks already claimed
// (tasks/sqlite): a pool alone on its queue then runs them without a
// Claim transaction of its own (runner batch).
type ClaimingSubmitter interface {
	// SubmitManyClaimed is SubmitMany, except that every task it creates
	// is stored running, claimed by owner under a lease of lease, as if
	// Claim had claimed it in the same transaction: attempt 1, Lease
	// {TaskID, owner, 1} (ClaimedOf). Tasks that existed (a key already
	// used) are returned as SubmitMany returns them, not claimed.
	SubmitManyClaimed(ctx context.Context, specs []Spec, owner string, lease time.Duration) ([]Submitted, error)
}

// ClaimedOf is the claim of a task SubmitManyClaimed created.
func ClaimedOf(t Task) Claimed {
	return Claimed{Task: t, Lease: Lease{TaskID: t.ID, Owner: t.LeaseOwner, Token: t.Attempt}}
}

// OwnRecoverer is a Store shared by several runners that can recover the
// attempts one of them left running (tasks/postgres). A runner with a
// stable owner id calls it at start, before it claims: its previous
// process's attempts resume at once from their checkpoints (or
// snapshots), instead of waiting out their leases.
type OwnRecoverer interface {
	// RecoverOwn is RecoverRunning for the attempts under a lease of owner;
	// other owners' tasks are left alone.
	RecoverOwn(ctx context.Context, owner string, lostLimit int) (int, error)
}

// LockInspector is a single-node Store whose lock can be inspected
// without taking it (tasks/sqlite on Linux): it tells a client whether a
// runner works the store.
type LockInspector interface {
	// LockHolder reports the pid of the process that holds the store's
	// exclusive lock, and whether one does. An error means it is not
	// known.
	LockHolder() (pid int, held bool, err error)
}

// Pinger is a Store that can check that its backend answers (a database
// server), for a readiness probe (tasks/postgres).
type Pinger interface {
	// Ping returns nil when the backend answers.
	Ping(ctx context.Context) error
}

// Recover puts back in the queue, ready now and not counted, the attempts
// that owner's previous process left running, and returns how many: with
// RecoverOwn on a store that has it (shared stores), else with
// Store.RecoverRunning when exclusive says this process holds the store
// alone. Each recovered attempt grows its task's lost streak; a task whose
// streak reaches lostLimit (0: DefaultLostLimit) is dead instead. Else it
// recovers nothing: the tasks move on when their leases expire.
func Recover(ctx context.Context, s Store, owner string, exclusive bool, lostLimit int) (int, error) {
	if r, ok := s.(OwnRecoverer); ok && owner != "" {
		return r.RecoverOwn(ctx, owner, lostLimit)
	}
	if exclusive {
		return s.RecoverRunning(ctx, lostLimit)
	}
	return 0, nil
}

// TaskCounts is how many tasks a store holds, by state.
type TaskCounts struct {
	// Total counts the tasks of every queue in each state, StateClaimed
	// apart from StateRunning (a state with no task may be left out).
	Total map[State]int64 `json:"total"`
	// ByQueue counts the tasks of each queue in each state, by queue then
	// state; a queue and state with no task is left out. Succeeded tasks
	// are in it only when SucceededByQueue is true.
	ByQueue []QueueCount `json:"by_queue"`
	// Waiting says, for each queue with queued tasks (by queue), how many
	// of them are scheduled for later and how long its ready ones have
	// waited, at Now.
	Waiting []QueueWaiting `json:"waiting"`
	// Now is the store's clock when it counted.
	Now time.Time `json:"now"`
	// SucceededByQueue reports whether ByQueue counts succeeded tasks.
	// Both backends do (tasks/sqlite from a count by queue its triggers
	// keep, as no index holds succeeded tasks); a store that cannot has
	// them in Total alone.
	SucceededByQueue bool `json:"succeeded_by_queue"`
}

// QueueWaiting is what the queued tasks of one queue wait for.
type QueueWaiting struct {
	Queue string `json:"queue"`
	// Scheduled counts its queued tasks whose RunAt is after TaskCounts.Now
	// (submitted to run later, or a retry's backoff): not ready yet. The
	// others of its queued tasks are ready: a free worker would claim them.
	Scheduled int64 `json:"scheduled"`
	// OldestReady is the RunAt of its ready task that became ready first
	// (zero: none is ready); TaskCounts.Now less it is how long the queue's
	// next task has waited, the queue's latency.
	OldestReady time.Time `json:"oldest_ready,omitzero"`
}

// Waited is how long the queue's oldest ready task has waited at now
// (TaskCounts.Now), and false when none is ready.
func (w QueueWaiting) Waited(now time.Time) (time.Duration, bool) {
	if w.OldestReady.IsZero() {
		return 0, false
	}
	return max(now.Sub(w.OldestReady), 0), true
}

// QueueCount is the number of tasks of one queue in one state.
type QueueCount struct {
	Queue string `json:"queue"`
	State State  `json:"state"`
	Count int64  `json:"count"`
}

// NewestFilter selects tasks for Store.ListNewest. Zero fields match
// everything.
type NewestFilter struct {
	State State
	Queue string
	// BeforeID pages downward: only ids lower than it (0: no bound).
	BeforeID int64
	// Limit caps the number of tasks returned (default 100).
	Limit int
}

// CompletingClaimer is a Store that can end attempts and claim more tasks
// in one round trip: CompleteAndClaim is Complete(cs) followed by
// Claim(req), with the same results, except that when the round trip
// fails err is set, every errs[i] is err and nothing is claimed (the
// completions may be retried as with Complete). A pool uses it to claim
// the room its finished attempts leave without a second round trip.
type CompletingClaimer interface {
	CompleteAndClaim(ctx context.Context, cs []Completion, req ClaimRequest) (errs []error, claimed []Claimed, err error)
}

// SnapshotInfo describes a task's stored snapshot (a suspended guest:
// sandbox.Snapshot, encoded): who took it, when, and how far its guest had
// come.
type SnapshotInfo struct {
	// Size is the encoded snapshot's size in bytes.
	Size int `json:"size"`
	// TakenAt is when it was stored (the store's clock).
	TakenAt time.Time `json:"taken_at"`
	// Owner is the runner whose attempt took it, Attempt that attempt.
	Owner   string `json:"owner"`
	Attempt int    `json:"attempt"`
	// Work and RunTime are how far the guest had come, over all its runs:
	// its work units and its run time.
	Work    int64         `json:"work_units"`
	RunTime time.Duration `json:"run_time"`
	// Suspended reports a snapshot taken as the attempt ended (a drain, a
	// timeout), not in the background of its run.
	Suspended bool `json:"suspended"`
}

// DecodeSnapshotInfo decodes the JSON array both backends store beside a
// task's snapshot: size, taken at (Unix microseconds), owner, attempt,
// work units, run time (nanoseconds), suspended (0 or 1).
func DecodeSnapshotInfo(js []byte) (SnapshotInfo, error) {
	var f [7]json.RawMessage
	if err := json.Unmarshal(js, &f); err != nil {
		return SnapshotInfo{}, err
	}
	var info SnapshotInfo
	var taken, runTime, suspended int64
	err := errors.Join(json.Unmarshal(f[0], &info.Size), json.Unmarshal(f[1], &taken), json.Unmarshal(f[2], &info.Owner),
		json.Unmarshal(f[3], &info.Attempt), json.Unmarshal(f[4], &info.Work), json.Unmarshal(f[5], &runTime),
		json.Unmarshal(f[6], &suspended))
	info.TakenAt, info.RunTime, info.Suspended = time.UnixMicro(taken).UTC(), time.Duration(runTime), suspended != 0
	return info, err
}

// DefaultLostLimit is how many attempts in a row a task may lose without
// progress (their runners died while running them: a lease taken over,
// an attempt recovered at start) before it is dead (ClaimRequest.LostLimit).
const DefaultLostLimit = 3

// LostLimit is the lost-attempt limit a store applies for n (a
// ClaimRequest.LostLimit or a recovery's lostLimit): n, or
// DefaultLostLimit when n is 0 or less.
func LostLimit(n int) int {
	if n <= 0 {
		return DefaultLostLimit
	}
	return n
}

// LostLimitReason says why a task that lost limit attempts in a row is
// dead; a store appends it to the task's LastError and to the reason of
// the lost attempt that made it dead.
func LostLimitReason(limit int) string {
	return fmt.Sprintf("lost %d attempts in a row without progress: its runners stopped while running it "+
		"(killed, out of memory?); a task that kills its runner is not retried for ever", limit)
}
