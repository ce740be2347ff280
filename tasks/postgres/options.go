package postgres

import (
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// Defaults of Options.
const (
	// DefaultReconnectMin is the first wait of a wake-up listener before it
	// connects again after losing its connection.
	DefaultReconnectMin = 100 * time.Millisecond
	// DefaultReconnectMax caps the listener's wait, which doubles (with
	// jitter) after each failed attempt.
	DefaultReconnectMax = 5 * time.Second
	// DefaultApplicationName is the application_name of the store's
	// connections (visible in pg_stat_activity) when the connection string
	// sets none.
	DefaultApplicationName = "stint"
)

// Options configure Open. The zero value is valid: the connection's
// current schema, the system clock, the pool size of the connection string
// (or pgxpool's default), no logging.
type Options struct {
	// Schema is the PostgreSQL schema that holds the store's tables. When
	// set, every connection of the store gets search_path set to it alone,
	// and Open creates the schema when missing. Default "": the first
	// existing schema of the connection's search_path (normally public;
	// a search_path=... parameter of the connection string sets it too).
	Schema string
	// Now is the store's clock: run-at times, lease expiries, attempt
	// times. It is never PostgreSQL's now(), so that tests can move it;
	// the runners sharing a database must have synchronized clocks (a skew
	// of d lengthens or shortens the leases one runner sees of another by
	// d). Default time.Now.
	Now func() time.Time
	// Logger receives the store's few log lines (migrations, takeovers,
	// the wake-up listener's reconnections). Default zap.NewNop().
	Logger *zap.Logger
	// MaxConns caps the store's connection pool. Default 0: the
	// connection string's pool_max_conns, else pgxpool's default (the
	// larger of 4 and the number of CPUs). A wake-up listener holds one
	// more connection of its own.
	MaxConns int32
	// ReconnectMin and ReconnectMax bound the wait of a wake-up listener
	// between attempts to connect again: it starts at ReconnectMin and
	// doubles up to ReconnectMax. Defaults DefaultReconnectMin (100ms)
	// and DefaultReconnectMax (5s).
	ReconnectMin, ReconnectMax time.Duration
	// PausedRecheck is how long a Store trusts the paused queues it last
	// read (tasks.Store.PauseQueue): another runner's pause is honoured by this
	// one's claims within it. Default DefaultPausedRecheck (1s); negative:
	// read them at every claim (a round trip each).
	PausedRecheck time.Duration
	// MaxSchedules is how many schedules AddSchedule lets the store hold
	// (two adds at the same moment from two runners may pass it by one).
	// Default tasks.DefaultMaxSchedules; negative: no limit.
	MaxSchedules int
}

// DefaultPausedRecheck is Options.PausedRecheck's default.
const DefaultPausedRecheck = time.Second

// WithDefaults returns o with its zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.ReconnectMin == 0 {
		o.ReconnectMin = DefaultReconnectMin
	}
	if o.MaxSchedules == 0 {
		o.MaxSchedules = tasks.DefaultMaxSchedules
	}
	if o.PausedRecheck == 0 {
		o.PausedRecheck = DefaultPausedRecheck
	}
	if o.ReconnectMax == 0 {
		o.ReconnectMax = max(DefaultReconnectMax, o.ReconnectMin)
	}
	return o
}

// Validate reports an option that cannot work.
func (o Options) Validate() error {
	if o.MaxConns < 0 {
		return fmt.Errorf("postgres: options: max conns %d is negative", o.MaxConns)
	}
	if o.ReconnectMin < 0 || o.ReconnectMax < o.ReconnectMin {
		return fmt.Errorf("postgres: options: reconnect waits %v to %v: want 0 <= min <= max", o.ReconnectMin, o.ReconnectMax)
	}
	if strings.ContainsRune(o.Schema, 0) || len(o.Schema) > maxIdentifier {
		return fmt.Errorf("postgres: options: schema %q holds NUL or is longer than %d bytes", o.Schema, maxIdentifier)
	}
	return nil
}

// maxIdentifier is PostgreSQL's longest identifier (NAMEDATALEN-1 bytes).
const maxIdentifier = 63
