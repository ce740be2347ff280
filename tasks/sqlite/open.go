package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stint-run/stint/internal/fsutil"
	"github.com/stint-run/stint/tasks"
)

// ErrSchemaTooNew is returned (wrapped) by Open for a database whose schema
// was written by a newer Stint than this one.
var ErrSchemaTooNew = errors.New("store schema is newer than this runner")

// ErrNotStore is returned (wrapped) by Open for a SQLite database that holds
// other tables but no Stint schema.
var ErrNotStore = errors.New("not a stint store")

// Store is the SQLite tasks.Store. It is safe for concurrent use. Close it
// when done; it releases the lock taken by Options.Exclusive.
//
// It also has tasks.Store's setters of tenants' and queues' limits
// (SetTenantWeight, SetTenantMaxRunning, SetQueueMaxRunning,
// SetTenantWorkQuota, SetQueueWorkQuota, SetTenantRate, SetQueueRate),
// shared with the other store through a field it embeds: go doc does not
// list them.
type Store struct {
	path string
	sync Sync
	now  func() time.Time
	log  *zap.Logger
	// maxSchedules is Options.MaxSchedules.
	maxSchedules int

	w     *sql.DB       // writer: one connection, held by wc
	wc    *sql.Conn     // the writer connection, for IMMEDIATE transactions
	wturn chan struct{} // holds a token while a write transaction runs on wc
	r     *sql.DB       // readers: query-only connections
	lock  *os.File      // the flock of Options.Exclusive, or nil

	st     stmts
	reaper *reaper
	wake   *waker     // wake-ups to a runner in another process (wake.go)
	snaps  *snapFiles // the snapshot files (snapfiles.go)

	mu sync.Mutex
	// wStmts are the writer's statements whose text depends on a count
	// (queues, rows), prepared when first used (prepared).
	wStmts map[stmtKey]*sql.Stmt

	closeOnce sync.Once
	closeErr  error

	limitSetters // SetTenantWeight and the other limit setters (fair.go)
}

// The store and its optional capabilities (those of SQLite alone).
var (
	_ tasks.Store             = (*Store)(nil)
	_ tasks.ClaimingSubmitter = (*Store)(nil)
	_ tasks.LockInspector     = (*Store)(nil)
)

// Open opens (creating it if missing, with its directory) the store in the
// SQLite file at path, and brings its schema up to SchemaVersion. The
// files and directories it creates are the process user's alone (FileMode,
// DirMode, whatever the umask); it logs a warning when existing store
// files are open to other users. It then deletes the snapshot files that
// no task needs (a crash's orphans, snapfiles.go).
//
// It fails with an error wrapping tasks.ErrLocked when opts.Exclusive is set
// and another process holds path+".lock"; ErrSchemaTooNew for a database
// from a newer Stint; ErrNotStore for another application's database; and
// with a clear error naming the path for a file that is not a SQLite
// database, or that the process cannot write.
func Open(ctx context.Context, path string, opts Options) (_ *Store, err error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("sqlite: open: empty store path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("sqlite: open %s: is a directory, not a store file", abs)
	}
	if err := fsutil.MkdirPrivate(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: create its directory: %w", abs, err)
	}
	// An empty file is an empty database to SQLite, and SQLite gives the
	// -wal and -shm files it creates later the database file's mode.
	if err := fsutil.CreatePrivate(abs); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("sqlite: open %s: cannot open the store for writing "+
				"(check the permissions of its directory): %w", abs, err)
		}
		return nil, fmt.Errorf("sqlite: open %s: create the database file: %w", abs, err)
	}

	s := &Store{path: abs, sync: opts.Sync, now: opts.Now, maxSchedules: opts.MaxSchedules, log: opts.Logger, wStmts: map[stmtKey]*sql.Stmt{}, reaper: newReaper(),
		wake: &waker{name: wakeName(abs)}, snaps: newSnapFiles(abs)}
	s.limitSetters = limitSetters{Backend: "sqlite", Write: s.writeLimits}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	if opts.Exclusive {
		if s.lock, err = lockFile(abs+".lock", abs); err != nil {
			return nil, err
		}
		s.log.Debug("store lock taken", zap.String("lock", abs+".lock"))
	}

	busy := strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)
	wq := url.Values{}
	wq.Set("_txlock", "immediate")
	wq.Set("_busy_timeout", busy)
	wq.Set("_journal_mode", "WAL")
	wq.Set("_synchronous", pragmaSync[opts.Sync])
	wq.Set("_foreign_keys", "1")
	// RETURNING buffers the rows it returns, a claimed task's input and
	// checkpoint included, in a temporary table, which SQLite spills by
	// default to a file in the system's temporary directory (/var/tmp):
	// a claim of a large input then failed there, on another file system
	// than the store's. Kept in memory, as the returned bytes are anyway.
	wq.Add("_pragma", "temp_store(MEMORY)")
	if s.w, err = sql.Open("sqlite", dsn(abs, wq)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := s.w.PingContext(ctx); err != nil {
		return nil, openError(abs, err)
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if s.wc, err = s.w.Conn(ctx); err != nil {
		return nil, openError(abs, err)
	}
	s.wturn = make(chan struct{}, 1)

	rq := url.Values{}
	rq.Set("_busy_timeout", busy)
	rq.Set("_foreign_keys", "1")
	rq.Set("_query_only", "1")
	// A reader writes nothing, but the last connection to close may
	// checkpoint the log: the same setting everywhere.
	rq.Set("_synchronous", pragmaSync[opts.Sync])
	rq.Add("_pragma", "temp_store(MEMORY)")
	if s.r, err = sql.Open("sqlite", dsn(abs, rq)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	s.r.SetMaxOpenConns(opts.ReadConns)
	s.r.SetMaxIdleConns(opts.ReadConns)
	if err := s.r.PingContext(ctx); err != nil {
		return nil, openError(abs, err)
	}
	if err := s.st.prepare(ctx, s.wc, s.r); err != nil {
		return nil, openError(abs, err)
	}
	s.warnWideFiles()
	s.sweepNow(ctx) // the orphans a crash left (snapfiles.go)
	return s, nil
}

// pragmaSync is the synchronous pragma of each Sync setting.
var pragmaSync = map[Sync]string{SyncNormal: "NORMAL", SyncFull: "FULL"}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Sync is the store's Sync setting (Options.Sync).
func (s *Store) Sync() Sync { return s.sync }

// pragmas reads the synchronous and journal_mode pragmas on the writer
// connection and on every connection of the read pool (as many as it
// may hold open), for the tests.
func (s *Store) pragmas(ctx context.Context) (writer string, readers []string, err error) {
	read := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) (string, error) {
		var sync int
		var mode string
		if err := q.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			return "", err
		}
		if err := q.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			return "", err
		}
		return fmt.Sprintf("synchronous=%d journal_mode=%s", sync, mode), nil
	}
	err = s.write(ctx, "pragmas", func(ctx context.Context) error {
		var err error
		writer, err = read(s.wc)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range s.r.Stats().MaxOpenConnections {
		c, err := s.r.Conn(ctx)
		if err != nil {
			return "", nil, err
		}
		conns = append(conns, c)
		p, err := read(c)
		if err != nil {
			return "", nil, err
		}
		readers = append(readers, p)
	}
	return writer, readers, nil
}

// Close closes the database and releases the lock. It is safe to call more
// than once; later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.snaps.stopSweeps()
		var errs []error
		errs = append(errs, s.st.close())
		s.mu.Lock()
		for _, st := range s.wStmts {
			errs = append(errs, st.Close())
		}
		s.wStmts = nil
		s.mu.Unlock()
		if s.wc != nil {
			errs = append(errs, s.wc.Close())
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w != nil {
			errs = append(errs, s.w.Close())
		}
		errs = append(errs, s.wake.shutdown())
		if s.lock != nil {
			// Closing the descriptor releases the flock. The file stays:
			// removing it would race with a runner that just opened it.
			errs = append(errs, s.lock.Close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// dsn is the driver name of the database at the absolute path with the
// driver parameters q, as a SQLite URI so that any path works.
func dsn(path string, q url.Values) string {
	u := url.URL{Path: filepath.ToSlash(path)}
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// sqliteCode is the primary SQLite result code of err, or -1.
func sqliteCode(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return -1
}

// openError explains a failure to open or set up the database at path.
func openError(path string, err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("sqlite: open %s: the file is not a SQLite database, or is corrupt "+
			"(move it aside to start an empty store, or restore a backup): %w", path, err)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
		return fmt.Errorf("sqlite: open %s: cannot open the store for writing "+
			"(check the permissions of the file, of its -wal and -shm files and of its directory): %w", path, err)
	case sqlite3.SQLITE_BUSY:
		return fmt.Errorf("sqlite: open %s: the database stayed locked by another process "+
			"past the busy timeout: %w", path, err)
	}
	return fmt.Errorf("sqlite: open %s: %w", path, err)
}

// migrate brings the schema up to SchemaVersion in one transaction.
func (s *Store) migrate(ctx context.Context) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return openError(s.path, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var hasTable int
	if err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'`).Scan(&hasTable); err != nil {
		return openError(s.path, err)
	}
	version := 0
	if hasTable == 0 {
		var objects int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&objects); err != nil {
			return openError(s.path, err)
		}
		if objects > 0 {
			return fmt.Errorf("sqlite: open %s: %w: the database holds other tables and no schema_version table", s.path, ErrNotStore)
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE schema_version (
			version INTEGER PRIMARY KEY,
			applied INTEGER NOT NULL
		)`); err != nil {
			return openError(s.path, err)
		}
	} else if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&version); err != nil {
		return openError(s.path, err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("sqlite: open %s: %w: its schema version is %d, this runner knows up to %d; "+
			"upgrade the runner (or open a copy made before the upgrade)", s.path, ErrSchemaTooNew, version, SchemaVersion)
	}
	if version == SchemaVersion {
		return tx.Commit()
	}
	if version > 0 && s.lock == nil {
		// An upgrade under a running older runner would break it: its
		// statements name the old schema. `runner serve` holds the lock
		// file while it runs; take it for the migration, or refuse.
		lock, err := lockFile(s.path+".lock", s.path)
		switch {
		case errors.Is(err, tasks.ErrLocked):
			return fmt.Errorf("sqlite: open %s: its schema is version %d and this runner needs %d, but %w; "+
				"stop that runner first, nothing was changed", s.path, version, SchemaVersion, err)
		case errors.Is(err, errors.ErrUnsupported): // no locks here: nothing to check
		case err != nil:
			return err
		default:
			defer func() { _ = lock.Close() }()
		}
	}
	now := micros(s.now())
	for v := version; v < SchemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("sqlite: open %s: migrate schema to version %d: %w", s.path, v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied) VALUES (?, ?)`, v+1, now); err != nil {
			return fmt.Errorf("sqlite: open %s: migrate schema to version %d: %w", s.path, v+1, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return openError(s.path, err)
	}
	s.log.Info("store schema migrated", zap.String("path", s.path),
		zap.Int("from", version), zap.Int("to", SchemaVersion))
	return nil
}

// LockHolder reports whether a process holds the store's exclusive lock (a
// `runner serve` on it), and its pid: the package's LockHolder for this
// store's path (tasks.LockInspector).
func (s *Store) LockHolder() (pid int, held bool, err error) { return LockHolder(s.path) }
