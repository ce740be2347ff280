package batch

import (
	"context"
	"sort"

	"github.com/stint-run/stint/tasks"
)

// Status is a running batch's state (Config.OnRun).
type Status struct{ b *batchRun }

// Counts is how many inputs are done, and how.
func (s *Status) Counts() Counts { return s.b.counts() }

// Queue is the batch's queue in the store (Queue of the output folder).
func (s *Status) Queue() string { return s.b.queue }

// InputProgress is what a running guest last reported of its progress
// (stint.progress, docs/guest-abi.md).
type InputProgress struct {
	// Name is the input's file name, Input its absolute path.
	Name, Input string
	Done, Total int64
}

// Progress reads from the store, for up to n of the running inputs, the
// progress their guests reported; inputs that reported none are left out.
func (s *Status) Progress(ctx context.Context, n int) ([]InputProgress, error) {
	ts, err := s.b.store.List(ctx, tasks.ListFilter{State: tasks.StateRunning, Queue: s.b.queue, Limit: 64})
	if err != nil {
		return nil, err
	}
	var out []InputProgress
	for _, t := range ts {
		in := s.b.input(t.ID)
		if in == nil || t.ProgressTotal <= 0 {
			continue
		}
		out = append(out, InputProgress{Name: in.out, Input: in.path, Done: t.ProgressDone, Total: t.ProgressTotal})
		if len(out) == n {
			break
		}
	}
	return out, nil
}

// RunningInputs names (by output name, sorted) up to n of the inputs
// whose attempt runs now.
func (s *Status) RunningInputs(n int) []string {
	b := s.b
	b.mu.Lock()
	names := make([]string, 0, len(b.runningIn))
	for _, in := range b.runningIn {
		names = append(names, in.out)
	}
	b.mu.Unlock()
	sort.Strings(names)
	if len(names) > n {
		names = names[:n]
	}
	return names
}

func (b *batchRun) counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Counts{Total: len(b.inputs), Succeeded: b.succeeded, AlreadyDone: b.already,
		// Attempts that ended wait a moment for their batch of records:
		// started minus ended may count them.
		Failed: b.failed, SkippedFailed: b.skipped, Running: min(max(b.running, 0), b.workers), Left: b.left}
}
