package tasks

import (
	"context"
	"time"
)

// WaitFor polls a store until the task is terminal or ctx ends. Use it
// from a process that has no Pool (a CLI waiting on a remote runner).
func WaitFor(ctx context.Context, s Store, id int64, every time.Duration) (Task, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		task, err := s.Get(ctx, id)
		if err != nil || task.State.Terminal() {
			return task, err
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return task, ctx.Err()
		}
	}
}
