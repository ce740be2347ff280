package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Operator is a Store an operator can act on beyond Cancel and Retry:
// delete one task, and pause or resume a queue (both backends are). A
// paused queue stays paused, in the store, until resumed: no runner
// sharing the store claims its queued tasks meanwhile (Claim skips them:
// tasks/sqlite reads the paused queues at every claim, tasks/postgres at
// most once a second, so another runner honours a pause within a second);
// its running attempts go on, and it still takes submissions.
type Operator interface {
	// Delete deletes a task that is not running, with everything stored
	// for it but its module. ErrInvalidState for a running task (cancel it
	// first), ErrNotFound for an unknown one.
	Delete(ctx context.Context, id int64) error
	// PauseQueue pauses queue (pausing a paused queue keeps its first
	// pause time). A queue need hold no task to be paused.
	PauseQueue(ctx context.Context, queue string) error
	// ResumeQueue resumes queue; resuming a queue that is not paused does
	// nothing.
	ResumeQueue(ctx context.Context, queue string) error
	// PausedQueues lists the paused queues by name.
	PausedQueues(ctx context.Context) ([]PausedQueue, error)
}

// PausedQueue is a paused queue and when it was paused.
type PausedQueue struct {
	Queue    string    `json:"queue"`
	PausedAt time.Time `json:"paused_at"`
}

// CheckQueueName checks a queue name given to PauseQueue or ResumeQueue:
// non-empty and no longer than a task's queue may be (MaxCaps.Queue).
func CheckQueueName(q string) error {
	if q == "" {
		return fmt.Errorf("%w: empty queue name", ErrInvalidSpec)
	}
	if int64(len(q)) > MaxCaps.Queue {
		return fmt.Errorf("%w: queue name of %d bytes; at most %d", ErrInvalidSpec, len(q), MaxCaps.Queue)
	}
	return nil
}

// Action is what a bulk operation does to each task it selects.
type Action string

// The bulk actions: each applies to the tasks in the states it accepts
// (Action.Applies) and leaves the others alone.
const (
	// ActionRetry retries dead and cancelled tasks (Store.Retry).
	ActionRetry Action = "retry"
	// ActionCancel cancels queued and running tasks (Store.Cancel).
	ActionCancel Action = "cancel"
	// ActionDelete deletes tasks that are not running (Operator.Delete).
	ActionDelete Action = "delete"
)

// ParseAction returns the Action named s, or an error naming the known ones.
func ParseAction(s string) (Action, error) {
	switch a := Action(s); a {
	case ActionRetry, ActionCancel, ActionDelete:
		return a, nil
	}
	return "", fmt.Errorf("unknown action %q: retry, cancel or delete", s)
}

// Applies reports whether a acts on a task in state st.
func (a Action) Applies(st State) bool {
	switch a {
	case ActionRetry:
		return st == StateDead || st == StateCancelled
	case ActionCancel:
		return st == StateQueued || st == StateRunning
	case ActionDelete:
		return st != StateRunning && st.Valid()
	}
	return false
}

// BulkFilter selects the tasks of a bulk action. Zero fields match every
// task; a filter that sets none of State, Queue, Labels and Before is
// refused (Check): a bulk action on the whole store must say so.
type BulkFilter struct {
	// State selects one state; empty: every state the action applies to.
	State State `json:"state,omitempty"`
	// Queue selects one queue.
	Queue string `json:"queue,omitempty"`
	// Labels selects the tasks that carry every one of these labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Before selects the tasks last changed (UpdatedAt) before it: "older
	// than an hour" is Before = now - 1h.
	Before time.Time `json:"before,omitzero"`
	// All allows a filter that sets nothing else.
	All bool `json:"all,omitempty"`
}

// Check refuses a filter that selects every task without All, and a state
// that is not a state.
func (f BulkFilter) Check() error {
	if f.State != "" && !f.State.Valid() {
		return fmt.Errorf("%w: unknown state %q", ErrInvalidSpec, f.State)
	}
	if f.State == "" && f.Queue == "" && len(f.Labels) == 0 && f.Before.IsZero() && !f.All {
		return fmt.Errorf("%w: a bulk action needs a filter (state, queue, label or age), or all", ErrInvalidSpec)
	}
	return nil
}

// Matches reports whether t passes the filter's queue, labels and age
// (and its state, when set).
func (f BulkFilter) Matches(t Task) bool {
	if f.State != "" && t.State != f.State {
		return false
	}
	if f.Queue != "" && t.Queue != f.Queue {
		return false
	}
	for k, v := range f.Labels {
		if got, ok := t.Labels[k]; !ok || got != v {
			return false
		}
	}
	return f.Before.IsZero() || t.UpdatedAt.Before(f.Before)
}

// ParseLabel reads a "key=value" label filter.
func ParseLabel(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("label %q: want key=value", s)
	}
	return k, v, nil
}

// BulkResult is what a bulk action matched and did.
type BulkResult struct {
	Action Action `json:"action"`
	// Matched is how many tasks the filter selected in the states the
	// action applies to.
	Matched int `json:"matched"`
	// Done is how many it acted on (0 for a count); Skipped how many had
	// moved on meanwhile (a task retried, ended or deleted by someone else
	// between the count and the act).
	Done    int  `json:"done"`
	Skipped int  `json:"skipped"`
	DryRun  bool `json:"dry_run"`
}

// BulkBatch is how many tasks Bulk reads at a time, and at most how many
// it gives a BatchActor's ActBatch: one transaction's worth.
const BulkBatch = 500

// BatchActor is a Store that applies an Action to many tasks in one
// transaction (both backends are). Bulk uses it when the store has it.
type BatchActor interface {
	// ActBatch applies a to each task of ids (at most BulkBatch of them)
	// in one transaction, and returns how many it acted on. A task in a
	// state a does not apply to (Action.Applies: it moved on since it was
	// read), or gone, is left alone and not counted: it is not an error.
	// Each task changes as the single-task method would change it
	// (Store.Retry, Store.Cancel, Operator.Delete), and a retry wakes the
	// runners as Retry does. ErrInvalidSpec for an unknown action or more
	// than BulkBatch ids.
	ActBatch(ctx context.Context, a Action, ids []int64) (done int, err error)
}

// CheckBatch checks ActBatch's arguments.
func CheckBatch(a Action, ids []int64) error {
	if _, err := ParseAction(string(a)); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	if len(ids) > BulkBatch {
		return fmt.Errorf("%w: a batch of %d tasks; at most %d", ErrInvalidSpec, len(ids), BulkBatch)
	}
	return nil
}

// Bulk applies a to every task f selects, and returns how many it matched
// and acted on; with dryRun it only counts. It walks the states the
// action applies to with List, by id, BulkBatch tasks at a time, so that
// succeeded tasks (most of a store) are walked only when the action and
// filter select them. The matching tasks of each page are acted on in one
// transaction when the store is a BatchActor (both backends are), else
// one task at a time (each its own transaction, as Retry, Cancel and
// Delete are). A task that moved on between its read and the act is
// skipped, not an error. ActionDelete needs an Operator.
func Bulk(ctx context.Context, s Store, a Action, f BulkFilter, dryRun bool) (BulkResult, error) {
	res := BulkResult{Action: a, DryRun: dryRun}
	if _, err := ParseAction(string(a)); err != nil {
		return res, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	if err := f.Check(); err != nil {
		return res, err
	}
	op, isOp := s.(Operator)
	if a == ActionDelete && !isOp {
		return res, errors.New("this store cannot delete tasks")
	}
	batcher, batches := s.(BatchActor)
	var states []State
	for _, st := range []State{StateQueued, StateRunning, StateSucceeded, StateDead, StateCancelled} {
		if a.Applies(st) && (f.State == "" || f.State == st) {
			states = append(states, st)
		}
	}
	ids := make([]int64, 0, BulkBatch)
	for _, st := range states {
		var after int64
		for {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			page, err := s.List(ctx, ListFilter{State: st, Queue: f.Queue, AfterID: after, Limit: BulkBatch})
			if err != nil {
				return res, err
			}
			ids = ids[:0]
			for _, t := range page {
				after = t.ID
				if f.Matches(t) {
					ids = append(ids, t.ID)
				}
			}
			res.Matched += len(ids)
			switch {
			case dryRun || len(ids) == 0:
			case batches:
				n, err := batcher.ActBatch(ctx, a, ids)
				if err != nil {
					return res, err
				}
				res.Done += n
				res.Skipped += len(ids) - n
			default:
				for _, id := range ids {
					if err := actOne(ctx, s, op, a, id); err == nil {
						res.Done++
					} else if errors.Is(err, ErrInvalidState) || errors.Is(err, ErrNotFound) {
						res.Skipped++
					} else {
						return res, err
					}
				}
			}
			if len(page) < BulkBatch {
				break
			}
		}
	}
	return res, nil
}

// actOne applies a to task id with the single-task methods.
func actOne(ctx context.Context, s Store, op Operator, a Action, id int64) error {
	var err error
	switch a {
	case ActionRetry:
		_, err = s.Retry(ctx, id)
	case ActionCancel:
		_, err = s.Cancel(ctx, id)
	case ActionDelete:
		err = op.Delete(ctx, id)
	}
	return err
}

// ModuleNamer is a Store that keeps a name with each stored module (the
// file it was read from, or the name the API was given), for people: a
// list shows it instead of a hash (both backends are). A module stored
// under several names keeps the latest.
type ModuleNamer interface {
	// NameModule records name for the stored module sha256;
	// ErrModuleNotFound if none.
	NameModule(ctx context.Context, sha256, name string) error
	// ModuleNames returns the name of each named module among shas (a
	// module with no name, or not stored, is left out).
	ModuleNames(ctx context.Context, shas []string) (map[string]string, error)
}

// MaxModuleName caps a module's name, in bytes.
const MaxModuleName = 255

// CheckModuleName checks a module's name: 1 to MaxModuleName bytes of
// valid UTF-8 with no control character.
func CheckModuleName(name string) error {
	if name == "" || len(name) > MaxModuleName {
		return fmt.Errorf("%w: module name of %d bytes; 1 to %d", ErrInvalidSpec, len(name), MaxModuleName)
	}
	if !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return fmt.Errorf("%w: module name %q: not valid UTF-8 or holds a control character", ErrInvalidSpec, name)
	}
	return nil
}
