package postgres_test

import (
	"context"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/pgtest"
	"github.com/stint-run/stint/tasks/postgres"
)

// envDSN names the variable holding the test database's connection string
// (.ci/run sets it after starting the local server).
const envDSN = "STINT_TEST_POSTGRES"

// dsn is the test database's connection string; the test is skipped
// without one.
func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv(envDSN)
	if d == "" {
		t.Skipf("PostgreSQL tests skipped: set %s to a connection string, e.g. "+
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", envDSN)
	}
	return d
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// newSchema returns the name of a schema of t's own (not created: the
// store's Options.Schema creates it), dropped with everything in it when t
// ends, so that tests run in parallel on one database.
func newSchema(t testing.TB) string {
	t.Helper()
	name := nonWord.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return pgtest.Schema(t, dsn(t), "stint_test_"+strings.Trim(name, "_")+"_")
}

// open opens a store on schema and closes it when t ends.
func open(t testing.TB, schema string, opts postgres.Options) *postgres.Store {
	t.Helper()
	opts.Schema = schema
	s, err := postgres.Open(context.Background(), dsn(t), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// rawConn is a connection to the test database, outside any store, with
// search_path set to schema; closed when t ends.
func rawConn(t testing.TB, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn(t))
	require.NoError(t, err)
	if schema != "" {
		cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close(context.Background())) })
	return conn
}

var wasm = []byte("\x00asm\x01\x00\x00\x00")

// quote quotes an identifier.
func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// dsnWith is the test connection string with one more parameter; the test
// is skipped unless the string is a URL.
func dsnWith(t testing.TB, key, value string) string {
	t.Helper()
	u, err := url.Parse(dsn(t))
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skipf("%s is not a postgres:// URL", envDSN)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// putModule stores the module wasm in s and returns its hash.
func putModule(t testing.TB, s *postgres.Store) string {
	t.Helper()
	h, err := s.PutModule(t.Context(), wasm)
	require.NoError(t, err)
	return h
}
