package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// ErrSchemaTooNew is returned (wrapped) by Open for a store whose schema was
// written by a newer Stint than this one.
var ErrSchemaTooNew = errors.New("store schema is newer than this runner")

// ErrNotStore is returned (wrapped) by Open for a schema that holds other
// tables but no Stint store.
var ErrNotStore = errors.New("not a stint store")

// ErrUnavailable is wrapped, next to the driver's error, by every error of a
// Store that comes from PostgreSQL being unreachable: a connection refused,
// lost or timed out, the server shutting down or not accepting connections
// yet. What was asked was not done, except that a write whose connection
// was lost while it committed may have committed: the caller retries (a
// write carrying a lease is fenced, so a retry never applies twice what the
// lease no longer holds).
var ErrUnavailable = errors.New("PostgreSQL is unavailable")

// Store is the PostgreSQL tasks.Store, for several runners on one queue. It
// is safe for concurrent use, and several Stores (in one process or many)
// may share one schema. Close it when done.
//
// It also has tasks.Store's setters of tenants' and queues' limits
// (SetTenantWeight, SetTenantMaxRunning, SetQueueMaxRunning,
// SetTenantWorkQuota, SetQueueWorkQuota, SetTenantRate, SetQueueRate),
// shared with the other store through a field it embeds: go doc does not
// list them.
type Store struct {
	pool   *pgxpool.Pool
	now    func() time.Time
	log    *zap.Logger
	opts   Options
	addr   string // host:port/database, for messages (no credentials)
	schema string // the schema holding the tables
	// channel is the NOTIFY channel of the schema (wake-ups).
	channel string

	mu        sync.Mutex
	listeners map[*listener]struct{} // running wake-up listeners; nil once closed
	closeOnce sync.Once

	// lostClaims are the claims that failed with their connection, given
	// back by the next Claim (sqlUnclaim).
	lmu        sync.Mutex
	lostClaims []lostClaim
	// lostAttempts counts the attempts recorded as lost (LostAttempts).
	lostAttempts atomic.Int64
	// fairLast is whether the last claim found tenants or limits, so that
	// the next goes to the fair claim without the probe and the ordered
	// claim (claimPlan.fairOnly); the fair claim clears it when it finds
	// neither.
	fairLast atomic.Bool
	// lastClaimed is how many tasks the last claim took: the next ordered
	// claim sizes its result for that many (claimPlan.expect).
	lastClaimed atomic.Int64

	// The wake-up sender (notify.go): nsending while its goroutine runs,
	// npending when a wake-up is asked for, nclosed once the Store closes.
	nmu                         sync.Mutex
	nsending, npending, nclosed bool
	nwg                         sync.WaitGroup

	// The paused queues as last read (ops.go): pset, read at pread.
	pmu   sync.Mutex
	pset  []string
	pread time.Time

	limitSetters // SetTenantWeight and the other limit setters (fair.go)
}

// The store and its optional capabilities (those of PostgreSQL alone).
var (
	_ tasks.Store             = (*Store)(nil)
	_ tasks.CompletingClaimer = (*Store)(nil)
	_ tasks.OwnRecoverer      = (*Store)(nil)
	_ tasks.Pinger            = (*Store)(nil)
)

// Open connects to the PostgreSQL database of the connection string dsn (a
// postgres:// URL or key=value pairs, as pgx takes them), and brings the
// store's schema (Options.Schema) up to SchemaVersion.
//
// Migrations run in one transaction under a transaction-level advisory
// lock named after the schema, so that runners starting together migrate
// once: the others wait for the lock, then find the schema up to date. Open
// fails with an error wrapping ErrSchemaTooNew for a schema from a newer
// Stint, ErrNotStore for a schema holding another application's tables,
// and ErrUnavailable (with the driver's error) when PostgreSQL cannot be
// reached.
func Open(ctx context.Context, dsn string, opts Options) (_ *Store, err error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: parse the connection string: %w", err)
	}
	cc := cfg.ConnConfig
	if opts.Schema != "" {
		cc.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	// The statements rely on READ COMMITTED: a row locked FOR UPDATE
	// after a concurrent change is checked again, not refused with a
	// serialization failure. Whatever the server's default.
	cc.RuntimeParams["default_transaction_isolation"] = "read committed"
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = DefaultApplicationName
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	s := &Store{now: opts.Now, log: opts.Logger, opts: opts, listeners: map[*listener]struct{}{},
		addr: hosts(cc.Config) + "/" + cc.Database}
	s.limitSetters = limitSetters{Backend: "postgres", Write: s.writeLimits}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", s.addr, err)
	}
	defer func() {
		if err != nil {
			s.pool.Close()
		}
	}()
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	s.channel = channelName(s.schema)
	return s, nil
}

// hosts names the servers of a connection configuration for messages:
// host:port, and those of its fallbacks (a connection string's further
// hosts, "host=a,b" or "postgres://a:5432,b:5432/...", which pgx tries in
// turn: a primary and its standbys) each once, comma-separated.
func hosts(c pgconn.Config) string {
	names := []string{net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))}
	for _, f := range c.Fallbacks {
		// sslmode=prefer gives each host a fallback of its own (without
		// TLS): named once.
		if n := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// Schema is the PostgreSQL schema that holds the store's tables.
func (s *Store) Schema() string { return s.schema }

// Ping checks that PostgreSQL answers on one of the store's connections,
// for a readiness probe: nil, or an error wrapping ErrUnavailable (or
// ctx's error).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return s.dbErr("ping", err)
	}
	return nil
}

// Close stops the wake-up listeners, drops the wake-ups not sent yet, and
// closes every connection. It is safe to call more than once; it waits for
// the queries in progress.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		ls := s.listeners
		s.listeners = nil
		s.mu.Unlock()
		for l := range ls {
			l.stop()
		}
		s.stopNotify()
		s.pool.Close()
	})
	return nil
}

// lockKey is the advisory lock key for purpose in schema: the first 8
// bytes of a sha256, so that two schemas (or two purposes) never share a
// lock by accident.
func lockKey(purpose, schema string) int64 {
	sum := sha256.Sum256([]byte("stint/" + purpose + "/" + schema))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// channelName is the NOTIFY channel of schema: "stint_wake:" and the
// schema, hashed when that would be longer than an identifier.
func channelName(schema string) string {
	c := "stint_wake:" + schema
	if len(c) > maxIdentifier {
		sum := sha256.Sum256([]byte(schema))
		c = "stint_wake:" + hex.EncodeToString(sum[:16])
	}
	return c
}

// unavailable reports whether err comes from PostgreSQL being unreachable
// rather than from the statement.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, crash, cannot connect now
			return true
		case pgErr.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// dbErr wraps a database failure of op, with ErrUnavailable when
// PostgreSQL is unreachable.
func (s *Store) dbErr(op string, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("postgres: %s: %w", op, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("postgres: %s: %w: no answer from %s before the deadline: %w", op, ErrUnavailable, s.addr, err)
	}
	if unavailable(err) {
		return fmt.Errorf("postgres: %s: %w: cannot reach %s (is it running, and reachable from here?): %w",
			op, ErrUnavailable, s.addr, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// migrate creates the schema when Options.Schema names a missing one, and
// brings it up to SchemaVersion, in one transaction under the schema's
// advisory lock.
func (s *Store) migrate(ctx context.Context) (err error) {
	openErr := func(what string, err error) error {
		return s.dbErr("open "+s.addr+": "+what, err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return openErr("connect", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	// The lock is named after the schema before it exists: Options.Schema,
	// else the schema the search path resolves to (which cannot be created
	// here).
	name := s.opts.Schema
	if name == "" {
		var cur *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
			return openErr("read the current schema", err)
		}
		if cur == nil {
			var path string
			_ = tx.QueryRow(ctx, `SHOW search_path`).Scan(&path)
			return fmt.Errorf("postgres: open %s: the search path (%s) names no existing schema; "+
				"create one, or set the store's schema (Options.Schema), which Open creates", s.addr, path)
		}
		name = *cur
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("migrate", name)); err != nil {
		return openErr("take the migration lock", err)
	}
	if s.opts.Schema != "" {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.opts.Schema}.Sanitize()); err != nil {
			return openErr("create schema "+s.opts.Schema, err)
		}
	}
	s.schema = name
	var hasTable bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema()
		AND tablename = 'schema_version')`).Scan(&hasTable); err != nil {
		return openErr("read the schema version", err)
	}
	version := 0
	if !hasTable {
		var tables int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil {
			return openErr("read the schema", err)
		}
		if tables > 0 {
			return fmt.Errorf("postgres: open %s: %w: schema %q holds other tables and no schema_version table; "+
				"give the store a schema of its own (Options.Schema, or search_path in the connection string)",
				s.addr, ErrNotStore, s.schema)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE schema_version (
			version integer PRIMARY KEY,
			applied timestamptz NOT NULL
		)`); err != nil {
			return openErr("create the schema_version table", err)
		}
	} else if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&version); err != nil {
		return openErr("read the schema version", err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("postgres: open %s: %w: schema %q is version %d, this runner knows up to %d; "+
			"upgrade the runner (or restore a backup made before the upgrade)", s.addr, ErrSchemaTooNew, s.schema, version, SchemaVersion)
	}
	if version == SchemaVersion {
		if err := tx.Commit(ctx); err != nil {
			return openErr("commit", err)
		}
		return nil
	}
	now := s.clock()
	for v := version; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return openErr(fmt.Sprintf("migrate schema %q to version %d", s.schema, v+1), err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version, applied) VALUES ($1, $2)`, v+1, now); err != nil {
			return openErr(fmt.Sprintf("migrate schema %q to version %d", s.schema, v+1), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return openErr("commit the migration", err)
	}
	s.log.Info("store schema migrated", zap.String("database", s.addr), zap.String("schema", s.schema),
		zap.Int("from", version), zap.Int("to", SchemaVersion))
	return nil
}
