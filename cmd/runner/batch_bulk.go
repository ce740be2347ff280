package main

import (
	"context"

	"github.com/stint-run/stint/tasks"
)

// submittedTask is one task of a bulk submission: the task, and whether
// its idempotency key was already used (Task is then the first task).
type submittedTask struct {
	Task     tasks.Task
	Existing bool
}

// bulkSubmit stores many tasks at once.
// TODO(h-storebulk): tasks.SubmitMany, one transaction per call.
func bulkSubmit(ctx context.Context, s tasks.Store, specs []tasks.Spec) ([]submittedTask, error) {
	out := make([]submittedTask, 0, len(specs))
	for _, spec := range specs {
		t, existing, err := s.Submit(ctx, spec)
		if err != nil {
			return nil, err
		}
		out = append(out, submittedTask{Task: t, Existing: existing})
	}
	return out, nil
}
