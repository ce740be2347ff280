package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/fsutil"
)

// Snapshot files. A task's latest snapshot (up to hundreds of MB) is a
// file of its own in the store's snapshot directory, SnapshotDir (for
// stint.db, stint.db-snapshots/, created private when the first snapshot
// is saved), named <task>-<attempt>-<16 hex digits>.snap; its row in
// table snapshots describes it and names the file (schema version 9; a
// row of version 8 holds its blob instead, read as before). Writing the
// blob into the database held the store's one write transaction for the
// whole write (2.8 s for 252 MB, every claim, completion and heartbeat
// waiting behind it), wrote it twice (WAL, then checkpoint) and grew the
// database by it. The rules that keep rows and files in step:
//
//   - A row only ever names a durable file. SaveSnapshot writes its new
//     file whole and fsyncs it and the directory (fsutil.WriteFile: a
//     temporary ".<name>.tmp<hex>", renamed) before it takes the write
//     turn, so that the big write runs outside any transaction; then, in
//     a short transaction, it checks the lease, checks that its file is
//     still there and points the task's row at it. After the commit it
//     deletes the task's previous file. When the lease does not hold or
//     the transaction fails, it deletes the new file (unless a row names
//     it: a commit that reported an error yet took effect).
//   - A crash, at worst, leaves a file that no row names: an orphan. So
//     does every way a row goes without its file being deleted at once:
//     the trigger that drops a task's snapshot when the task ends
//     (whatever statement ends it), Prune, the foreign key's cascade.
//     DropSnapshot, SaveCheckpoint and Delete (and bulk delete) delete the
//     files of the rows they delete, after their commit.
//   - The sweep deletes the orphans: the snapshot files of the directory
//     that no row names and that were last modified over snapshotGrace (a
//     minute) ago. A younger file that no row names is left alone: it may
//     be a SaveSnapshot's between its write and its commit. The sweep
//     decides and deletes inside a write transaction, and SaveSnapshot
//     checks that its file exists inside its own, so that a save that
//     waited over a minute for the store fails, rather than commit a row
//     naming a file that a sweep (of any process) deleted. The sweep runs
//     at Open, after RecoverRunning and after Prune, and in the
//     background at most once every snapshotSweepEvery (a minute) after a
//     Claim or a Complete. Files of other names are never touched.
//   - Snapshot reads the row, then its file, and checks the file's size
//     against the row's: a missing or short file is an error that says
//     so. A file that a newer save replaced between the two reads is
//     looked up again from the row.

// SnapshotDir is the directory that holds the snapshot files of the store
// at path: path + "-snapshots" (stint.db-snapshots beside stint.db). Copy
// it with the database: the database's snapshot rows name its files.
func SnapshotDir(path string) string { return path + "-snapshots" }

const (
	// snapshotGrace is how old a snapshot file that no row names must be
	// for the sweep to delete it.
	snapshotGrace = time.Minute
	// snapshotSweepEvery is the least time between two background sweeps.
	snapshotSweepEvery = time.Minute
	// snapshotExt ends the name of every snapshot file.
	snapshotExt = ".snap"
)

// snapFiles is the state of a Store's snapshot directory.
type snapFiles struct {
	dir string

	mu   sync.Mutex
	made bool // the directory exists, its entry synced in its parent

	// last is when the latest sweep started (UnixNano), for the background
	// sweep's interval.
	last atomic.Int64

	bg      sync.Mutex // guards running, closed and wg.Add
	running bool
	closed  bool
	wg      sync.WaitGroup
	ctx     context.Context // ended at Close
	cancel  context.CancelFunc
}

func newSnapFiles(storePath string) *snapFiles {
	f := &snapFiles{dir: SnapshotDir(storePath)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.last.Store(time.Now().UnixNano())
	return f
}

// isSnapshotFile reports whether name is the name of a snapshot file or
// of the temporary file fsutil.WriteFile writes it through.
func isSnapshotFile(name string) bool {
	return strings.HasSuffix(name, snapshotExt) || strings.Contains(name, snapshotExt+".tmp")
}

// snapshotFileName is a new file name for a snapshot of the attempt of
// taskID: unique, so that a save never touches the file of another.
func snapshotFileName(taskID int64, attempt int) string {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("%d-%d-%s%s", taskID, attempt, hex.EncodeToString(rnd[:]), snapshotExt)
}

// path is the path of the snapshot file name, which must be a plain file
// name of a snapshot (a row naming anything else is refused).
func (f *snapFiles) path(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || !strings.HasSuffix(name, snapshotExt) {
		return "", fmt.Errorf("the snapshot's row names %q, which is not a snapshot file name", name)
	}
	return filepath.Join(f.dir, name), nil
}

// makeDir creates the snapshot directory, private, when missing, and
// syncs its parent so that the directory survives a crash of the machine
// as the files in it do.
func (f *snapFiles) makeDir() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.made {
		return nil
	}
	if _, err := os.Stat(f.dir); errors.Is(err, fs.ErrNotExist) {
		if err := fsutil.MkdirPrivate(f.dir); err != nil {
			return fmt.Errorf("create the snapshot directory: %w", err)
		}
		if err := syncDir(filepath.Dir(f.dir)); err != nil {
			return fmt.Errorf("sync the directory of %s: %w", f.dir, err)
		}
	} else if err != nil {
		return err
	}
	f.made = true
	return nil
}

// write stores blob durably in a new file for the attempt of taskID and
// returns the file's name.
func (f *snapFiles) write(taskID int64, attempt int, blob []byte) (string, error) {
	if err := f.makeDir(); err != nil {
		return "", err
	}
	name := snapshotFileName(taskID, attempt)
	if err := fsutil.WriteFile(filepath.Join(f.dir, name), blob, fsutil.PrivateFileMode, fsutil.Options{}); err != nil {
		return "", err
	}
	return name, nil
}

// writeAt writes blob into the snapshot file name at offset at, cuts off
// what follows it (a failed append's bytes), and syncs the file.
func (f *snapFiles) writeAt(name string, at int64, blob []byte) error {
	path, err := f.path(name)
	if err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fh.WriteAt(blob, at)
	if err == nil {
		err = fh.Truncate(at + int64(len(blob)))
	}
	if err == nil {
		err = fh.Sync()
	}
	return errors.Join(err, fh.Close())
}

// read returns the bytes of the snapshot file name, which its row says
// are size bytes. A missing file is an error wrapping fs.ErrNotExist.
func (f *snapFiles) read(name string, size int64) ([]byte, error) {
	path, err := f.path(name)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("its file %s is missing (deleted by hand, or the snapshot directory not copied "+
			"with the database?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open its file: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat its file: %w", err)
	}
	if fi.Size() < size { // longer: an append not (yet) committed
		return nil, fmt.Errorf("its file %s holds %d bytes where its row says %d: the file is damaged "+
			"(truncated?)", path, fi.Size(), size)
	}
	blob := make([]byte, size)
	if n, err := io.ReadFull(fh, blob); err != nil {
		return nil, fmt.Errorf("its file %s: read %d of its %d bytes: %w", path, n, size, err)
	}
	return blob, nil
}

// removeSnapshotFile deletes the snapshot file name, which no row names
// any more; a failure is logged (the sweep tries again).
func (s *Store) removeSnapshotFile(name string) {
	path, err := s.snaps.path(name)
	if err == nil {
		err = os.Remove(path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot delete a snapshot file no task needs; a later sweep will try again",
			zap.String("file", name), zap.Error(err))
	}
}

// discardSnapshotFile deletes the file of a SaveSnapshot that failed,
// unless a row names it after all (a commit that reported an error but
// took effect), or that cannot be known: the sweep then decides.
func (s *Store) discardSnapshotFile(ctx context.Context, name string) {
	var n int
	err := s.r.QueryRowContext(context.WithoutCancel(ctx), `SELECT count(*) FROM snapshots WHERE file = ?`, name).Scan(&n)
	if err != nil || n > 0 {
		return
	}
	s.removeSnapshotFile(name)
}

// querier runs a query: the read pool or the writer connection.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// namedSnapshotFiles is the set of the files the rows of table snapshots
// name.
func namedSnapshotFiles(ctx context.Context, q querier) (map[string]bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT file FROM snapshots WHERE file IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	named := map[string]bool{}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return nil, err
		}
		named[f] = true
	}
	return named, rows.Err()
}

// sweepSnapshots deletes the orphan snapshot files (see the rules above)
// and returns how many it deleted. It reads the directory and, only when
// some file is old enough, the rows (on the read pool); only when some old
// file is named by no row does it take the write turn, to check again and
// delete.
func (s *Store) sweepSnapshots(ctx context.Context) (int, error) {
	s.snaps.last.Store(time.Now().UnixNano())
	ents, err := os.ReadDir(s.snaps.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: sweep snapshot files: %w", err)
	}
	cutoff := time.Now().Add(-snapshotGrace)
	var old []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !isSnapshotFile(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			old = append(old, e.Name())
		}
	}
	if len(old) == 0 {
		return 0, nil
	}
	named, err := namedSnapshotFiles(ctx, s.r)
	if err != nil {
		return 0, s.dbErr("sweep snapshot files", err)
	}
	var orphans []string
	for _, name := range old {
		if !named[name] {
			orphans = append(orphans, name)
		}
	}
	if len(orphans) == 0 {
		return 0, nil
	}
	deleted := 0
	var failed []error
	err = s.write(ctx, "sweep snapshot files", func(ctx context.Context) error {
		// Under the write lock no save can commit a row naming one of
		// them: check the rows again, then delete.
		named, err := namedSnapshotFiles(ctx, s.wc)
		if err != nil {
			return s.dbErr("sweep snapshot files", err)
		}
		for _, name := range orphans {
			if named[name] {
				continue
			}
			switch err := os.Remove(filepath.Join(s.snaps.dir, name)); {
			case err == nil:
				deleted++
			case !errors.Is(err, fs.ErrNotExist):
				failed = append(failed, err)
			}
		}
		return nil
	})
	if deleted > 0 {
		s.log.Info("deleted snapshot files no task needs", zap.Int("files", deleted), zap.String("dir", s.snaps.dir))
	}
	if err == nil && len(failed) > 0 {
		err = fmt.Errorf("sqlite: sweep snapshot files: %w", errors.Join(failed...))
	}
	return deleted, err
}

// sweepNow sweeps and logs a failure: the sweeps that the store's own
// operations run (Open, RecoverRunning, Prune) do not fail them.
func (s *Store) sweepNow(ctx context.Context) {
	if _, err := s.sweepSnapshots(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("cannot delete the snapshot files no task needs; a later sweep will try again", zap.Error(err))
	}
}

// sweepSoon starts a sweep in the background when none ran for
// snapshotSweepEvery and none is running: the files of the snapshots
// dropped when their tasks ended go within a minute or two. Cheap when
// not due (Claim and Complete call it).
func (s *Store) sweepSoon() {
	f := s.snaps
	if time.Now().UnixNano()-f.last.Load() < int64(snapshotSweepEvery) {
		return
	}
	f.bg.Lock()
	defer f.bg.Unlock()
	if f.closed || f.running {
		return
	}
	f.running = true
	f.last.Store(time.Now().UnixNano())
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		s.sweepNow(f.ctx)
		f.bg.Lock()
		f.running = false
		f.bg.Unlock()
	}()
}

// stopSweeps ends a background sweep, and waits for it, before Close
// closes the database.
func (f *snapFiles) stopSweeps() {
	f.bg.Lock()
	f.closed = true
	f.bg.Unlock()
	f.cancel()
	f.wg.Wait()
}

// syncDir fsyncs the directory dir, so that the entries created in it
// survive a crash. A system or file system that cannot fsync a directory
// (Windows; EINVAL, ENOTSUP) is not an error.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}
