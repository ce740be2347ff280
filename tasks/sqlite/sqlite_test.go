package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
	"github.com/stint-run/stint/tasks/storetest"
)

var wasm = []byte("\x00asm\x01\x00\x00\x00")

// open opens a store at path and closes it when t ends.
func open(t testing.TB, path string, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// rawDB opens the file with database/sql, bypassing the store.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, now func() time.Time) tasks.Store {
		return open(t, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Now: now})
	})
}

// TestConformanceExclusive: the suite again on stores opened as `runner
// serve` opens its store, exclusively: its LockInspector section then
// sees the lock held, by this process.
func TestConformanceExclusive(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, now func() time.Time) tasks.Store {
		return open(t, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Now: now, Exclusive: true})
	})
}

func TestOptions(t *testing.T) {
	t.Parallel()
	o := sqlite.Options{}.WithDefaults()
	require.NotNil(t, o.Now)
	require.NotNil(t, o.Logger)
	require.Equal(t, sqlite.DefaultBusyTimeout, o.BusyTimeout)
	require.NoError(t, o.Validate())
	require.Error(t, sqlite.Options{BusyTimeout: -1}.Validate())
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{BusyTimeout: -1})
	require.Error(t, err)
	_, err = sqlite.Open(t.Context(), "", sqlite.Options{})
	require.Error(t, err)
}

func TestExclusiveLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "stint.db")
	first, err := sqlite.Open(t.Context(), path, sqlite.Options{Exclusive: true})
	require.NoError(t, err)
	require.FileExists(t, path+".lock")

	_, err = sqlite.Open(t.Context(), path, sqlite.Options{Exclusive: true})
	t.Log(err)
	require.ErrorIs(t, err, tasks.ErrLocked)
	require.ErrorContains(t, err, path+".lock")
	require.ErrorContains(t, err, "runner serve")
	require.ErrorContains(t, err, fmt.Sprintf("pid %d", os.Getpid()))

	// A CLI command opens the same file while serve holds it.
	cli := open(t, path, sqlite.Options{})
	h, err := cli.PutModule(t.Context(), wasm)
	require.NoError(t, err)
	task, _, err := cli.Submit(t.Context(), tasks.Spec{Module: h})
	require.NoError(t, err)
	got, err := first.Get(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, task.ID, got.ID)
	cl, err := first.Claim(t.Context(), tasks.ClaimRequest{Owner: "serve", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	_, err = cli.Cancel(t.Context(), task.ID)
	require.NoError(t, err)
	_, cancel, err := first.Heartbeat(t.Context(), []tasks.Lease{cl[0].Lease}, time.Minute)
	require.NoError(t, err)
	require.Len(t, cancel, 1)

	// Close releases the lock; a second Close is harmless.
	require.NoError(t, first.Close())
	require.NoError(t, first.Close())
	second := open(t, path, sqlite.Options{Exclusive: true})
	n, err := second.RecoverRunning(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	db := rawDB(t, path)
	var version int
	require.NoError(t, db.QueryRow(`SELECT max(version) FROM schema_version`).Scan(&version))
	require.Equal(t, sqlite.SchemaVersion, version)

	// Reopening applies nothing.
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	var rows int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&rows))
	require.Equal(t, sqlite.SchemaVersion, rows)

	// A newer database is refused.
	_, err = db.Exec(`INSERT INTO schema_version (version, applied) VALUES (?, 0)`, sqlite.SchemaVersion+1)
	require.NoError(t, err)
	_, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	t.Log(err)
	require.ErrorIs(t, err, sqlite.ErrSchemaTooNew)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "upgrade the runner")
}

func TestNotAStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "other.db")
	db := rawDB(t, path)
	_, err := db.Exec(`CREATE TABLE photos (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	_, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	require.ErrorIs(t, err, sqlite.ErrNotStore)
	require.ErrorContains(t, err, path)
}

func TestCorruptFile(t *testing.T) {
	t.Parallel()
	for name, content := range map[string][]byte{
		"text":            []byte("this is not a database, just some text that is long enough to look like a header\n"),
		"garbage":         bytesOf(8192, 0xA5),
		"truncated magic": []byte("SQLite format"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "stint.db")
			require.NoError(t, os.WriteFile(path, content, 0o600))
			var err error
			require.NotPanics(t, func() { _, err = sqlite.Open(t.Context(), path, sqlite.Options{}) })
			t.Log(err)
			require.Error(t, err)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, "not a SQLite database")
			got, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, content, got, "the file is left as it was")
		})
	}
}

func bytesOf(n int, b byte) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestUnwritable(t *testing.T) {
	t.Parallel()
	t.Run("directory under a regular file", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		path := filepath.Join(file, "data", "stint.db")
		requireOpenFails(t, path, "create its directory")
	})
	t.Run("path is a directory", func(t *testing.T) {
		t.Parallel()
		path := t.TempDir()
		requireOpenFails(t, path, "is a directory")
	})
	t.Run("read-only directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o500))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		if canWrite(dir) {
			t.Skip("running as root (or with CAP_DAC_OVERRIDE): permissions do not stop writes; the sibling subtests cover the error path")
		}
		path := filepath.Join(dir, "stint.db")
		requireOpenFails(t, path, "cannot open the store for writing")
	})
	t.Run("read-only file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "stint.db")
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			_ = os.Chmod(p, 0o400)
		}
		require.NoError(t, os.Chmod(dir, 0o500))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		if canWrite(dir) {
			t.Skip("running as root (or with CAP_DAC_OVERRIDE): permissions do not stop writes")
		}
		requireOpenFails(t, path, "cannot open the store for writing")
	})
}

// requireOpenFails requires that Open of path fails with an error naming
// path and saying what.
func requireOpenFails(t *testing.T, path, what string) {
	t.Helper()
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	t.Log(err)
	require.Error(t, err)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, what)
}

// canWrite reports whether this process can create a file in dir despite
// its mode (true for root).
func canWrite(dir string) bool {
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		return false
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return true
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	clock := storetest.NewClock(storetest.Start)
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{Exclusive: true, Now: clock.Now})
	require.NoError(t, err)
	h, err := s.PutModule(t.Context(), wasm)
	require.NoError(t, err)
	done, _, err := s.Submit(t.Context(), tasks.Spec{Module: h, Args: []string{"a"}, IdempotencyKey: "k"})
	require.NoError(t, err)
	running, _, err := s.Submit(t.Context(), tasks.Spec{Module: h, Input: []byte("in")})
	require.NoError(t, err)
	cl, err := s.Claim(t.Context(), tasks.ClaimRequest{Owner: "old", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	errs, err := s.Complete(t.Context(), []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded, Result: []byte("r")}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	cl, err = s.Claim(t.Context(), tasks.ClaimRequest{Owner: "old", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, s.SaveCheckpoint(t.Context(), cl[0].Lease, []byte("cp")))
	wantDone, err := s.Get(t.Context(), done.ID)
	require.NoError(t, err)
	require.NoError(t, s.Close()) // the "crash": running stays running

	s = open(t, path, sqlite.Options{Exclusive: true, Now: clock.Now})
	got, err := s.Get(t.Context(), done.ID)
	require.NoError(t, err)
	require.Equal(t, wantDone, got)
	m, err := s.Module(t.Context(), h)
	require.NoError(t, err)
	require.Equal(t, wasm, m)
	again, existing, err := s.Submit(t.Context(), tasks.Spec{Module: h, IdempotencyKey: "k"})
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, done.ID, again.ID)
	n, err := s.RecoverRunning(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	cl, err = s.Claim(t.Context(), tasks.ClaimRequest{Owner: "new", Max: 5, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, running.ID, cl[0].Task.ID)
	require.Equal(t, []byte("cp"), cl[0].Checkpoint)
	require.Equal(t, []byte("in"), cl[0].Task.Input)
	as, err := s.Attempts(t.Context(), running.ID)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, "lost", as[0].Outcome)
	// New ids continue after the old ones.
	next, _, err := s.Submit(t.Context(), tasks.Spec{Module: h})
	require.NoError(t, err)
	require.Greater(t, next.ID, running.ID)
}

func TestModuleStoredOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	s := open(t, path, sqlite.Options{})
	for range 3 {
		_, err := s.PutModule(t.Context(), wasm)
		require.NoError(t, err)
	}
	_, err := s.PutModule(t.Context(), nil)
	require.Error(t, err, "an empty module is refused")
	var n int
	require.NoError(t, rawDB(t, path).QueryRow(`SELECT count(*) FROM modules`).Scan(&n))
	require.Equal(t, 1, n)
}

// TestTwoStoresOneFile runs two pools through two Stores on one file (as
// two processes would, without Exclusive): SQLite's locking, not the
// in-process writer pool, serializes them.
func TestTwoStoresOneFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	a := open(t, path, sqlite.Options{})
	b := open(t, path, sqlite.Options{})
	h, err := a.PutModule(t.Context(), wasm)
	require.NoError(t, err)
	const n = 100
	for range n {
		_, _, err := a.Submit(t.Context(), tasks.Spec{Module: h})
		require.NoError(t, err)
	}
	var mu sync.Mutex
	done := map[int64]string{}
	pool := func(s *sqlite.Store, owner string) error {
		for {
			cl, err := s.Claim(t.Context(), tasks.ClaimRequest{Owner: owner, Max: 8, Lease: time.Hour})
			if err != nil {
				return err
			}
			if len(cl) == 0 {
				return nil
			}
			cs := make([]tasks.Completion, len(cl))
			for i, c := range cl {
				cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}
			}
			errs, err := s.Complete(t.Context(), cs)
			if err != nil {
				return err
			}
			mu.Lock()
			for i, err := range errs {
				if err != nil {
					mu.Unlock()
					return err
				}
				id := cs[i].Lease.TaskID
				if prev, ok := done[id]; ok {
					mu.Unlock()
					return fmt.Errorf("task %d completed by %s and %s", id, prev, owner)
				}
				done[id] = owner
			}
			mu.Unlock()
		}
	}
	errc := make(chan error, 2)
	go func() { errc <- pool(a, "a") }()
	go func() { errc <- pool(b, "b") }()
	require.NoError(t, errors.Join(<-errc, <-errc))
	require.Len(t, done, n)
}

// TestPruneInBatches: Prune deletes more tasks than one batch holds,
// leaving the ones that have not ended.
func TestPruneInBatches(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	s := open(t, path, sqlite.Options{})
	ctx := context.Background()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(t, err)
	first, _, err := s.Submit(ctx, tasks.Spec{Module: h, Input: []byte("in")})
	require.NoError(t, err)
	// 1,299 more: every third stays queued, the others ended long ago.
	_, err = rawDB(t, path).Exec(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1299)
		INSERT INTO tasks (module, max_attempts, queue, run_at, state, created_at, updated_at, finished_at)
		SELECT module, 1, queue, 0, CASE WHEN i % 3 = 0 THEN 'queued' ELSE 'succeeded' END, 0, 0,
			CASE WHEN i % 3 = 0 THEN NULL ELSE 1 END
		FROM tasks, n WHERE tasks.id = ?`, first.ID)
	require.NoError(t, err)

	n, err := s.Prune(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1299-433, n)
	left, err := s.List(ctx, tasks.ListFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, left, 434)
	for _, task := range left {
		require.Equal(t, tasks.StateQueued, task.State)
	}
}

// TestLockHolder: the holder of a store's lock is known without taking the
// lock: nobody before a runner opens it exclusively, this process while it
// does, nobody again after.
func TestLockHolder(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("known from /proc/locks, on Linux only")
	}
	path := filepath.Join(t.TempDir(), "stint.db")
	_, held, err := sqlite.LockHolder(path)
	require.NoError(t, err)
	require.False(t, held, "no lock file yet")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{Exclusive: true})
	require.NoError(t, err)
	pid, held, err := sqlite.LockHolder(path)
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, os.Getpid(), pid)
	require.NoError(t, s.Close())
	_, held, err = sqlite.LockHolder(path)
	require.NoError(t, err)
	require.False(t, held, "released")
	// A second exclusive open still works: looking took no lock.
	s, err = sqlite.Open(context.Background(), path, sqlite.Options{Exclusive: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestScheduleCap: a store opened with MaxSchedules holds no more
// (storetest.ScheduleCap).
func TestScheduleCap(t *testing.T) {
	t.Parallel()
	storetest.ScheduleCap(t, open(t, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{MaxSchedules: 3}), 3)
}
