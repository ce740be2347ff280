package storeurl_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storeurl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	t.Parallel()
	for url, want := range map[string][2]string{
		"sqlite:/var/stint.db":          {"sqlite", "/var/stint.db"},
		"sqlite:///var/stint.db":        {"sqlite", "/var/stint.db"},
		"sqlite:rel.db":                 {"sqlite", "rel.db"},
		"./data/stint.db":               {"sqlite", "./data/stint.db"},
		"/abs/stint.db":                 {"sqlite", "/abs/stint.db"},
		"postgres://u:p@h/db":           {"postgres", "postgres://u:p@h/db"},
		"postgresql://h/db?sslmode=off": {"postgres", "postgresql://h/db?sslmode=off"},
	} {
		kind, target, err := storeurl.Parse(url)
		require.NoError(t, err, url)
		require.Equal(t, want, [2]string{string(kind), target}, url)
	}
	for url, msg := range map[string]string{
		"":                     "empty store URL",
		"sqlite:":              "no file path",
		"mysql://u:secret@h/d": `unknown scheme "mysql"`,
	} {
		_, _, err := storeurl.Parse(url)
		require.ErrorContains(t, err, msg, url)
		require.NotContains(t, err.Error(), "secret", "a password is not shown")
	}
	require.True(t, storeurl.Postgres.Shared())
	require.False(t, storeurl.SQLite.Shared())
}

// TestOpenSQLite: a plain path and sqlite:PATH open the same file; an
// exclusive open is refused while another holds the store.
func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stint.db")
	s, err := storeurl.Open(ctx, path, storeurl.Options{Exclusive: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, err = storeurl.Open(ctx, "sqlite:"+path, storeurl.Options{Exclusive: true})
	require.ErrorIs(t, err, tasks.ErrLocked)
	c, err := storeurl.Open(ctx, "sqlite:"+path, storeurl.Options{})
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// TestOpenPostgres opens the test database by URL (skipped without
// STINT_TEST_POSTGRES); the store is shared: it recovers its own attempts
// and answers Ping.
func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("STINT_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set STINT_TEST_POSTGRES to a postgres:// URL to run it")
	}
	ctx := context.Background()
	s, err := storeurl.Open(ctx, dsn, storeurl.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, ok := s.(tasks.OwnRecoverer)
	require.True(t, ok)
	p, ok := s.(tasks.Pinger)
	require.True(t, ok)
	require.NoError(t, p.Ping(ctx))
}

// TestRedact: a URL's password, in its user info or a password or
// sslpassword parameter, is shown as "(set)"; the rest is kept.
func TestRedact(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"postgres://app:s3cret@db:5432/stint?sslmode=require": "postgres://app:(set)@db:5432/stint?sslmode=require",
		"postgresql://app@db/stint":                           "postgresql://app@db/stint",
		"postgres://db/stint?user=app&password=s3cret&x=1":    "postgres://db/stint?user=app&password=(set)&x=1",
		"postgres://db/stint?SSLPassword=s3cret":              "postgres://db/stint?SSLPassword=(set)",
		"postgres://app:s3cret@db/stint?application_name=a@b": "postgres://app:(set)@db/stint?application_name=a@b",
		"postgres://app:s3c?ret@db/stint":                     "postgres://app:(set)@db/stint",
		"postgres://app:s3c@ret@db/stint":                     "postgres://app:(set)@db/stint",
		"postgres://app:s3cret@/stint?host=/run/pg":           "postgres://app:(set)@/stint?host=/run/pg",
		"/var/lib/stint/stint.db":                             "/var/lib/stint/stint.db",
		"sqlite:/data/a@b:c.db":                               "sqlite:/data/a@b:c.db",
	} {
		got := storeurl.Redact(url)
		require.Equal(t, want, got, url)
		require.NotContains(t, got, "s3c", url)
	}
}
