package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// The snapshots (tasks.Store.SaveSnapshot and the rest): a task's latest
// snapshot, fenced by its lease, described by Task.Snapshot and counted
// by Task.Snapshots, dropped when the task ends, is deleted or pruned,
// or saves a checkpoint. And the lost streak (Task.LostStreak): the
// attempts a task loses in a row (its runners died) are not counted, but
// at ClaimRequest.LostLimit (or a recovery's lostLimit) the task is dead,
// so that a task that kills its runners cannot loop.

// snapshotBlob is n bytes of a pattern that seed varies.
func snapshotBlob(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// requireInfo checks that got describes the snapshot want (TakenAt as an
// instant).
func requireInfo(t *testing.T, want tasks.SnapshotInfo, got *tasks.SnapshotInfo, what string) {
	t.Helper()
	require.NotNil(t, got, "%s: no snapshot", what)
	requireTime(t, want.TakenAt, got.TakenAt, what+": taken at")
	g := *got
	g.TakenAt = want.TakenAt
	require.Equal(t, want, g, what)
}

// requireSnapshot checks the stored snapshot of task id: blob and what
// describes it (nil blob: none).
func (e *env) requireSnapshot(sn tasks.Store, id int64, blob []byte, want tasks.SnapshotInfo) {
	e.t.Helper()
	got, info, err := sn.Snapshot(e.ctx, id)
	require.NoError(e.t, err)
	if blob == nil {
		require.Nil(e.t, got, "task %d: no snapshot", id)
		require.Zero(e.t, info, "task %d: no snapshot", id)
		require.Nil(e.t, e.get(id).Snapshot, "task %d: no snapshot", id)
		return
	}
	require.NotNil(e.t, got, "task %d: a snapshot", id)
	require.True(e.t, bytes.Equal(blob, got), "task %d: the snapshot's bytes (%d stored, %d read)", id, len(blob), len(got))
	requireInfo(e.t, want, &info, "Snapshot")
	requireInfo(e.t, want, e.get(id).Snapshot, "Get")
}

// saveSnapshot saves blob under l with info and returns what the store
// then describes it as (TakenAt now).
func (e *env) saveSnapshot(sn tasks.Store, l tasks.Lease, blob []byte, info tasks.SnapshotInfo) tasks.SnapshotInfo {
	e.t.Helper()
	require.NoError(e.t, sn.SaveSnapshot(e.ctx, l, blob, info))
	info.Size, info.TakenAt, info.Owner, info.Attempt = len(blob), e.clock.Now(), l.Owner, l.Token
	return info
}

// interrupt ends the attempt of c as interrupted (not counted: the task
// is queued again, ready now).
func (e *env) interrupt(c tasks.Claimed) {
	e.t.Helper()
	require.NoError(e.t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75}}))
}

// testSnapshotSaveRead: a snapshot is saved under its lease, replaced
// whole by the next, read back with what describes it (the store fills
// size, time, owner and attempt), described without its bytes by Get,
// List, ListNewest and Claim, counted, and dropped by its attempt.
func testSnapshotSaveRead(t *testing.T, e *env) {
	task := e.submit(e.spec())
	later := e.spec()
	later.RunAt = Start.Add(time.Hour) // never claimed here
	other := e.submit(later)
	e.requireSnapshot(e.s, task.ID, nil, tasks.SnapshotInfo{})
	require.Zero(t, task.Snapshots)
	require.Nil(t, task.Snapshot)
	_, _, err := e.s.Snapshot(e.ctx, 424242)
	require.ErrorIs(t, err, tasks.ErrNotFound)

	cl := e.claim("a", 1)
	require.Len(t, cl, 1)
	require.Equal(t, task.ID, cl[0].Task.ID)
	require.Nil(t, cl[0].Task.Snapshot)
	e.clock.Advance(time.Second)
	first := snapshotBlob(1000, 1)
	want := e.saveSnapshot(e.s, cl[0].Lease, first, tasks.SnapshotInfo{Work: 10, RunTime: 2 * time.Second,
		Size: 7, TakenAt: Start.Add(-time.Hour), Owner: "ignored", Attempt: 99}) // filled by the store
	require.Equal(t, tasks.SnapshotInfo{Size: 1000, TakenAt: Start.Add(time.Second), Owner: "a", Attempt: 1,
		Work: 10, RunTime: 2 * time.Second}, want)
	e.requireSnapshot(e.s, task.ID, first, want)
	got := e.get(task.ID)
	require.Equal(t, 1, got.Snapshots)
	requireTime(t, e.clock.Now(), got.UpdatedAt, "updated at")
	e.requireSnapshot(e.s, other.ID, nil, tasks.SnapshotInfo{})

	// Replaced whole, larger then smaller: the latest wins.
	e.clock.Advance(time.Second)
	second := snapshotBlob(3<<20, 2)
	want = e.saveSnapshot(e.s, cl[0].Lease, second, tasks.SnapshotInfo{Work: 20, RunTime: 4 * time.Second, Suspended: true})
	e.requireSnapshot(e.s, task.ID, second, want)
	e.clock.Advance(time.Second)
	third := []byte("small")
	want = e.saveSnapshot(e.s, cl[0].Lease, third, tasks.SnapshotInfo{Work: 30, RunTime: 6 * time.Second})
	e.requireSnapshot(e.s, task.ID, third, want)
	require.Equal(t, 3, e.get(task.ID).Snapshots)

	// An interrupted attempt keeps it: described by the reads of the
	// queued task, and handed to the next claim.
	e.interrupt(cl[0])
	e.requireSnapshot(e.s, task.ID, third, want)
	list := e.all(tasks.ListFilter{})
	require.Len(t, list, 2)
	require.Equal(t, task.ID, list[0].ID)
	requireInfo(t, want, list[0].Snapshot, "List")
	require.Equal(t, 3, list[0].Snapshots)
	require.Nil(t, list[1].Snapshot)
	queued := e.all(tasks.ListFilter{State: tasks.StateQueued})
	require.Len(t, queued, 2)
	requireInfo(t, want, queued[0].Snapshot, "List of the queued tasks")
	newest, err := e.s.ListNewest(e.ctx, tasks.NewestFilter{})
	require.NoError(t, err)
	require.Equal(t, []int64{other.ID, task.ID}, taskIDs(newest))
	requireInfo(t, want, newest[1].Snapshot, "ListNewest")
	require.Equal(t, 3, newest[1].Snapshots)
	require.Nil(t, newest[0].Snapshot)
	cl2 := e.claimOne("b", task.ID)
	requireInfo(t, want, cl2.Task.Snapshot, "Claim")
	require.Equal(t, 3, cl2.Task.Snapshots)
	require.Equal(t, "a", cl2.Task.Snapshot.Owner, "taken by the attempt of a")
	running := e.all(tasks.ListFilter{State: tasks.StateRunning})
	require.Len(t, running, 1)
	requireInfo(t, want, running[0].Snapshot, "List of the running tasks")

	// An empty snapshot is a snapshot.
	e.clock.Advance(time.Second)
	want = e.saveSnapshot(e.s, cl2.Lease, nil, tasks.SnapshotInfo{})
	blob, info, err := e.s.Snapshot(e.ctx, task.ID)
	require.NoError(t, err)
	require.NotNil(t, blob)
	require.Empty(t, blob)
	requireInfo(t, want, &info, "an empty snapshot")
	require.Equal(t, 4, e.get(task.ID).Snapshots)

	// Dropped by its attempt (a snapshot it cannot resume): none, the
	// count kept; dropping none is no error.
	require.NoError(t, e.s.DropSnapshot(e.ctx, cl2.Lease))
	e.requireSnapshot(e.s, task.ID, nil, tasks.SnapshotInfo{})
	require.Equal(t, 4, e.get(task.ID).Snapshots)
	require.NoError(t, e.s.DropSnapshot(e.ctx, cl2.Lease))
	e.clock.Advance(time.Second)
	want = e.saveSnapshot(e.s, cl2.Lease, first, tasks.SnapshotInfo{Work: 1})
	e.requireSnapshot(e.s, task.ID, first, want)
	require.Equal(t, 5, e.get(task.ID).Snapshots)
}

// testSnapshotFencing: SaveSnapshot and DropSnapshot are refused
// (ErrStaleLease) under a lease that does not hold the task (another
// token or owner, a task not running, an attempt taken over or ended) and
// change nothing; an unknown task is ErrNotFound.
func testSnapshotFencing(t *testing.T, e *env) {
	task := e.submit(e.spec())
	err := e.s.SaveSnapshot(e.ctx, tasks.Lease{TaskID: task.ID, Owner: "a", Token: 1}, []byte("x"), tasks.SnapshotInfo{})
	require.ErrorIs(t, err, tasks.ErrStaleLease, "a queued task")
	require.ErrorIs(t, e.s.DropSnapshot(e.ctx, tasks.Lease{TaskID: task.ID, Owner: "a", Token: 1}), tasks.ErrStaleLease)
	err = e.s.SaveSnapshot(e.ctx, tasks.Lease{TaskID: 424242, Owner: "a", Token: 1}, []byte("x"), tasks.SnapshotInfo{})
	require.ErrorIs(t, err, tasks.ErrNotFound)
	require.ErrorIs(t, e.s.DropSnapshot(e.ctx, tasks.Lease{TaskID: 424242, Owner: "a", Token: 1}), tasks.ErrNotFound)

	good := e.claimOne("a", task.ID).Lease
	want := e.saveSnapshot(e.s, good, []byte("good"), tasks.SnapshotInfo{Work: 1})
	for name, bad := range map[string]tasks.Lease{
		"old token":    {TaskID: good.TaskID, Owner: good.Owner, Token: good.Token - 1},
		"future token": {TaskID: good.TaskID, Owner: good.Owner, Token: good.Token + 1},
		"other owner":  {TaskID: good.TaskID, Owner: "b", Token: good.Token},
	} {
		require.ErrorIs(t, e.s.SaveSnapshot(e.ctx, bad, []byte("bad"), tasks.SnapshotInfo{}), tasks.ErrStaleLease, name)
		require.ErrorIs(t, e.s.DropSnapshot(e.ctx, bad), tasks.ErrStaleLease, name)
	}
	e.requireSnapshot(e.s, task.ID, []byte("good"), want)
	require.Equal(t, 1, e.get(task.ID).Snapshots, "refused saves are not counted")

	// Taken over: the old lease writes nothing, the new attempt is handed
	// the snapshot and may replace it.
	e.clock.Advance(lease + time.Second)
	cl := e.claimOne("b", task.ID)
	requireInfo(t, want, cl.Task.Snapshot, "after a takeover")
	require.ErrorIs(t, e.s.SaveSnapshot(e.ctx, good, []byte("late"), tasks.SnapshotInfo{}), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.DropSnapshot(e.ctx, good), tasks.ErrStaleLease)
	e.requireSnapshot(e.s, task.ID, []byte("good"), want)
	want = e.saveSnapshot(e.s, cl.Lease, []byte("b's"), tasks.SnapshotInfo{Work: 2})
	e.requireSnapshot(e.s, task.ID, []byte("b's"), want)

	// Ended: refused.
	e.interrupt(cl)
	require.ErrorIs(t, e.s.SaveSnapshot(e.ctx, cl.Lease, []byte("late"), tasks.SnapshotInfo{}), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.DropSnapshot(e.ctx, cl.Lease), tasks.ErrStaleLease)
	e.requireSnapshot(e.s, task.ID, []byte("b's"), want)
}

// testSnapshotAppend: AppendSnapshot extends the snapshot its attempt
// saved, base bytes long: the read is the whole followed by each part, the
// info the append's, and it is counted; a whole save replaces the parts.
// An append over another size, over a snapshot dropped or saved by
// another attempt, is tasks.ErrSnapshotMoved, one under a lease that does
// not hold is tasks.ErrStaleLease; neither changes what a read returns.
func testSnapshotAppend(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	require.ErrorIs(t, e.s.AppendSnapshot(e.ctx, cl.Lease, 0, []byte("x"), tasks.SnapshotInfo{}), tasks.ErrSnapshotMoved, "no snapshot yet")

	whole := snapshotBlob(1000, 1)
	e.saveSnapshot(e.s, cl.Lease, whole, tasks.SnapshotInfo{Work: 1})
	appendTo := func(l tasks.Lease, have []byte, part []byte, info tasks.SnapshotInfo) ([]byte, tasks.SnapshotInfo) {
		t.Helper()
		e.clock.Advance(time.Second)
		require.NoError(t, e.s.AppendSnapshot(e.ctx, l, len(have), part, info))
		have = append(bytes.Clone(have), part...)
		info.Size, info.TakenAt, info.Owner, info.Attempt = len(have), e.clock.Now(), l.Owner, l.Token
		return have, info
	}
	have, want := appendTo(cl.Lease, whole, snapshotBlob(300, 2), tasks.SnapshotInfo{Work: 2, RunTime: time.Second})
	e.requireSnapshot(e.s, task.ID, have, want)
	have, want = appendTo(cl.Lease, have, snapshotBlob(2<<20, 3), tasks.SnapshotInfo{Work: 3, RunTime: 2 * time.Second, Suspended: true})
	e.requireSnapshot(e.s, task.ID, have, want)
	have, want = appendTo(cl.Lease, have, nil, tasks.SnapshotInfo{Work: 4}) // an empty part
	e.requireSnapshot(e.s, task.ID, have, want)
	require.Equal(t, 4, e.get(task.ID).Snapshots)

	for name, base := range map[string]int{"shorter": len(have) - 1, "longer": len(have) + 1, "none": 0} {
		require.ErrorIs(t, e.s.AppendSnapshot(e.ctx, cl.Lease, base, []byte("bad"), tasks.SnapshotInfo{}), tasks.ErrSnapshotMoved, name)
	}
	other := tasks.Lease{TaskID: task.ID, Owner: "b", Token: cl.Lease.Token}
	require.ErrorIs(t, e.s.AppendSnapshot(e.ctx, other, len(have), []byte("bad"), tasks.SnapshotInfo{}), tasks.ErrStaleLease)
	e.requireSnapshot(e.s, task.ID, have, want)
	require.Equal(t, 4, e.get(task.ID).Snapshots, "refused appends are not counted")

	// A whole save replaces the snapshot and its parts.
	e.clock.Advance(time.Second)
	second := snapshotBlob(900, 4) // a part left from before would lie in the next one's range
	want = e.saveSnapshot(e.s, cl.Lease, second, tasks.SnapshotInfo{Work: 5})
	e.requireSnapshot(e.s, task.ID, second, want)
	have, want = appendTo(cl.Lease, second, snapshotBlob(200, 5), tasks.SnapshotInfo{Work: 6})
	e.requireSnapshot(e.s, task.ID, have, want)

	// Dropped: nothing to extend.
	require.NoError(t, e.s.DropSnapshot(e.ctx, cl.Lease))
	require.ErrorIs(t, e.s.AppendSnapshot(e.ctx, cl.Lease, len(have), []byte("x"), tasks.SnapshotInfo{}), tasks.ErrSnapshotMoved)
	e.requireSnapshot(e.s, task.ID, nil, tasks.SnapshotInfo{})

	// Another attempt's snapshot: the next attempt cannot extend it, and
	// the attempt taken over extends nothing.
	want = e.saveSnapshot(e.s, cl.Lease, whole, tasks.SnapshotInfo{Work: 7})
	have = whole
	e.clock.Advance(lease + time.Second)
	next := e.claimOne("b", task.ID)
	require.ErrorIs(t, e.s.AppendSnapshot(e.ctx, next.Lease, len(have), []byte("x"), tasks.SnapshotInfo{}), tasks.ErrSnapshotMoved)
	require.ErrorIs(t, e.s.AppendSnapshot(e.ctx, cl.Lease, len(have), []byte("late"), tasks.SnapshotInfo{}), tasks.ErrStaleLease)
	e.requireSnapshot(e.s, task.ID, have, want)
	e.clock.Advance(time.Second)
	e.saveSnapshot(e.s, next.Lease, second, tasks.SnapshotInfo{Work: 8})
	have, want = appendTo(next.Lease, second, snapshotBlob(10, 6), tasks.SnapshotInfo{Work: 9})
	e.requireSnapshot(e.s, task.ID, have, want)
	e.interrupt(next)
	e.requireSnapshot(e.s, task.ID, have, want)
}

// testSnapshotDropped: a task's snapshot is dropped when the task ends,
// whatever ends it (Complete to succeeded, dead or cancelled, a requeue
// that uses up the attempts, Cancel of a queued task, a Release or a bulk
// cancel of a task whose cancellation was requested), when a checkpoint is
// saved, and with the task (Delete, a bulk delete); an interrupted attempt
// and a release keep it, and Retry starts without one. The count stays.
func testSnapshotDropped(t *testing.T, e *env) {
	// withSnapshot submits a task (MaxAttempts 1), claims it and saves a
	// snapshot under its lease.
	withSnapshot := func() tasks.Claimed {
		t.Helper()
		task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
		cl := e.claimOne("a", task.ID)
		e.saveSnapshot(e.s, cl.Lease, []byte("snap"), tasks.SnapshotInfo{Work: 5})
		return cl
	}
	// queuedWithSnapshot is withSnapshot's task, its attempt interrupted:
	// queued, ready now, or in an hour when later (no claim takes it).
	queuedWithSnapshot := func(later bool) int64 {
		t.Helper()
		cl := withSnapshot()
		c := tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued, Attempt: tasks.Attempt{Outcome: "interrupted"}}
		if later {
			c.RunAt = e.clock.Now().Add(time.Hour)
		}
		require.NoError(t, e.complete(c))
		_, _, err := e.s.Snapshot(e.ctx, cl.Task.ID)
		require.NoError(t, err)
		require.NotNil(t, e.get(cl.Task.ID).Snapshot, "an interrupted attempt keeps the snapshot")
		return cl.Task.ID
	}
	requireDropped := func(id int64, state tasks.State, what string) {
		t.Helper()
		got := e.get(id)
		require.Equal(t, state, got.State, what)
		require.Nil(t, got.Snapshot, what)
		require.Equal(t, 1, got.Snapshots, "%s: the count stays", what)
		blob, _, err := e.s.Snapshot(e.ctx, id)
		require.NoError(t, err)
		require.Nil(t, blob, what)
	}

	for _, end := range []struct {
		what        string
		state, want tasks.State
		counted     bool
	}{
		{"succeeded", tasks.StateSucceeded, tasks.StateSucceeded, false},
		{"dead", tasks.StateDead, tasks.StateDead, false},
		{"cancelled", tasks.StateCancelled, tasks.StateCancelled, false},
		{"requeued with its attempts used up", tasks.StateQueued, tasks.StateDead, true},
	} {
		cl := withSnapshot()
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: end.state,
			Attempt: tasks.Attempt{Outcome: "x", Counted: end.counted}}))
		requireDropped(cl.Task.ID, end.want, end.what)
	}

	// Cancel of a queued task.
	id := queuedWithSnapshot(false)
	cancelled, err := e.s.Cancel(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, tasks.StateCancelled, cancelled.State)
	require.Nil(t, cancelled.Snapshot, "the cancelled task Cancel returns")
	requireDropped(id, tasks.StateCancelled, "Cancel of a queued task")

	// A claim released keeps it; released with its cancellation
	// requested, it ends cancelled, without it.
	id = queuedWithSnapshot(false)
	cl := e.claimOne("b", id)
	require.NotNil(t, cl.Task.Snapshot)
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl.Lease}))
	require.NotNil(t, e.get(id).Snapshot, "a release keeps the snapshot")
	cl = e.claimOne("b", id)
	_, err = e.s.Cancel(e.ctx, id)
	require.NoError(t, err)
	require.NotNil(t, e.get(id).Snapshot, "cancellation requested: the task still runs")
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl.Lease}))
	requireDropped(id, tasks.StateCancelled, "a release of a task whose cancellation was requested")

	// Retry of a dead task starts without a snapshot.
	cl = withSnapshot()
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead}))
	retried, err := e.s.Retry(e.ctx, cl.Task.ID)
	require.NoError(t, err)
	require.Nil(t, retried.Snapshot)
	requireDropped(cl.Task.ID, tasks.StateQueued, "retried")
	require.Nil(t, e.claimOne("c", cl.Task.ID).Task.Snapshot)

	// A checkpoint saved after the snapshot wins: the snapshot is dropped.
	// One saved after the checkpoint is kept next to it.
	cl = withSnapshot()
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("cp")))
	requireDropped(cl.Task.ID, tasks.StateRunning, "a checkpoint saved")
	want := e.saveSnapshot(e.s, cl.Lease, []byte("newer"), tasks.SnapshotInfo{Work: 6})
	e.requireSnapshot(e.s, cl.Task.ID, []byte("newer"), want)
	cp, err := e.s.Checkpoint(e.ctx, cl.Task.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("cp"), cp)
	require.Equal(t, 2, e.get(cl.Task.ID).Snapshots)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	blob, _, err := e.s.Snapshot(e.ctx, cl.Task.ID)
	require.NoError(t, err)
	require.Nil(t, blob)

	// Deleted with its task.
	id = queuedWithSnapshot(true)
	require.NoError(t, e.s.Delete(e.ctx, id))
	_, _, err = e.s.Snapshot(e.ctx, id)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	a, b := queuedWithSnapshot(true), queuedWithSnapshot(true)
	cl = withSnapshot()
	_, err = e.s.Cancel(e.ctx, cl.Task.ID) // requested: it runs on
	require.NoError(t, err)
	n, err := e.s.ActBatch(e.ctx, tasks.ActionCancel, []int64{a, cl.Task.ID})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	requireDropped(a, tasks.StateCancelled, "bulk cancel of a queued task")
	require.NotNil(t, e.get(cl.Task.ID).Snapshot, "bulk cancel of a running task: it runs on")
	n, err = e.s.ActBatch(e.ctx, tasks.ActionDelete, []int64{b})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, _, err = e.s.Snapshot(e.ctx, b)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateCancelled}))
	requireDropped(cl.Task.ID, tasks.StateCancelled, "a running task cancelled")
}

// testSnapshotPrune: Prune deletes the ended tasks, and nothing of them is
// left (Snapshot: ErrNotFound); a queued task's snapshot stays.
func testSnapshotPrune(t *testing.T, e *env) {
	ended := e.submit(e.spec())
	cl := e.claimOne("a", ended.ID)
	e.saveSnapshot(e.s, cl.Lease, []byte("old"), tasks.SnapshotInfo{})
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	kept := e.submit(e.spec())
	cl = e.claimOne("a", kept.ID)
	want := e.saveSnapshot(e.s, cl.Lease, []byte("kept"), tasks.SnapshotInfo{Work: 3})
	e.interrupt(cl)

	e.clock.Advance(time.Hour)
	n, err := e.s.Prune(e.ctx, e.clock.Now())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, _, err = e.s.Snapshot(e.ctx, ended.ID)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	e.requireSnapshot(e.s, kept.ID, []byte("kept"), want)
}

// testLostStreak: an attempt whose lease expires is taken over, recorded
// "lost" and not counted, and grows its task's lost streak; a snapshot, a
// checkpoint or a completion ends the streak; at ClaimRequest.LostLimit
// the task is dead instead of claimed, its snapshot dropped.
func testLostStreak(t *testing.T, e *env) {
	claim := func(owner string) []tasks.Claimed {
		t.Helper()
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: owner, Max: 10, Lease: lease, LostLimit: 2})
		require.NoError(t, err)
		return cl
	}
	expire := func() { e.clock.Advance(lease + time.Second) }
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	cl := claim("a")
	require.Len(t, cl, 1)
	require.Zero(t, cl[0].Task.LostStreak)
	want := e.saveSnapshot(e.s, cl[0].Lease, []byte("a's"), tasks.SnapshotInfo{Work: 1})

	// Lost once: taken over with the snapshot, not counted.
	expire()
	cl = claim("b")
	require.Len(t, cl, 1)
	require.Equal(t, 1, cl[0].Task.LostStreak)
	require.Zero(t, cl[0].Task.Failures)
	requireInfo(t, want, cl[0].Task.Snapshot, "taken over")
	// A snapshot ends the streak.
	want = e.saveSnapshot(e.s, cl[0].Lease, []byte("b's"), tasks.SnapshotInfo{Work: 2})
	require.Zero(t, e.get(task.ID).LostStreak, "a snapshot ends the streak")

	// Lost again: 1 (not 2), claimed.
	expire()
	cl = claim("c")
	require.Len(t, cl, 1)
	require.Equal(t, 1, cl[0].Task.LostStreak)
	requireInfo(t, want, cl[0].Task.Snapshot, "taken over again")
	// Lost twice in a row without progress: dead, not claimed, its
	// snapshot dropped.
	expire()
	require.Empty(t, claim("d"))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Equal(t, 2, got.LostStreak)
	require.Zero(t, got.Failures)
	require.Equal(t, 2, got.Snapshots)
	require.Nil(t, got.Snapshot)
	require.Contains(t, got.LastError, tasks.LostLimitReason(2))
	blob, _, err := e.s.Snapshot(e.ctx, task.ID)
	require.NoError(t, err)
	require.Nil(t, blob)
	as := e.attempts(task.ID)
	require.Len(t, as, 3)
	for i, a := range as {
		require.Equal(t, "lost", a.Outcome, "attempt %d", i+1)
		require.False(t, a.Counted, "attempt %d", i+1)
	}
	require.NotContains(t, as[1].Reason, "in a row")
	require.Contains(t, as[2].Reason, tasks.LostLimitReason(2))

	// A checkpoint ends the streak, and so does an attempt that ends
	// through Complete (an interrupted one too).
	for _, progress := range []string{"checkpoint", "interrupted"} {
		task := e.submit(e.spec())
		require.Len(t, claim("a"), 1)
		expire()
		cl := claim("b")
		require.Len(t, cl, 1)
		require.Equal(t, 1, cl[0].Task.LostStreak)
		if progress == "checkpoint" {
			require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl[0].Lease, []byte("cp")))
		} else {
			e.interrupt(cl[0])
		}
		require.Zero(t, e.get(task.ID).LostStreak, progress)
		if progress == "interrupted" {
			cl = claim("b")
			require.Len(t, cl, 1)
		}
		expire()
		cl = claim("c")
		require.Len(t, cl, 1, "%s: lost once more, not twice in a row", progress)
		require.Equal(t, 1, cl[0].Task.LostStreak)
		require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded}))
		require.Zero(t, e.get(task.ID).LostStreak)
	}
}

// testRecoverLostStreak: a recovered attempt (RecoverRunning, and
// tasks.OwnRecoverer's RecoverOwn where the store has it) grows its task's lost streak as a takeover does:
// kept with its snapshot below the limit, dead at the limit (lostLimit),
// its snapshot dropped.
func testRecoverLostStreak(t *testing.T, e *env) {
	var recovers []func(owner string) (int, error)
	if r, ok := e.s.(tasks.OwnRecoverer); ok {
		recovers = append(recovers, func(owner string) (int, error) { return r.RecoverOwn(e.ctx, owner, 2) })
	}
	recovers = append(recovers, func(string) (int, error) { return e.s.RecoverRunning(e.ctx, 2) })
	for i, rec := range recovers {
		e.requireLostAttempts(int64(2*i), "before recovery %d", i+1)
		task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
		cl := e.claimOne("runner-a", task.ID)
		want := e.saveSnapshot(e.s, cl.Lease, []byte("snap"), tasks.SnapshotInfo{Work: 9})
		n, err := rec("runner-a")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got := e.get(task.ID)
		require.Equal(t, tasks.StateQueued, got.State)
		require.Equal(t, 1, got.LostStreak)
		require.Zero(t, got.Failures)
		e.requireSnapshot(e.s, task.ID, []byte("snap"), want)

		cl = e.claimOne("runner-a", task.ID)
		requireInfo(t, want, cl.Task.Snapshot, "recovered")
		n, err = rec("runner-a")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got = e.get(task.ID)
		require.Equal(t, tasks.StateDead, got.State, "lost twice in a row (lostLimit 2)")
		require.Equal(t, 2, got.LostStreak)
		require.Zero(t, got.Failures)
		require.False(t, got.FinishedAt.IsZero())
		require.Contains(t, got.LastError, tasks.LostLimitReason(2))
		e.requireSnapshot(e.s, task.ID, nil, tasks.SnapshotInfo{})
		as := e.attempts(task.ID)
		require.Len(t, as, 2)
		for _, a := range as {
			require.Equal(t, "lost", a.Outcome)
			require.False(t, a.Counted)
		}
		require.NotContains(t, as[0].Reason, "in a row")
		require.Contains(t, as[1].Reason, tasks.LostLimitReason(2))
		require.Empty(t, e.claim("runner-b", 10))
		e.requireLostAttempts(int64(2*i+2), "a streak of two, the second making the task dead")
	}
}

// resumeMarker is a store that records the snapshot a running attempt
// resumed from (MarkResumed, which tasks/sqlite and tasks/postgres have:
// the pool calls it as an attempt resumes).
type resumeMarker interface {
	MarkResumed(ctx context.Context, lease tasks.Lease, from *tasks.SnapshotInfo) error
}

// testLostResumed: an attempt marked as resumed from its task's snapshot
// (MarkResumed, fenced by its lease) and then lost, taken over or
// recovered, is recorded resumed from it; the next attempt's claim does
// not inherit it, and a mark of nil takes it back.
func testLostResumed(t *testing.T, e *env) {
	m := capability[resumeMarker](t, e)
	claim := func(owner string, id int64) tasks.Claimed {
		t.Helper()
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: owner, Max: 1, Lease: lease, LostLimit: 10})
		require.NoError(t, err)
		require.Len(t, cl, 1)
		require.Equal(t, id, cl[0].Task.ID)
		return cl[0]
	}
	loses := map[string]func(owner string){
		"takeover": func(string) { e.clock.Advance(lease + time.Second) }, // reaped by the next claim
		"RecoverRunning": func(string) {
			_, err := e.s.RecoverRunning(e.ctx, 10)
			require.NoError(t, err)
		},
	}
	if r, ok := e.s.(tasks.OwnRecoverer); ok {
		loses["RecoverOwn"] = func(owner string) {
			_, err := r.RecoverOwn(e.ctx, owner, 10)
			require.NoError(t, err)
		}
	}
	for way, lose := range loses {
		task := e.submit(e.spec())
		cl := claim("a", task.ID)
		want := e.saveSnapshot(e.s, cl.Lease, []byte("a's"), tasks.SnapshotInfo{Work: 3})
		e.interrupt(cl)

		// Attempt 2 resumes from attempt 1's snapshot, and is lost.
		cl = claim("b", task.ID)
		requireInfo(t, want, cl.Task.Snapshot, way+": claimed")
		stale := cl.Lease
		stale.Token--
		require.ErrorIs(t, m.MarkResumed(e.ctx, stale, cl.Task.Snapshot), tasks.ErrStaleLease, way)
		require.NoError(t, m.MarkResumed(e.ctx, cl.Lease, cl.Task.Snapshot), way)
		lose("b")

		// Attempt 3 does not resume (the claim leaves no mark), and is lost.
		cl = claim("c", task.ID)
		lose("c")
		// Attempt 4 marks, takes it back (its resume failed), and is lost.
		cl = claim("d", task.ID)
		require.NoError(t, m.MarkResumed(e.ctx, cl.Lease, cl.Task.Snapshot), way)
		require.NoError(t, m.MarkResumed(e.ctx, cl.Lease, nil), way)
		lose("d")
		if way == "takeover" {
			cl = claim("e", task.ID)
		}

		as := e.attempts(task.ID)
		require.Len(t, as, 4, way)
		require.Equal(t, "interrupted", as[0].Outcome, way)
		for i, a := range as[1:] {
			require.Equal(t, "lost", a.Outcome, "%s: attempt %d", way, i+2)
		}
		require.True(t, as[1].Resumed, way)
		requireInfo(t, want, as[1].ResumedFrom, way+": attempt 2, lost")
		for _, a := range as[2:] {
			require.False(t, a.Resumed, "%s: attempt %d", way, a.Number)
			require.Nil(t, a.ResumedFrom, "%s: attempt %d", way, a.Number)
		}
		if way != "takeover" {
			cl = claim("e", task.ID)
		}
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	}
}
