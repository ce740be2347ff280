package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/fsutil"
	"github.com/stint-run/stint/tasks"
)

// snapFixture is a store with a module, for the snapshot files' tests.
type snapFixture struct {
	t      *testing.T
	ctx    context.Context
	path   string
	s      *Store
	module string
}

func newSnapFixture(t *testing.T) *snapFixture {
	t.Helper()
	f := &snapFixture{t: t, ctx: t.Context(), path: filepath.Join(t.TempDir(), "stint.db")}
	f.open()
	var err error
	f.module, err = f.s.PutModule(f.ctx, []byte("\x00asm\x01\x00\x00\x00"))
	require.NoError(t, err)
	return f
}

// open opens the store (again), closing it when the test ends.
func (f *snapFixture) open() {
	f.t.Helper()
	s, err := Open(f.ctx, f.path, Options{})
	require.NoError(f.t, err)
	f.t.Cleanup(func() { require.NoError(f.t, s.Close()) })
	f.s = s
}

// files lists the snapshot directory's entries, sorted (none when it does
// not exist).
func (f *snapFixture) files() []string {
	f.t.Helper()
	ents, err := os.ReadDir(SnapshotDir(f.path))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(f.t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// age sets the modification time of the snapshot directory's file name
// to d ago.
func (f *snapFixture) age(name string, d time.Duration) {
	f.t.Helper()
	at := time.Now().Add(-d)
	require.NoError(f.t, os.Chtimes(filepath.Join(SnapshotDir(f.path), name), at, at))
}

// running submits a task and claims it.
func (f *snapFixture) running() tasks.Claimed {
	f.t.Helper()
	task, _, err := f.s.Submit(f.ctx, tasks.Spec{Module: f.module})
	require.NoError(f.t, err)
	cl, err := f.s.Claim(f.ctx, tasks.ClaimRequest{Owner: "me", Max: 1, Lease: time.Hour})
	require.NoError(f.t, err)
	require.Len(f.t, cl, 1)
	require.Equal(f.t, task.ID, cl[0].Task.ID)
	return cl[0]
}

// runningWith is running, with blob saved as the attempt's snapshot (its
// SnapshotInfo zero).
func (f *snapFixture) runningWith(blob []byte) tasks.Claimed {
	f.t.Helper()
	c := f.running()
	require.NoError(f.t, f.s.SaveSnapshot(f.ctx, c.Lease, blob, tasks.SnapshotInfo{}))
	return c
}

// requireSnapshot checks that task id's snapshot is blob.
func (f *snapFixture) requireSnapshot(id int64, blob []byte) {
	f.t.Helper()
	got, info, err := f.s.Snapshot(f.ctx, id)
	require.NoError(f.t, err)
	require.True(f.t, bytes.Equal(blob, got), "task %d: the snapshot's bytes (%d expected, %d read)", id, len(blob), len(got))
	require.Equal(f.t, len(blob), info.Size)
}

// rowFile is the file the snapshot row of task id names ("": none).
func (f *snapFixture) rowFile(id int64) string {
	f.t.Helper()
	var file sql.NullString
	err := f.s.r.QueryRowContext(f.ctx, `SELECT file FROM snapshots WHERE task_id = ?`, id).Scan(&file)
	if err == sql.ErrNoRows {
		return ""
	}
	require.NoError(f.t, err)
	return file.String
}

// TestSnapshotFiles: each snapshot is a file of the snapshot directory
// (private) that its row names; a newer one replaces the file, a save
// under a stale lease leaves none, the task's end leaves one that the
// sweep deletes once it is a minute old, and a missing or short file is
// an error of Snapshot.
func TestSnapshotFiles(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	ctx := f.ctx
	require.Empty(t, f.files(), "no directory before the first snapshot")

	c := f.running()
	one, two := bytes.Repeat([]byte("1"), 10_000), bytes.Repeat([]byte("2"), 20_000)
	require.NoError(t, f.s.SaveSnapshot(ctx, c.Lease, one, tasks.SnapshotInfo{Work: 1}))
	files := f.files()
	require.Len(t, files, 1)
	require.Equal(t, files[0], f.rowFile(c.Task.ID))
	f.requireSnapshot(c.Task.ID, one)
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(SnapshotDir(f.path))
		require.NoError(t, err)
		require.Equal(t, fsutil.PrivateDirMode, fi.Mode().Perm())
		fi, err = os.Stat(filepath.Join(SnapshotDir(f.path), files[0]))
		require.NoError(t, err)
		require.Equal(t, fsutil.PrivateFileMode, fi.Mode().Perm())
	}

	// Two snapshots of one task: exactly one file remains, the newer.
	require.NoError(t, f.s.SaveSnapshot(ctx, c.Lease, two, tasks.SnapshotInfo{Work: 2}))
	files = f.files()
	require.Len(t, files, 1)
	require.Equal(t, files[0], f.rowFile(c.Task.ID))
	f.requireSnapshot(c.Task.ID, two)

	// A stale lease leaves no file, and the snapshot as it was.
	stale := c.Lease
	stale.Token++
	err := f.s.SaveSnapshot(ctx, stale, one, tasks.SnapshotInfo{})
	require.ErrorIs(t, err, tasks.ErrStaleLease)
	require.Equal(t, files, f.files())
	f.requireSnapshot(c.Task.ID, two)

	// A short file, then a missing one: errors that say so.
	path := filepath.Join(SnapshotDir(f.path), files[0])
	require.NoError(t, os.Truncate(path, 100))
	_, _, err = f.s.Snapshot(ctx, c.Task.ID)
	require.ErrorContains(t, err, "holds 100 bytes where its row says 20000")
	require.NoError(t, os.Remove(path))
	_, _, err = f.s.Snapshot(ctx, c.Task.ID)
	require.ErrorContains(t, err, "is missing")
	require.ErrorIs(t, err, os.ErrNotExist)

	// A task that succeeds: its row goes with its end, its file with the
	// sweep once it is a minute old (not before).
	require.NoError(t, f.s.SaveSnapshot(ctx, c.Lease, one, tasks.SnapshotInfo{}))
	files = f.files()
	require.Len(t, files, 1)
	errs, err := f.s.Complete(ctx, []tasks.Completion{{Lease: c.Lease, State: tasks.StateSucceeded}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Empty(t, f.rowFile(c.Task.ID))
	n, err := f.s.sweepSnapshots(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a file younger than a minute may be a save's before its commit")
	require.Equal(t, files, f.files())
	f.age(files[0], 2*time.Minute)
	n, err = f.s.sweepSnapshots(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, f.files())

	// The background sweep, when due, does the same.
	c = f.running()
	require.NoError(t, f.s.SaveSnapshot(ctx, c.Lease, one, tasks.SnapshotInfo{}))
	files = f.files()
	require.Len(t, files, 1)
	errs, err = f.s.Complete(ctx, []tasks.Completion{{Lease: c.Lease, State: tasks.StateDead}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	f.age(files[0], 2*time.Minute)
	f.s.snaps.last.Store(0)
	f.s.sweepSoon()
	f.s.snaps.wg.Wait()
	require.Empty(t, f.files())
}

// TestSnapshotFilesDropped: DropSnapshot, SaveCheckpoint, Delete and bulk
// delete delete the file of the snapshot they drop at once.
func TestSnapshotFilesDropped(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	ctx := f.ctx
	blob := []byte("snapshot")

	c := f.runningWith(blob)
	require.Len(t, f.files(), 1)
	require.NoError(t, f.s.DropSnapshot(ctx, c.Lease))
	require.Empty(t, f.files())
	f.requireSnapshot(c.Task.ID, nil)

	require.NoError(t, f.s.SaveSnapshot(ctx, c.Lease, blob, tasks.SnapshotInfo{}))
	require.Len(t, f.files(), 1)
	require.NoError(t, f.s.SaveCheckpoint(ctx, c.Lease, []byte("cp")))
	require.Empty(t, f.files())

	// Interrupted tasks keep their snapshots; deleting them takes the files.
	require.NoError(t, f.s.SaveSnapshot(ctx, c.Lease, blob, tasks.SnapshotInfo{}))
	d := f.running()
	require.NoError(t, f.s.SaveSnapshot(ctx, d.Lease, blob, tasks.SnapshotInfo{}))
	require.Len(t, f.files(), 2)
	for _, cl := range []tasks.Claimed{c, d} {
		errs, err := f.s.Complete(ctx, []tasks.Completion{{Lease: cl.Lease, State: tasks.StateQueued}})
		require.NoError(t, err)
		require.NoError(t, errs[0])
	}
	require.Len(t, f.files(), 2)
	require.NoError(t, f.s.Delete(ctx, c.Task.ID))
	require.Len(t, f.files(), 1)
	n, err := f.s.ActBatch(ctx, tasks.ActionDelete, []int64{d.Task.ID})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, f.files())
}

// TestSnapshotFilesSweptAtOpen: Open deletes the snapshot files no row
// names that are over a minute old (a crash's orphans), and leaves the
// young ones, the named ones whatever their age, and other files.
func TestSnapshotFilesSweptAtOpen(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	blob := []byte("kept")
	c := f.runningWith(blob)
	named := f.files()[0]
	f.age(named, time.Hour)
	dir := SnapshotDir(f.path)
	for _, name := range []string{"7-1-00000000000000aa.snap", ".7-1-00000000000000bb.snap.tmp0011223344556677",
		"7-1-00000000000000cc.snap", "notes.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("orphan"), 0o600))
	}
	f.age("7-1-00000000000000aa.snap", 2*time.Minute)
	f.age(".7-1-00000000000000bb.snap.tmp0011223344556677", 2*time.Minute)
	f.age("notes.txt", time.Hour)
	require.NoError(t, f.s.Close())

	f.open()
	want := []string{named, "7-1-00000000000000cc.snap", "notes.txt"}
	slices.Sort(want)
	require.Equal(t, want, f.files())
	f.requireSnapshot(c.Task.ID, blob)
}

// TestSnapshotFileSweptBeforeCommit: a save whose file a sweep deleted
// while it waited for the write turn fails, and no row names the file.
func TestSnapshotFileSweptBeforeCommit(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	ctx := f.ctx
	first := []byte("first")
	c := f.runningWith(first)
	old := f.files()

	f.s.wturn <- struct{}{} // hold the write turn
	done := make(chan error, 1)
	go func() { done <- f.s.SaveSnapshot(ctx, c.Lease, []byte("second"), tasks.SnapshotInfo{}) }()
	var added string
	require.Eventually(t, func() bool {
		for _, name := range f.files() {
			if !slices.Contains(old, name) && filepath.Ext(name) == snapshotExt {
				added = name
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, os.Remove(filepath.Join(SnapshotDir(f.path), added))) // as a sweep would
	<-f.s.wturn
	err := <-done
	require.ErrorContains(t, err, "its file is gone before the commit")
	require.Equal(t, old, f.files())
	f.requireSnapshot(c.Task.ID, first)
}

// TestSnapshotFilesConcurrentReads: reads of a snapshot that its attempt
// keeps replacing never fail (a file replaced between the row's read and
// its own is looked up again).
func TestSnapshotFilesConcurrentReads(t *testing.T) {
	t.Parallel()
	f := newSnapFixture(t)
	ctx := f.ctx
	blob := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 4096+i) }
	c := f.runningWith(blob(0)) // Work 0
	const saves = 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, info, err := f.s.Snapshot(ctx, c.Task.ID)
				if !assertNoError(t, err) {
					return
				}
				if !bytes.Equal(blob(int(info.Work)), got) {
					t.Errorf("snapshot %d: wrong bytes", info.Work)
					return
				}
			}
		})
	}
	for i := 1; i <= saves; i++ {
		require.NoError(t, f.s.SaveSnapshot(ctx, c.Lease, blob(i), tasks.SnapshotInfo{Work: int64(i)}))
	}
	close(stop)
	wg.Wait()
	require.Len(t, f.files(), 1)
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("snapshot: %v", err)
		return false
	}
	return true
}

// TestMigrateSnapshotBlobs: a store of version 8 with a snapshot in its
// row opens at version 9 with that snapshot readable; the next save
// replaces it with a file.
func TestMigrateSnapshotBlobs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	writeVersion(t, path, 8)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	old := bytes.Repeat([]byte("v8"), 50_000)
	_, err = db.Exec(`INSERT INTO snapshots (task_id, size, taken_at, owner, attempt, work, run_time, suspended, blob)
		VALUES (2, ?, 0, 'old', 1, 7, 0, 1, ?)`, len(old), old)
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE tasks SET snapshots = 1 WHERE id = 2`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s := openMigrated(t, path, Options{})
	ctx := t.Context()
	got, info, err := s.Snapshot(ctx, 2)
	require.NoError(t, err)
	require.True(t, bytes.Equal(old, got))
	require.Equal(t, tasks.SnapshotInfo{Size: len(old), TakenAt: info.TakenAt, Owner: "old", Attempt: 1, Work: 7, Suspended: true}, info)
	task, err := s.Get(ctx, 2)
	require.NoError(t, err)
	require.NotNil(t, task.Snapshot)
	require.Equal(t, int64(7), task.Snapshot.Work)

	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "new", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, int64(2), cl[0].Task.ID)
	require.NoError(t, s.SaveSnapshot(ctx, cl[0].Lease, []byte("new"), tasks.SnapshotInfo{}))
	got, _, err = s.Snapshot(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, []byte("new"), got)
	var blobs int
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM snapshots WHERE blob IS NOT NULL`).Scan(&blobs))
	require.Zero(t, blobs)
	// A row holds a file or a blob, never both nor neither.
	require.NoError(t, s.write(ctx, "test", func(ctx context.Context) error {
		_, err := s.wc.ExecContext(ctx, `UPDATE snapshots SET blob = X'00' WHERE task_id = 2`)
		require.ErrorContains(t, err, "CHECK constraint failed")
		return nil
	}))
}
