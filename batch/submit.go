package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/stint-run/stint"
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

// freshQueue reports whether the batch's queue holds no queued, claimed or
// running task, so that its inputs may be submitted while its pool runs (above).
// False when the store cannot tell.
func (b *batchRun) freshQueue(ctx context.Context, queue string) bool {
	n, ok := b.queueCounts(ctx, queue)
	return ok && n[tasks.StateQueued] == 0 && n[tasks.StateClaimed] == 0 && n[tasks.StateRunning] == 0
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

// submit stores a task per input, in bulk, and sorts out what an earlier
// run of the same batch left: succeeded tasks are skipped (their output
// written from the store if it is missing), failed ones retried. The
// inputs stay in their files: a task's key is derived from the input's
// path and sha256, and its attempt reads the file (inputFor).
//
// stop, when not nil, is asked between chunks: true ends the submission
// there (the inputs not submitted are left for the next run). The pool may
// run meanwhile: each chunk's tasks are adopted under idMu, then
// chunkAdopted wakes the attempts that wait for them.
func (b *batchRun) submit(ctx context.Context, r *stint.Runner, base tasks.Spec, module string, stop func() bool) error {
	const chunkFiles = 500 // tasks per transaction: one multi-row insert
	var specs []tasks.Spec
	var chunk []*batchInput
	submitted := 0
	flush := func() error {
		if len(specs) == 0 {
			return nil
		}
		// Each chunk's tasks are known (adopt) before the pool runs them.
		var adoptErr error
		accept := func(subs []tasks.Submitted) error {
			var again []int // specs[i] replaces the task of an earlier run
			for i, s := range subs {
				var replace bool
				replace, adoptErr = b.adopt(ctx, r, chunk[i], s, &specs[i], stop == nil)
				if adoptErr != nil {
					return adoptErr
				}
				if replace {
					again = append(again, i)
				}
			}
			if len(again) > 0 {
				if adoptErr = b.replaceTasks(ctx, r, subs, again, specs, chunk); adoptErr != nil {
					return adoptErr
				}
			}
			b.chunkAdopted()
			return nil
		}
		var err error
		if stop != nil {
			// Submitting while the pool runs, on a queue that holds no
			// queued or running task: where the store can, the new tasks
			// are stored already claimed by the pool, which runs them
			// without a claim of its own (a sixth of a batch's CPU on
			// small files). It waits while the workers are busy and the
			// claimed tasks already wait for them; a stop gives back those
			// not handed over.
			_, err = r.SubmitClaimed(ctx, specs, accept)
		} else {
			var subs []tasks.Submitted
			if subs, err = r.SubmitMany(ctx, specs); err == nil { // one transaction per chunk
				err = accept(subs)
			}
		}
		if adoptErr != nil {
			return adoptErr
		}
		if err != nil {
			return fmt.Errorf("storing the tasks: %w", err)
		}
		submitted += len(specs)
		b.log.Debug("batch inputs submitted", zap.Int("submitted", submitted), zap.Int("inputs", len(b.inputs)))
		specs, chunk = specs[:0], chunk[:0]
		return nil
	}
	done := make(chan struct{})
	reads := b.readAhead(chunkFiles, done)
	defer func() { // ends the reading ahead, and waits for its end
		close(done)
		for range reads {
		}
	}()
	for read := range reads {
		for k, in := range read.inputs {
			if err := read.errs[k]; err != nil {
				b.push(batchJob{in: in, state: tasks.StateDead, attempt: &tasks.Attempt{Outcome: "unreadable", Reason: err.Error()}})
				continue
			}
			spec := base
			spec.Module = module
			spec.Args = in.args
			spec.Labels = make(map[string]string, len(base.Labels)+1)
			for k, v := range base.Labels {
				spec.Labels[k] = v
			}
			spec.Labels[LabelInput] = inputLabel(in.path)
			spec.IdempotencyKey = batchKey(base.Queue, module, in.path, in.sha, in.args, base.Env)
			specs, chunk = append(specs, spec), append(chunk, in)
			if len(specs) < chunkFiles {
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			if stop != nil && stop() {
				b.log.Info("batch submission stopped: the inputs not submitted run at the next run",
					zap.Int("submitted", submitted), zap.Int("inputs", len(b.inputs)))
				b.logKeptLimits()
				return nil
			}
		}
	}
	err := flush()
	b.logKeptLimits()
	return err
}

// adopt takes a submitted task into the batch. A task an earlier run
// stored with other limits than spec's (this run's), which this run would
// retry, or which waits queued with nothing to resume from while the pool
// does not run (queuedToo), is not adopted: adopt reports true, and
// replaceTasks replaces it with spec (nil: adopted as it is).
func (b *batchRun) adopt(ctx context.Context, r *stint.Runner, in *batchInput, s tasks.Submitted, spec *tasks.Spec, queuedToo bool) (bool, error) {
	in.id = s.Task.ID
	if s.Existing && spec != nil && !sameLimits(s.Task.Spec, *spec) {
		t := s.Task
		retried := (t.State == tasks.StateDead || t.State == tasks.StateCancelled) && !b.cfg.SkipFailed
		fresh := t.State == tasks.StateQueued && queuedToo && t.CheckpointSize < 0 && t.Snapshots == 0 && t.Snapshot == nil
		switch {
		case retried || fresh:
			return true, nil
		case retried || !t.State.Terminal():
			// Run with the limits it was stored with: it resumes from what
			// it saved.
			b.mu.Lock()
			b.keptLimits++
			b.mu.Unlock()
		}
	}
	return false, b.adoptAsIs(ctx, r, in, s)
}

// sameLimits reports whether a task stored as t runs as one stored as s
// would: the same limits, and as many attempts.
func sameLimits(t, s tasks.Spec) bool {
	return t.Limits == s.Limits && t.MaxAttempts == s.MaxAttempts
}

// replaceTasks replaces the tasks of an earlier run that adopt left
// (subs[i] for each i of idx) with specs[i], for the inputs chunk[i] to
// run under this run's limits: the tasks are deleted and their specs
// stored again (one transaction each), the new tasks adopted. A task that
// moved on meanwhile (running) is not deleted, and is adopted as it is.
func (b *batchRun) replaceTasks(ctx context.Context, r *stint.Runner, subs []tasks.Submitted, idx []int, specs []tasks.Spec, chunk []*batchInput) error {
	ids := make([]int64, len(idx))
	again := make([]tasks.Spec, len(idx))
	for k, i := range idx {
		ids[k], again[k] = subs[i].Task.ID, specs[i]
	}
	if _, err := b.store.ActBatch(ctx, tasks.ActionDelete, ids); err != nil {
		return fmt.Errorf("replacing the tasks of %d inputs to run them with this run's limits: %w", len(ids), err)
	}
	stored, err := r.SubmitMany(ctx, again)
	if err != nil {
		return fmt.Errorf("storing the tasks of %d inputs to run them with this run's limits: %w", len(again), err)
	}
	for k, s := range stored {
		if err := b.adoptAsIs(ctx, r, chunk[idx[k]], s); err != nil {
			return err
		}
	}
	b.log.Info("inputs of an earlier run run with this run's limits (their tasks replaced)", zap.Int("inputs", len(idx)))
	return nil
}

// logKeptLimits says, once the submission ended, how many inputs keep
// the limits an earlier run stored their tasks with.
func (b *batchRun) logKeptLimits() {
	b.mu.Lock()
	n := b.keptLimits
	b.mu.Unlock()
	if n == 0 {
		return
	}
	b.log.Warn("inputs stored by an earlier run with other limits keep them: they resume from a checkpoint or snapshot, or were running, or the store cannot replace their tasks; "+
		"to run them with this run's limits, cancel them (runner tasks cancel --queue "+b.queue+" --yes) and run the batch again",
		zap.Int("inputs", n), zap.String("queue", b.queue))
}

// adoptAsIs takes a submitted task into the batch as it is.
func (b *batchRun) adoptAsIs(ctx context.Context, r *stint.Runner, in *batchInput, s tasks.Submitted) error {
	in.id = s.Task.ID
	switch {
	case !s.Existing, !s.Task.State.Terminal():
		b.setInput(in)
		if !s.Existing || s.Task.State == tasks.StateQueued {
			b.queued++
		}
	case s.Task.State == tasks.StateSucceeded:
		b.releaseData(in) // not run again
		// An output of the right size is this task's, written by an
		// earlier run: never written again.
		if size, ok := b.out.size(in.out); ok && size == int64(s.Task.ResultSize) {
			b.mu.Lock()
			b.already++
			b.left--
			b.mu.Unlock()
			b.markDone(Result{Input: in.path, Name: in.out, Seq: in.seq, Args: in.args, TaskID: in.id, AlreadyDone: true,
				OutputBytes: s.Task.ResultSize})
			return nil
		}
		b.setInput(in)
		b.push(batchJob{in: in, state: tasks.StateSucceeded, earlier: true})
	case b.cfg.SkipFailed: // dead or cancelled in an earlier run: skipped
		b.releaseData(in)
		f := Failure{Input: in.path, Outcome: string(s.Task.State),
			Reason: "failed in an earlier run; not tried again (--skip-failed)"}
		if _, ok := b.errOut.size(in.out); ok {
			f.StderrFile = b.errOut.path(in.out)
		}
		b.mu.Lock()
		b.skipped++
		b.left--
		b.failures = append(b.failures, f)
		b.mu.Unlock()
		b.markDone(Result{Input: in.path, Name: in.out, Seq: in.seq, Args: in.args, TaskID: in.id, SkippedFailed: true, Failure: &f})
	default: // dead or cancelled in an earlier run: once more
		t, err := r.Retry(ctx, in.id)
		if err != nil && !errors.Is(err, tasks.ErrInvalidState) {
			return fmt.Errorf("retrying the task of %s: %w", in.path, err)
		}
		if err == nil && t.State == tasks.StateQueued {
			b.queued++
		}
		b.setInput(in)
	}
	return nil
}

// setInput makes in known as its task's input.
func (b *batchRun) setInput(in *batchInput) {
	b.idMu.Lock()
	b.byID[in.id] = in
	b.idMu.Unlock()
}

// cancelStrays cancels the queued tasks of this batch's queue that are not
// one of its inputs now: those of files changed or removed since an
// earlier run (or of another module), which would otherwise run and
// write outputs that are no longer wanted.
func (b *batchRun) cancelStrays(ctx context.Context, queue string) error {
	if b.noStrays(ctx, queue) {
		return nil
	}
	const page = 500
	var after int64
	n := 0
	for {
		ts, err := b.store.List(ctx, tasks.ListFilter{State: tasks.StateQueued, Queue: queue, AfterID: after, Limit: page})
		if err != nil {
			return fmt.Errorf("listing the batch's tasks: %w", err)
		}
		for _, t := range ts {
			after = t.ID
			if b.input(t.ID) != nil {
				continue
			}
			if _, err := b.store.Cancel(ctx, t.ID); err != nil && !errors.Is(err, tasks.ErrInvalidState) {
				return fmt.Errorf("cancelling task %d of a file changed or removed since: %w", t.ID, err)
			}
			n++
		}
		if len(ts) < page {
			break
		}
	}
	if n > 0 {
		b.log.Info("cancelled the queued tasks of files changed or removed since the last run", zap.Int("tasks", n))
	}
	return nil
}

// queueCounts returns the number of tasks in each state of queue, from
// the store's counts (one read). False when it could not read them.
func (b *batchRun) queueCounts(ctx context.Context, queue string) (map[tasks.State]int64, bool) {
	c, err := b.store.CountTasks(ctx)
	if err != nil {
		return nil, false
	}
	n := map[tasks.State]int64{}
	for _, qc := range c.ByQueue {
		if qc.Queue == queue {
			n[qc.State] += qc.Count
		}
	}
	return n, true
}

// noStrays reports that the queue holds no queued task but this batch's
// own, from the store's counts (one read instead of listing every queued
// task): as many are queued as this batch knows of its own. False when it
// cannot tell.
func (b *batchRun) noStrays(ctx context.Context, queue string) bool {
	n, ok := b.queueCounts(ctx, queue)
	return ok && n[tasks.StateQueued] == int64(b.queued)
}
