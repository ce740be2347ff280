package sqlite

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// DefaultBusyTimeout is how long a write waits for another process's write
// transaction to end before failing with "database is locked".
const DefaultBusyTimeout = 5 * time.Second

// Sync is how hard a commit is pushed to the disk (SQLite's synchronous
// pragma, the store in WAL mode).
type Sync string

// The Sync settings.
const (
	// SyncNormal (synchronous=NORMAL, the default): a commit is written
	// to the write-ahead log, which is synced at each checkpoint of the
	// log into the database, not at each commit. A committed write
	// survives the crash of the process (kill -9, a panic, the OOM
	// killer); on a power loss or an OS crash the last commits before it
	// may be lost (the database stays consistent: whole transactions go).
	SyncNormal Sync = "normal"
	// SyncFull (synchronous=FULL): the log is synced at every commit, so
	// a committed write (a submitted task, a checkpoint, a result)
	// survives a power loss too, on a disk that honours the sync. Each
	// commit waits for it.
	SyncFull Sync = "full"
)

// Options configure Open. The zero value is valid: a shared (non-exclusive)
// store on the system clock that does not log.
type Options struct {
	// Exclusive takes an exclusive, non-blocking lock on path+".lock" for
	// as long as the store is open; Open fails with an error wrapping
	// tasks.ErrLocked when another process (or another exclusive Store in
	// this one) holds it. `runner serve` sets it; the CLI's one-shot
	// commands do not, and work while serve holds the lock. Default false.
	Exclusive bool
	// Now is the store's clock: run-at times, lease expiries, attempt
	// times. Tests pass a controllable clock. Default time.Now.
	Now func() time.Time
	// Logger receives the store's few log lines (migrations, lock
	// taken). Default zap.NewNop().
	Logger *zap.Logger
	// BusyTimeout is how long a write waits for another process's write
	// transaction on the same file. Default DefaultBusyTimeout (5s).
	BusyTimeout time.Duration
	// ReadConns is the size of the read pool. Default 4.
	ReadConns int
	// Sync is how hard a commit is pushed to the disk: SyncNormal
	// (default) or SyncFull.
	Sync Sync
	// MaxSchedules is how many schedules AddSchedule lets the store hold.
	// Default tasks.DefaultMaxSchedules; negative: no limit.
	MaxSchedules int
}

// WithDefaults returns o with its zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadConns == 0 {
		o.ReadConns = 4
	}
	if o.Sync == "" {
		o.Sync = SyncNormal
	}
	if o.MaxSchedules == 0 {
		o.MaxSchedules = tasks.DefaultMaxSchedules
	}
	return o
}

// Validate reports an option that cannot work.
func (o Options) Validate() error {
	if o.BusyTimeout < 0 {
		return fmt.Errorf("sqlite: options: busy timeout %v is negative", o.BusyTimeout)
	}
	if o.ReadConns < 0 {
		return fmt.Errorf("sqlite: options: read conns %d is negative", o.ReadConns)
	}
	switch o.Sync {
	case "", SyncNormal, SyncFull:
	default:
		return fmt.Errorf("sqlite: options: sync %q: want normal or full", o.Sync)
	}
	return nil
}
