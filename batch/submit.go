package main

import (
	"context"
	"sync"

	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

// A batch whose queue holds no queued or running task when it starts (a
// first run, or one after a run that ended) submits its inputs while its
// pool runs: the pool starts on the first chunk instead of after the last,
// and the core that would idle while the batch hashes and stores its
// inputs runs tasks. It is safe because every task the pool can claim
// meanwhile was made queued by this submission (new, or a failed one
// retried): there is no task of an earlier run to claim before it is
// known, and no stray to cancel. An attempt that claims a task before its
// chunk is adopted waits for it (batchRun.waitInput). A batch whose queue
// holds queued or running tasks (resumed after a stop or a crash)
// submits everything, cancels the strays, and only then starts its pool.

// batchSubmitter is the submission as a shutdown.Workload: a stop ends it
// at the next chunk (StopIntake), and the drain waits for it (Idle), so
// that nothing it stored is left unadopted and no attempt waits for it.
// What it did not submit is left for the next run.
type batchSubmitter struct {
	stopOnce sync.Once
	stop     chan struct{} // closed by StopIntake
	done     chan struct{} // closed when the submission ended
	mu       sync.Mutex
	err      error // why the submission failed (not a stop)
	failed   chan struct{}
}

func newBatchSubmitter() *batchSubmitter {
	return &batchSubmitter{stop: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{})}
}

// StopIntake makes the submission end at the next chunk.
func (s *batchSubmitter) StopIntake() { s.stopOnce.Do(func() { close(s.stop) }) }

// Idle is closed once the submission ended.
func (s *batchSubmitter) Idle() <-chan struct{} { return s.done }

// RequestStop is StopIntake: submitting has no cooperative stop of its own.
func (s *batchSubmitter) RequestStop() { s.StopIntake() }

// ForceStop is StopIntake: a chunk being stored is one transaction, let
// to end (it is not cancelled half-way).
func (s *batchSubmitter) ForceStop() { s.StopIntake() }

// Stats counts nothing: the submission is not tasks, and the report's
// counts are the pool's.
func (s *batchSubmitter) Stats() shutdown.Stats { return shutdown.Stats{} }

// stopping reports whether a stop asked the submission to end.
func (s *batchSubmitter) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// end records how the submission ended: err is nil for a whole
// submission or one a stop ended.
func (s *batchSubmitter) end(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	if err != nil {
		close(s.failed)
	}
	close(s.done)
}

func (s *batchSubmitter) error() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// wait is the "submit" shutdown hook: the submission ends before the
// workers stop and the store closes.
func (s *batchSubmitter) wait(ctx context.Context) error {
	s.StopIntake()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// freshQueue reports whether the batch's queue holds no queued or running
// task, so that its inputs may be submitted while its pool runs (above).
// False when the store cannot tell.
func (b *batchRun) freshQueue(ctx context.Context, queue string) bool {
	n, ok := b.queueCounts(ctx, queue)
	return ok && n[tasks.StateQueued] == 0 && n[tasks.StateRunning] == 0
}

// input is the batch's input of task id, nil if none is known (yet).
func (b *batchRun) input(id int64) *batchInput {
	b.idMu.RLock()
	defer b.idMu.RUnlock()
	return b.byID[id]
}

// waitInput is input for a task a worker claimed: while the batch is
// submitting, a task not known yet may be one whose chunk is stored but
// not yet adopted, and it waits for that. Nil once the submission ended
// (or ctx did) and the task is none of the batch's.
func (b *batchRun) waitInput(ctx context.Context, id int64) *batchInput {
	for {
		b.idMu.RLock()
		in, ch := b.byID[id], b.adopted
		b.idMu.RUnlock()
		if in != nil || ch == nil {
			return in
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
	}
}

// chunkAdopted wakes the attempts waiting for a chunk's tasks.
func (b *batchRun) chunkAdopted() {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	if b.adopted != nil {
		close(b.adopted)
		b.adopted = make(chan struct{})
	}
}

// submissionEnded: every task the batch stored is adopted; a task still
// unknown is none of the batch's.
func (b *batchRun) submissionEnded() {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	if b.adopted != nil {
		close(b.adopted)
		b.adopted = nil
	}
}
