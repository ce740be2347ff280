package pool_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// failRounds is the failing-write tests' chase workload (over chaseMiB):
// a third of the other snapshot tests', since the attempts that follow
// resume from an early snapshot or start afresh, and run it nearly whole.
const failRounds = chaseRounds / 3

// errInjected is what failingSnapshots' writes fail with.
var errInjected = errors.New("injected: the disk is full")

// failingSnapshots is the real SQLite store whose snapshot writes fail
// once armed: the background ones (SaveSnapshot, AppendSnapshot) and the
// suspended attempt's last (SaveSnapshot with info.Suspended).
type failingSnapshots struct {
	*sqlite.Store
	armed      atomic.Bool
	background chan struct{} // closed at the first background write that failed
	once       sync.Once
	final      atomic.Int32 // final writes failed
}

func newFailingSnapshots(s *sqlite.Store) *failingSnapshots {
	return &failingSnapshots{Store: s, background: make(chan struct{})}
}

func (f *failingSnapshots) fail(info tasks.SnapshotInfo) error {
	if !f.armed.Load() {
		return nil
	}
	if info.Suspended {
		f.final.Add(1)
	} else {
		f.once.Do(func() { close(f.background) })
	}
	return errInjected
}

func (f *failingSnapshots) SaveSnapshot(ctx context.Context, lease tasks.Lease, blob []byte, info tasks.SnapshotInfo) error {
	if err := f.fail(info); err != nil {
		return err
	}
	return f.Store.SaveSnapshot(ctx, lease, blob, info)
}

func (f *failingSnapshots) AppendSnapshot(ctx context.Context, lease tasks.Lease, base int, blob []byte, info tasks.SnapshotInfo) error {
	if err := f.fail(info); err != nil {
		return err
	}
	return f.Store.AppendSnapshot(ctx, lease, base, blob, info)
}

// unstoredDrain drains f's pool once fs has failed a background write,
// and checks that the suspended attempt's final write failed too and
// that the task is queued again, the attempt not counted, its reason
// saying that its snapshot was not stored and why.
func unstoredDrain(t *testing.T, f *fixture, fs *failingSnapshots, id int64) tasks.Task {
	t.Helper()
	select {
	case <-fs.background:
	case <-time.After(bound):
		t.Fatalf("no background snapshot write within %s", bound)
	}
	f.pl.RequestStop() // chase ignores it
	f.pl.ForceStop()
	<-f.pl.Idle()
	require.Equal(t, int32(1), fs.final.Load(), "the suspended attempt's last snapshot write")
	got := f.requireRequeued(t, id, "suspended")
	reason := attempts(t, f.store, id)[0].Reason
	require.Contains(t, reason, "suspended (runner shutdown), but its snapshot was not stored")
	require.Contains(t, reason, errInjected.Error())
	require.Contains(t, reason, "last stored snapshot or checkpoint, or starts afresh")
	require.NotContains(t, reason, "resumes where it stopped")
	require.Zero(t, f.pl.Stats().Suspended, "no suspension was stored")
	return got
}

// TestSnapshotWriteFailsResumesFromLastGood: a snapshot is stored, then
// the store fails a background write and the drain's last one. Nothing is
// lost: the task is queued again, its attempt not counted, its reason
// says the snapshot was not stored; it keeps the last good snapshot, from
// which the next attempt resumes to the uninterrupted run's output.
func TestSnapshotWriteFailsResumesFromLastGood(t *testing.T) {
	t.Parallel()
	wasm := chaseWasm(t)
	events := make(chan pool.Event, 1024)
	var fs *failingSnapshots
	f := snapshotFixtureWrapped(t, pool.Config{Workers: 1, SnapshotEvery: 20 * time.Millisecond}, events,
		func(s *sqlite.Store) tasks.Store { fs = newFailingSnapshots(s); return fs })
	task := submitFailChase(t, f, wasm)
	waitEvent(t, events, pool.EventSnapshotted) // a good one stored
	fs.armed.Store(true)
	got := unstoredDrain(t, f, fs, task.ID)
	require.NotNil(t, got.Snapshot, "the task lost its last good snapshot")
	require.False(t, got.Snapshot.Suspended, "the last good snapshot is a background one")

	finishElsewhere(t, f, task.ID)
	require.True(t, attempts(t, f.store, task.ID)[1].Resumed, "the next attempt resumes from the last good snapshot")
}

// submitFailChase submits the chase kernel (wasm) for failRounds rounds
// over chaseMiB, one attempt, an hour's timeout.
func submitFailChase(t *testing.T, f *fixture, wasm []byte) tasks.Task {
	t.Helper()
	return f.submitWasm(t, wasm, tasks.Spec{MaxAttempts: 1, Input: ckernels.ChaseInput(failRounds, chaseMiB),
		Limits: tasks.Limits{Timeout: time.Hour, MemoryBytes: 64 << 20}})
}

// finishElsewhere has another pool take task id up and checks that it
// succeeds with the chase kernel's output.
func finishElsewhere(t *testing.T, f *fixture, id int64) {
	t.Helper()
	_, done := resumeElsewhere(t, f, pool.Config{}, id)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.Equal(t, ckernels.ChaseOutput(failRounds, chaseMiB), string(done.Result))
}

// TestSnapshotWriteFailsStartsAfresh: every snapshot write fails, so the
// task never has one: the drained task is queued again, not counted, its
// reason says why, and the next attempt starts afresh and succeeds.
func TestSnapshotWriteFailsStartsAfresh(t *testing.T) {
	t.Parallel()
	wasm := chaseWasm(t)
	events := make(chan pool.Event, 1024)
	var fs *failingSnapshots
	f := snapshotFixtureWrapped(t, pool.Config{Workers: 1, SnapshotEvery: 20 * time.Millisecond}, events,
		func(s *sqlite.Store) tasks.Store {
			fs = newFailingSnapshots(s)
			fs.armed.Store(true)
			return fs
		})
	task := submitFailChase(t, f, wasm)
	got := unstoredDrain(t, f, fs, task.ID)
	require.Nil(t, got.Snapshot)

	finishElsewhere(t, f, task.ID)
	require.False(t, attempts(t, f.store, task.ID)[1].Resumed, "nothing to resume from: it starts afresh")
}

// TestSnapshotOverLimitNamesIt: with limits.snapshot smaller than any
// snapshot of the guest, none is stored; the log and the drained
// attempt's reason name limits.snapshot and its flag, and the task is
// queued again, not counted, with no snapshot.
func TestSnapshotOverLimitNamesIt(t *testing.T) {
	t.Parallel()
	wasm := chaseWasm(t)
	core, logs := observer.New(zap.WarnLevel)
	events := make(chan pool.Event, 1024)
	f := snapshotFixture(t, pool.Config{Workers: 1, SnapshotEvery: 20 * time.Millisecond, MaxSnapshot: 4096,
		Logger: zap.New(core)}, events)
	task := submitFailChase(t, f, wasm)
	testutil.WaitFor(t, "a background snapshot refused", func() bool {
		return logs.FilterMessage("snapshot not stored").Len() > 0
	})
	f.pl.RequestStop()
	f.pl.ForceStop()
	<-f.pl.Idle()
	got := f.requireRequeued(t, task.ID, "suspended")
	require.Nil(t, got.Snapshot)
	reason := attempts(t, f.store, task.ID)[0].Reason
	require.Contains(t, reason, "but its snapshot was not stored")
	require.Contains(t, reason, "over limits.snapshot (4096 bytes)")
	require.Contains(t, reason, "--limits-snapshot")
	require.NotContains(t, reason, "resumes where it stopped")
}

// failingMark is the real SQLite store whose MarkResumed fails, as a
// store that is down for a moment would.
type failingMark struct{ *sqlite.Store }

func (failingMark) MarkResumed(context.Context, tasks.Lease, *tasks.SnapshotInfo) error {
	return errInjected
}

// TestMarkResumedFailsAttemptRunsOn: when the store fails the write that
// marks a resumed attempt (MarkResumed, which only a lost attempt's
// record needs), the log says so and the attempt runs on: it resumes,
// succeeds with the uninterrupted run's output, and its completion still
// records the snapshot it resumed from.
func TestMarkResumedFailsAttemptRunsOn(t *testing.T) {
	t.Parallel()
	wasm := chaseWasm(t)
	events := make(chan pool.Event, 1024)
	f := snapshotFixture(t, pool.Config{Workers: 1, SnapshotEvery: 20 * time.Millisecond}, events)
	task := submitFailChase(t, f, wasm)
	waitEvent(t, events, pool.EventSnapshotted)
	drainSuspends(t, f, events, task.ID)

	core, logs := observer.New(zap.WarnLevel)
	g, done := resumeElsewhereVia(t, f, failingMark{f.store}, pool.Config{Logger: zap.New(core)}, task.ID)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.Equal(t, ckernels.ChaseOutput(failRounds, chaseMiB), string(done.Result))
	require.Equal(t, 1, g.pl.Stats().Resumed)
	warned := logs.FilterMessageSnippet("recording the snapshot the attempt resumed from failed")
	require.Equal(t, 1, warned.Len(), "the failed mark is said once in the log")
	require.Contains(t, warned.All()[0].ContextMap()["error"], errInjected.Error())
	atts := attempts(t, f.store, task.ID)
	require.Len(t, atts, 2)
	require.True(t, atts[1].Resumed)
	require.NotNil(t, atts[1].ResumedFrom, "the completion records the snapshot the attempt resumed from")
	require.Equal(t, atts[0].Number, atts[1].ResumedFrom.Attempt)
}
