// Package storeurl opens a task store by URL: the one place that knows
// which backend package serves which URL, so that a program (the runner
// CLI, an embedder) never names a backend.
//
//	sqlite:PATH, sqlite://PATH, or a plain PATH   tasks/sqlite (one node)
//	postgres://... or postgresql://...            tasks/postgres (shared)
//
// A new backend adds its scheme here, and passes tasks/storetest.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
	"github.com/stint-run/stint/tasks/sqlite"
)

// Options are what every backend takes.
type Options struct {
	// Exclusive asks for the store alone: a single-node store (SQLite)
	// takes its lock, and Open fails with an error wrapping
	// tasks.ErrLocked when another process holds it. A shared store
	// (PostgreSQL) ignores it. Set it for the process that runs tasks.
	Exclusive bool
	// Logger receives the store's logs. Default: zap.NewNop().
	Logger *zap.Logger
	// Sync is a SQLite store's commit durability: "normal" (default) or
	// "full" (sqlite.Sync). A PostgreSQL store ignores it: the server's
	// synchronous_commit decides.
	Sync string
	// MaxSchedules is how many schedules the store holds at most
	// (sqlite.Options.MaxSchedules, postgres.Options.MaxSchedules).
	// Default tasks.DefaultMaxSchedules; negative: no limit.
	MaxSchedules int
}

// Kind is the backend a URL names.
type Kind string

// The backends.
const (
	// SQLite: a file, one process running its tasks (tasks/sqlite).
	SQLite Kind = "sqlite"
	// Postgres: a database several runners share (tasks/postgres).
	Postgres Kind = "postgres"
)

// Shared reports whether stores of this kind are shared by several
// runners at once: they recover only their own attempts at start
// (tasks.OwnRecoverer), never everyone's.
func (k Kind) Shared() bool { return k == Postgres }

// ErrEmpty: the URL is empty.
var ErrEmpty = errors.New("storeurl: empty store URL: want sqlite:PATH, a file path, or postgres://")

// Parse returns the backend a URL names and what that backend opens (the
// file path, or the PostgreSQL connection string).
func Parse(url string) (Kind, string, error) {
	switch {
	case url == "":
		return "", "", ErrEmpty
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return Postgres, url, nil
	case strings.HasPrefix(url, "sqlite://"):
		return sqliteFile(strings.TrimPrefix(url, "sqlite://"), url)
	case strings.HasPrefix(url, "sqlite:"):
		return sqliteFile(strings.TrimPrefix(url, "sqlite:"), url)
	}
	if i := strings.Index(url, "://"); i > 0 && !strings.ContainsAny(url[:i], `/\.`) {
		return "", "", fmt.Errorf("storeurl: %q: unknown scheme %q: want sqlite:PATH, a file path, or postgres://", Redact(url), url[:i])
	}
	return SQLite, url, nil
}

func sqliteFile(path, url string) (Kind, string, error) {
	if path == "" {
		return "", "", fmt.Errorf("storeurl: %q: no file path after the scheme", url)
	}
	return SQLite, path, nil
}

// Unavailable reports whether err (from Open or a store's method) says
// the store's database server could not be reached (down, restarting, not
// accepting connections yet, or the network to it cut), rather than that
// the store refused what was asked: a caller may wait and try again.
func Unavailable(err error) bool {
	return errors.Is(err, postgres.ErrUnavailable)
}

// Open opens the store url names (see the package doc).
func Open(ctx context.Context, url string, opts Options) (tasks.Store, error) {
	kind, target, err := Parse(url)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	switch kind {
	case Postgres:
		s, err := postgres.Open(ctx, target, postgres.Options{Logger: opts.Logger, MaxSchedules: opts.MaxSchedules})
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		s, err := sqlite.Open(ctx, target, sqlite.Options{Exclusive: opts.Exclusive, Logger: opts.Logger, Sync: sqlite.Sync(opts.Sync),
			MaxSchedules: opts.MaxSchedules})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// Redact returns url with its secrets shown as "(set)": the password of
// its user info (postgres://app:(set)@db/stint) and the value of a
// password or sslpassword parameter. Whatever else it holds is kept. It is
// what the runner prints and logs for a store URL (runner config, errors,
// warnings).
func Redact(url string) string {
	scheme := strings.Index(url, "://")
	if scheme < 0 {
		return url
	}
	head, rest := url[:scheme+3], url[scheme+3:]
	// The user info ends at the last '@' before the query; a password
	// holding '?' (unescaped) is taken whole too.
	at := -1
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		at = strings.LastIndex(rest[:q], "@")
	}
	if at < 0 {
		if a := strings.LastIndex(rest, "@"); a >= 0 && !strings.Contains(rest[:a], "/") {
			at = a
		}
	}
	if at >= 0 {
		if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
			head += rest[:c] + ":(set)@"
			rest = rest[at+1:]
		}
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return head + rest
	}
	params := strings.Split(rest[q+1:], "&")
	for i, p := range params {
		k, _, ok := strings.Cut(p, "=")
		switch strings.ToLower(k) {
		case "password", "sslpassword":
			if ok {
				params[i] = k + "=(set)"
			}
		}
	}
	return head + rest[:q+1] + strings.Join(params, "&")
}
