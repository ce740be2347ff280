package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// Snapshots in the queue (issue 39): with a resumable runtime
// (sandbox.Config.Resumable), an attempt of a guest that can be suspended
//
//   - resumes from its task's stored snapshot, if it has one;
//   - stores a snapshot every Config.SnapshotEvery of its run time, in the
//     background of its run (sandbox.Spec.OnSnapshot: the guest waits only
//     while its memory is copied; encoding and writing happen beside it);
//   - is suspended, not forced, by ForceStop (a drain's last phase), and
//     at its attempt deadline's soft stop (sandbox: Outcome.Deadline), its
//     snapshot stored before the attempt is recorded.
//
// Every write carries the attempt's lease: a snapshot is never stored by
// an attempt that lost its task. A write that fails loses nothing but
// that snapshot: the task keeps the last one stored. The writes of one
// attempt are serialised and the last one asked for wins (snapshotter).

// DefaultMaxSnapshot is Config.MaxSnapshot's default: an encoded snapshot
// larger than this is not stored (limits.snapshot). It is the largest
// whole number of MiB at or below both stores' cap (tasks/sqlite's and
// tasks/postgres' MaxSnapshot, 1,000,000,000 bytes): a snapshot the pool
// would store is one the store takes (docs/design/snapshots.md).
const DefaultMaxSnapshot = 953 << 20

// suspendWait bounds how long ForceStop lets suspendable guests unwind
// and store their snapshots before it forces what is still running.
const suspendWait = 5 * time.Second

// snapshotter stores one attempt's snapshots, one at a time.
type snapshotter struct {
	p     *Pool
	a     *attempt
	store tasks.Store

	mu      sync.Mutex // held while one is encoded and written
	busy    atomic.Bool
	final   atomic.Bool // the attempt's last one is being, or was, stored: background ones are dropped
	stored  int         // how many this attempt stored; under mu
	refused bool        // one was over MaxSnapshot (said once); under mu

	// The task's stored snapshot, when this attempt stored it and the
	// write after it did not fail (else digest is nil and the next is
	// stored whole): what it holds, its size, and the size of its whole
	// record (the deltas after it make up the rest). Under mu.
	digest      *sandbox.SnapshotDigest
	size, whole int
}

// maxChain is how large a task's stored snapshot may grow by deltas, as a
// multiple of its whole record, before the next one is stored whole: a
// resume reads and decodes at most that many times what a whole one is.
const maxChain = 2

// snapshotsFor returns the attempt's snapshotter, or nil when its guest
// cannot be suspended here: the module is not resumable, or the task has a writable mount that does not accept
// snapshots (writes to it after a snapshot are not rolled back:
// tasks.Mount.Snapshots, the sandbox's mountsSuspendable).
func (p *Pool) snapshotsFor(a *attempt, mod *sandbox.Module) *snapshotter {
	if !mod.Resumable() || a.claimed.Task.Export != "" {
		return nil
	}
	for _, m := range a.claimed.Task.Mounts {
		if m.Writable && !m.Snapshots {
			return nil
		}
	}
	return &snapshotter{p: p, a: a, store: p.store}
}

// resumeFrom reads and decodes the task's stored snapshot (nil: none, or
// one that cannot be read, which is dropped and said in the log: the
// attempt starts afresh, from its checkpoint if it has one).
func (s *snapshotter) resumeFrom(ctx context.Context) *sandbox.Snapshot {
	t := s.a.claimed.Task
	if t.Snapshot == nil {
		return nil
	}
	blob, info, err := s.store.Snapshot(ctx, t.ID)
	if err == nil && blob == nil {
		return nil // dropped since the claim (a checkpoint saved)
	}
	var snap *sandbox.Snapshot
	if err == nil {
		snap, err = sandbox.DecodeSnapshot(bytes.NewReader(blob))
	}
	if err != nil {
		s.drop(ctx, fmt.Errorf("read: %w", err))
		return nil
	}
	s.p.log.Info("attempt resumes from its task's snapshot", zap.Int64("task", t.ID), zap.Int("attempt", s.a.claimed.Lease.Token),
		zap.String("taken_by", info.Owner), zap.Int("taken_in_attempt", info.Attempt),
		zap.Duration("run_time", info.RunTime), zap.Int64("work_units", info.Work))
	s.a.resumedFrom.Store(&info)
	s.markResumed(ctx, &info)
	return snap
}

// resumeMarker is a store that records the snapshot a running attempt
// resumed from (tasks/sqlite's and tasks/postgres' MarkResumed, fenced by
// the lease), so that the attempt's record says so even when the store
// records it lost (its runner died, its lease expired); an attempt that
// ends here passes it with its completion (record.go).
type resumeMarker interface {
	MarkResumed(ctx context.Context, lease tasks.Lease, from *tasks.SnapshotInfo) error
}

// markResumed records, on a store that can, that the attempt resumes from
// info (nil: it does not after all, its snapshot refused by the run). One
// write per resumed attempt, before its guest runs; a failure is said in
// the log and loses only that: the attempt runs on.
func (s *snapshotter) markResumed(ctx context.Context, info *tasks.SnapshotInfo) {
	m, ok := s.store.(resumeMarker)
	if !ok {
		return
	}
	if err := m.MarkResumed(ctx, s.a.claimed.Lease, info); err != nil && !errors.Is(err, tasks.ErrStaleLease) {
		s.p.log.Warn("recording the snapshot the attempt resumed from failed; were the attempt lost, its record would not say it",
			zap.Int64("task", s.a.claimed.Task.ID), zap.Error(err))
	}
}

// drop deletes a stored snapshot this runner cannot resume, saying why.
func (s *snapshotter) drop(ctx context.Context, why error) {
	s.p.log.Warn("the task's snapshot cannot be resumed; the attempt starts afresh (from its checkpoint, if any)",
		zap.Int64("task", s.a.claimed.Task.ID), zap.Error(why))
	if err := s.store.DropSnapshot(ctx, s.a.claimed.Lease); err != nil && !errors.Is(err, tasks.ErrStaleLease) {
		s.p.log.Warn("dropping the snapshot failed", zap.Int64("task", s.a.claimed.Task.ID), zap.Error(err))
	}
}

// background is sandbox.Spec.OnSnapshot: it hands the snapshot to a
// goroutine that encodes and stores it, and returns at once. One is
// stored at a time; a snapshot taken while the previous is still being
// written is dropped (the next one comes an interval later).
func (s *snapshotter) background(snap *sandbox.Snapshot) {
	if s.final.Load() || !s.busy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.busy.Store(false)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.final.Load() {
			return
		}
		_ = s.write(snap, false)
	}()
}

// last stores the snapshot of a suspended attempt (the drain's, or its
// deadline's), after any background write, and reports the error.
func (s *snapshotter) last(snap *sandbox.Snapshot) error {
	s.final.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(snap, true)
}

// write encodes and stores one snapshot under the attempt's lease, in a
// context of its own (a forced stop must not cut the write that saves the
// work), bounded by the lease. Called with s.mu held. After a snapshot
// this attempt stored, it stores only what changed since (a delta of the
// memory pages whose bytes changed: sandbox.Snapshot.EncodeDelta,
// tasks.Store.AppendSnapshot), until the deltas would make the
// stored snapshot over maxChain times its whole record; then, and after
// any failure, it stores it whole.
func (s *snapshotter) write(snap *sandbox.Snapshot, suspended bool) error {
	p, a := s.p, s.a
	start := time.Now()
	info := tasks.SnapshotInfo{Work: snap.WorkUnits, RunTime: snap.RunTime, Suspended: suspended}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease)
	defer cancel()
	var buf bytes.Buffer
	delta := false
	if s.digest != nil {
		next, err := snap.EncodeDelta(&buf, s.digest)
		if err == nil && s.size+buf.Len() <= maxChain*s.whole && int64(s.size+buf.Len()) <= p.cfg.MaxSnapshot {
			err = s.store.AppendSnapshot(ctx, a.claimed.Lease, s.size, buf.Bytes(), info)
			if err == nil {
				delta = true
				s.digest, s.size = next, s.size+buf.Len()
			} else if !errors.Is(err, tasks.ErrSnapshotMoved) {
				s.digest = nil
				return s.failed(err)
			}
		}
		if !delta {
			s.digest = nil
			buf.Reset()
		}
	}
	if !delta {
		var next *sandbox.SnapshotDigest
		var err error
		if s.final.Load() { // the attempt's last: no delta follows
			err = snap.Encode(&buf)
		} else {
			next, err = snap.EncodeDelta(&buf, nil)
		}
		if err != nil {
			return fmt.Errorf("encode the snapshot: %w", err)
		}
		if max := p.cfg.MaxSnapshot; int64(buf.Len()) > max {
			err := fmt.Errorf("a snapshot of %d bytes is over limits.snapshot (%d bytes): not stored; raise limits.snapshot (--limits-snapshot) to keep this task's work across stops", buf.Len(), max)
			if !s.refused {
				s.refused = true
				p.log.Warn("snapshot not stored", zap.Int64("task", a.claimed.Task.ID), zap.Error(err))
			}
			return err
		}
		if err := s.store.SaveSnapshot(ctx, a.claimed.Lease, buf.Bytes(), info); err != nil {
			return s.failed(err)
		}
		s.digest, s.size, s.whole = next, buf.Len(), buf.Len()
	}
	s.stored++
	p.mu.Lock()
	p.stats.Snapshots++
	if delta {
		p.stats.SnapshotDeltas++
	}
	p.stats.SnapshotBytes += int64(buf.Len())
	p.stats.SnapshotTime += time.Since(start)
	p.mu.Unlock()
	if ce := p.log.Check(zap.DebugLevel, "snapshot stored"); ce != nil {
		ce.Write(zap.Int64("task", a.claimed.Task.ID), zap.Int("attempt", a.claimed.Lease.Token), zap.Int("bytes", buf.Len()),
			zap.Bool("delta", delta), zap.Int("stored_bytes", s.size), zap.Duration("took", time.Since(start)), zap.Bool("suspended", suspended))
	}
	p.emit(Event{Kind: EventSnapshotted, TaskID: a.claimed.Task.ID, Number: a.claimed.Lease.Token,
		Queue: a.queue, Bytes: int64(buf.Len()), Took: time.Since(start)})
	return nil
}

// failed says that storing a snapshot failed (unless the attempt lost its
// task) and returns why.
func (s *snapshotter) failed(err error) error {
	if !errors.Is(err, tasks.ErrStaleLease) {
		s.p.log.Warn("storing a snapshot failed; the task keeps its last one", zap.Int64("task", s.a.claimed.Task.ID), zap.Error(err))
	}
	return fmt.Errorf("store the snapshot: %w", err)
}

// suspendRunning asks every running attempt whose guest can be suspended
// to suspend, and returns a channel closed once each has returned from
// its guest (nil: none could).
func (p *Pool) suspendRunning() <-chan struct{} {
	p.mu.Lock()
	var waits []<-chan struct{}
	for _, a := range p.running {
		if a.suspendable.Load() {
			a.suspendNow()
			waits = append(waits, a.ran)
		}
	}
	p.mu.Unlock()
	if len(waits) == 0 {
		return nil
	}
	all := make(chan struct{})
	go func() {
		for _, w := range waits {
			<-w
		}
		close(all)
	}()
	return all
}

// dropForRestart drops the snapshot of a task that asks to restart after a
// failure (tasks.OnRetryRestart), under the attempt's lease, before its
// completion is written: its retry starts afresh (from its checkpoint, if
// it saved one). A drain or a crash still resumes it: it did not fail.
func (p *Pool) dropForRestart(a *attempt) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Lease)
	defer cancel()
	if err := p.store.DropSnapshot(ctx, a.claimed.Lease); err != nil && !errors.Is(err, tasks.ErrStaleLease) {
		p.log.Warn("dropping the snapshot of a task that restarts failed; its retry resumes instead",
			zap.Int64("task", a.claimed.Task.ID), zap.Error(err))
	}
}
