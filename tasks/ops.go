package tasks

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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
	// ActionDelete deletes tasks that are not running (Store.Delete).
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
// it gives Store.ActBatch: one transaction's worth.
const BulkBatch = 500

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
// transaction (Store.ActBatch). A task that moved on between its read and
// the act is skipped, not an error.
func Bulk(ctx context.Context, s Store, a Action, f BulkFilter, dryRun bool) (BulkResult, error) {
	res := BulkResult{Action: a, DryRun: dryRun}
	if _, err := ParseAction(string(a)); err != nil {
		return res, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	if err := f.Check(); err != nil {
		return res, err
	}
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
			if !dryRun && len(ids) > 0 {
				n, err := s.ActBatch(ctx, a, ids)
				if err != nil {
					return res, err
				}
				res.Done += n
				res.Skipped += len(ids) - n
			}
			if len(page) < BulkBatch {
				break
			}
		}
	}
	return res, nil
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
