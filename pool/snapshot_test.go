package pool_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// The snapshot tests run chase (internal/testwasm/ckernels), a C guest
// that knows nothing of Stint, and check its output against
// ckernels.ChaseOutput, the same walk written again in Go: a suspended and resumed task must
// print what an uninterrupted run prints, byte for byte.

// chaseInput is the tests' workload: 4 MiB, enough rounds to run for
// seconds, so that the drain and the deadline come while it runs.
const chaseRounds, chaseMiB = 60, 4

func chaseWasm(t *testing.T) []byte {
	t.Helper()
	wasm, err := ckernels.Build(testwasm.CacheDir(t), "chase")
	if err != nil {
		require.ErrorIs(t, err, ckernels.ErrUnavailable)
		t.Skip(err)
	}
	return wasm
}

// snapshotFixture is a pool over a resumable runtime; events go to ch.
func snapshotFixture(t *testing.T, cfg pool.Config, ch chan pool.Event) *fixture {
	t.Helper()
	return snapshotFixtureWrapped(t, cfg, ch, nil)
}

// snapshotFixtureWrapped is snapshotFixture whose pool uses wrap(store)
// (newFixtureWrapped).
func snapshotFixtureWrapped(t *testing.T, cfg pool.Config, ch chan pool.Event, wrap func(*sqlite.Store) tasks.Store) *fixture {
	t.Helper()
	cfg.OnEvent = func(e pool.Event) {
		select {
		case ch <- e:
		default:
		}
	}
	// Half the deadline tests' timeout is grace: the suspension comes at
	// its start, and a loaded machine must not let the deadline pass first.
	return newFixtureWrapped(t, cfg, sandbox.Config{Resumable: true, CacheDir: testwasm.CompileCacheDir(t),
		Defaults: sandbox.Limits{Grace: 400 * time.Millisecond}}, wrap)
}

func (f *fixture) submitWasm(t *testing.T, wasm []byte, spec tasks.Spec) tasks.Task {
	t.Helper()
	sha, err := f.store.PutModule(context.Background(), wasm)
	require.NoError(t, err)
	spec.Module = sha
	task, _, err := f.pl.Submit(context.Background(), spec)
	require.NoError(t, err)
	return task
}

func waitEvent(t *testing.T, ch chan pool.Event, kind pool.EventKind) pool.Event {
	t.Helper()
	for {
		select {
		case e := <-ch:
			if e.Kind == kind {
				return e
			}
		case <-time.After(bound):
			t.Fatalf("no %s event within %s", kind, bound)
		}
	}
}

// drainSuspends waits for the task's first stored snapshot, drains f's
// pool with a forced stop and checks that the task was suspended: queued
// again with its snapshot, its one attempt suspended and not counted.
func drainSuspends(t *testing.T, f *fixture, events chan pool.Event, id int64) {
	t.Helper()
	waitEvent(t, events, pool.EventSnapshotted) // it runs, and background snapshots are stored
	f.pl.RequestStop()                          // the guest ignores it
	f.pl.ForceStop()
	<-f.pl.Idle()
	got := f.requireRequeued(t, id, "suspended")
	require.NotNil(t, got.Snapshot, "the suspended task has no snapshot")
	require.True(t, got.Snapshot.Suspended)
}

// resumeElsewhere starts another pool, over a resumable runtime of its
// own, on f's store, and waits for the task to end there (within
// testutil.WorkTimeout: a resume from an early snapshot runs chase nearly
// whole, minutes on a loaded machine).
func resumeElsewhere(t *testing.T, f *fixture, cfg pool.Config, id int64) (*fixture, tasks.Task) {
	t.Helper()
	return resumeElsewhereVia(t, f, f.store, cfg, id)
}

// resumeElsewhereVia is resumeElsewhere whose pool uses store (f's store,
// or a wrapper of it).
func resumeElsewhereVia(t *testing.T, f *fixture, store tasks.Store, cfg pool.Config, id int64) (*fixture, tasks.Task) {
	t.Helper()
	g := &fixture{store: f.store}
	rt, err := sandbox.New(context.Background(), sandbox.Config{Resumable: true, CacheDir: testwasm.CompileCacheDir(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	cfg.Workers, cfg.Poll = 1, 5*time.Millisecond
	g.pl, err = pool.New(store, rt, cfg)
	require.NoError(t, err)
	require.NoError(t, g.pl.Start(context.Background()))
	t.Cleanup(func() { _ = g.pl.Stop(context.Background()) })
	return g, g.waitWithin(t, id, testutil.WorkTimeout)
}

// TestDrainSuspendsAndResumes: a forced stop suspends a running guest
// that knows nothing of Stint, stores its snapshot, and requeues its task
// with the attempt not counted; another pool on the same store resumes it
// from there, and the result is the uninterrupted run's.
func TestDrainSuspendsAndResumes(t *testing.T) {
	t.Parallel()
	wasm := chaseWasm(t)
	want := ckernels.ChaseOutput(chaseRounds, chaseMiB)
	events := make(chan pool.Event, 1024)
	f := snapshotFixture(t, pool.Config{Workers: 1, SnapshotEvery: 20 * time.Millisecond}, events)
	task := f.submitWasm(t, wasm, tasks.Spec{MaxAttempts: 1, Input: ckernels.ChaseInput(chaseRounds, chaseMiB),
		Limits: tasks.Limits{Timeout: time.Hour, MemoryBytes: 64 << 20}})
	// After the first, each snapshot is stored as what changed, until the
	// deltas pass twice the whole (a first snapshot taken before the guest
	// filled its memory is soon followed by a whole one): wait for a delta
	// stored, so that the resume below reads a whole and deltas after it.
	for f.pl.Stats().SnapshotDeltas == 0 {
		waitEvent(t, events, pool.EventSnapshotted)
	}
	drainSuspends(t, f, events, task.ID)
	st := f.pl.Stats()
	require.Equal(t, 1, st.Suspended)
	require.GreaterOrEqual(t, st.Snapshots, 2)
	t.Logf("%d snapshots, %d of them deltas, %d bytes written", st.Snapshots, st.SnapshotDeltas, st.SnapshotBytes)

	// Another pool, another runtime, the same store: it resumes.
	g, done := resumeElsewhere(t, f, pool.Config{}, task.ID)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.Equal(t, want, string(done.Result), "the resumed task's output is not the uninterrupted run's")
	require.Nil(t, done.Snapshot, "a task that ended keeps no snapshot")
	require.Equal(t, 1, g.pl.Stats().Resumed)
	atts := attempts(t, f.store, task.ID)
	require.Len(t, atts, 2)
	require.True(t, atts[1].Resumed)
	from := atts[1].ResumedFrom
	require.NotNil(t, from, "the resumed attempt keeps the snapshot it resumed from")
	require.Equal(t, atts[0].Number, from.Attempt)
	require.Equal(t, atts[0].Owner, from.Owner)
	require.True(t, from.Suspended, "the drain's snapshot")
	require.Positive(t, from.Work)
	require.Nil(t, atts[0].ResumedFrom)
}

// TestDrainSuspendsASleepingTask: a guest asleep for an hour (the sleep
// fixture, poll_oneoff) gives background snapshots from its sleep, and a
// forced stop suspends it in its sleep rather than ending it: the task is
// queued again, the attempt not counted, with its snapshot.
func TestDrainSuspendsASleepingTask(t *testing.T) {
	t.Parallel()
	events := make(chan pool.Event, 1024)
	f := snapshotFixture(t, pool.Config{Workers: 1, SnapshotEvery: 20 * time.Millisecond}, events)
	task := f.submitWasm(t, wat.MustLoad("sleep"), tasks.Spec{MaxAttempts: 1, Limits: tasks.Limits{Timeout: 2 * time.Hour}})
	drainSuspends(t, f, events, task.ID) // its snapshots are taken while it sleeps: it has no other point
}

// TestDrainSuspendsAReadOnlyMountTask: readloop (C, knows nothing of
// Stint) reads files under a read-only mount; a forced stop suspends it
// (at a point where it holds no file open), and another pool resumes it:
// its result is that of a run without a stop.
func TestDrainSuspendsAReadOnlyMountTask(t *testing.T) {
	t.Parallel()
	wasm, err := ckernels.Build(testwasm.CacheDir(t), "readloop")
	if err != nil {
		require.ErrorIs(t, err, ckernels.ErrUnavailable)
		t.Skip(err)
	}
	dir := t.TempDir()
	for i := range 8 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("file.%d", i)), bytes.Repeat([]byte{byte(i), 7}, 4000+i*500), 0o644))
	}
	const rounds = "400"
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t)})
	require.NoError(t, err)
	defer rt.Close(ctx)
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(t, err)
	want, err := rt.Run(ctx, mod, sandbox.Spec{Input: []byte(rounds), Args: []string{"/data"}, Mounts: []sandbox.Mount{{HostPath: dir, GuestPath: "/data"}}})
	require.NoError(t, err)
	require.Equal(t, sandbox.KindSucceeded, want.Kind, want.Message)

	events := make(chan pool.Event, 1024)
	policy := tasks.Policy{MountsAllow: []string{dir}}
	f := snapshotFixture(t, pool.Config{Workers: 1, SnapshotEvery: 20 * time.Millisecond, Policy: policy}, events)
	task := f.submitWasm(t, wasm, tasks.Spec{MaxAttempts: 1, Input: []byte(rounds), Args: []string{"/data"},
		Mounts: []tasks.Mount{{HostPath: dir, GuestPath: "/data"}}, Limits: tasks.Limits{Timeout: time.Hour}})
	drainSuspends(t, f, events, task.ID)
	_, done := resumeElsewhere(t, f, pool.Config{Policy: policy}, task.ID)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.Equal(t, string(want.Stdout), string(done.Result), "the resumed task's output is not the uninterrupted run's")
	require.True(t, attempts(t, f.store, task.ID)[1].Resumed)
}

// TestDeadlineSuspendsAndResumes: an attempt that reaches its timeout is
// suspended there (counted); the next attempt resumes it, until the task
// succeeds with the uninterrupted run's output.
func TestDeadlineSuspendsAndResumes(t *testing.T) {
	t.Parallel()
	wasm := chaseWasm(t)
	want := ckernels.ChaseOutput(chaseRounds, chaseMiB)
	events := make(chan pool.Event, 1024)
	f := snapshotFixture(t, pool.Config{Workers: 1}, events)
	_, err := f.rt.Compile(context.Background(), wasm) // not under the first attempt's timeout
	require.NoError(t, err)
	task := f.submitWasm(t, wasm, tasks.Spec{MaxAttempts: 1000, Input: ckernels.ChaseInput(chaseRounds, chaseMiB),
		Limits: tasks.Limits{Timeout: time.Second, MemoryBytes: 64 << 20}})
	done := f.waitWithin(t, task.ID, testutil.WorkTimeout) // 16 attempts on a quiet machine, many more under load
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.Equal(t, want, string(done.Result), "the resumed task's output is not the uninterrupted run's")
	atts := attempts(t, f.store, task.ID)
	for _, a := range atts {
		t.Logf("attempt %d: %s %s resumed=%v counted=%v %s", a.Number, a.Outcome, a.Duration(), a.Resumed, a.Counted, a.Reason)
	}
	require.Greater(t, len(atts), 1, "the task ended within one attempt: the deadline never came")
	// An attempt is suspended in the grace before its deadline. On a
	// machine so loaded that the guest does not reach a point within the
	// grace it is forced at the deadline instead, as documented, and the
	// next attempt resumes from the last suspension: allowed, and counted.
	suspended, forced := 0, 0
	for i, a := range atts[:len(atts)-1] {
		switch a.Outcome {
		case "suspended":
			suspended++
		case "timed_out":
			forced++
		default:
			t.Fatalf("attempt %d: %s: %s", i+1, a.Outcome, a.Reason)
		}
		require.True(t, a.Counted, "a deadline's suspension counts")
		require.Equal(t, i > 0 && suspended-boolInt(a.Outcome == "suspended") > 0, a.Resumed,
			"attempt %d resumes when an earlier one was suspended", i+1)
	}
	require.Greater(t, suspended, forced, "most attempts are suspended at their deadline")
	require.True(t, atts[len(atts)-1].Resumed)
	t.Logf("%d attempts, %d suspended, %d forced", len(atts), suspended, forced)
}

// TestRestartOnRetryStartsAfresh: the same task as in
// TestDeadlineSuspendsAndResumes, asking to restart after a failure
// (tasks.OnRetryRestart): every attempt starts from the beginning, none
// resumes, and it ends dead after its attempts, its snapshot dropped.
func TestRestartOnRetryStartsAfresh(t *testing.T) {
	t.Parallel()
	wasm := chaseWasm(t)
	events := make(chan pool.Event, 1024)
	f := snapshotFixture(t, pool.Config{Workers: 1}, events)
	_, err := f.rt.Compile(context.Background(), wasm)
	require.NoError(t, err)
	task := f.submitWasm(t, wasm, tasks.Spec{MaxAttempts: 3, OnRetry: tasks.OnRetryRestart,
		Input: ckernels.ChaseInput(chaseRounds, chaseMiB), Limits: tasks.Limits{Timeout: time.Second, MemoryBytes: 64 << 20}})
	done := f.wait(t, task.ID)
	require.Equal(t, tasks.StateDead, done.State)
	require.Nil(t, done.Snapshot)
	atts := attempts(t, f.store, task.ID)
	require.Len(t, atts, 3)
	for _, a := range atts {
		require.Equal(t, "suspended", a.Outcome, a.Reason)
		require.False(t, a.Resumed, "attempt %d resumed", a.Number)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
