package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestMigrateRace: five runners opening one fresh schema at once migrate it
// once (the advisory lock), and all of them work on it.
func TestMigrateRace(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	core, logs := observer.New(zap.InfoLevel)
	const n = 5
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema, Logger: zap.New(core)})
		})
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		if s != nil {
			t.Cleanup(func() { require.NoError(t, s.Close()) })
		}
		require.NoError(t, errs[i], "store %d", i)
	}
	require.Equal(t, 1, logs.FilterMessage("store schema migrated").Len(), "migrated once")

	var versions int
	require.NoError(t, rawConn(t, schema).QueryRow(t.Context(), `SELECT count(*) FROM schema_version`).Scan(&versions))
	require.Equal(t, postgres.SchemaVersion, versions)

	// Each one works on the same queue.
	h, err := stores[0].PutModule(t.Context(), wasm)
	require.NoError(t, err)
	for i, s := range stores {
		task, _, err := s.Submit(t.Context(), tasks.Spec{Module: h, IdempotencyKey: fmt.Sprint(i)})
		require.NoError(t, err)
		got, err := stores[(i+1)%n].Get(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, task, got)
	}
}

// TestSchemaTooNew: a schema written by a newer Stint is refused with a
// message that says what to do, and left as it was.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := open(t, schema, postgres.Options{})
	require.NoError(t, s.Close())
	raw := rawConn(t, schema)
	_, err := raw.Exec(t.Context(), `INSERT INTO schema_version (version, applied) VALUES ($1, now())`, postgres.SchemaVersion+1)
	require.NoError(t, err)

	_, err = postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema})
	t.Log(err)
	require.ErrorIs(t, err, postgres.ErrSchemaTooNew)
	require.ErrorContains(t, err, fmt.Sprintf("is version %d, this runner knows up to %d", postgres.SchemaVersion+1, postgres.SchemaVersion))
	require.ErrorContains(t, err, "upgrade the runner")
	require.ErrorContains(t, err, schema)
	var max int
	require.NoError(t, raw.QueryRow(t.Context(), `SELECT max(version) FROM schema_version`).Scan(&max))
	require.Equal(t, postgres.SchemaVersion+1, max)
}

// TestNotStore: a schema holding another application's tables is refused.
func TestNotStore(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	raw := rawConn(t, "")
	_, err := raw.Exec(t.Context(), `CREATE SCHEMA `+quote(schema)+`; CREATE TABLE `+quote(schema)+`.orders (id int)`)
	require.NoError(t, err)
	_, err = postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema})
	t.Log(err)
	require.ErrorIs(t, err, postgres.ErrNotStore)
	require.ErrorContains(t, err, "schema of its own")
}

// TestOpenSearchPath: without Options.Schema, the store lives in the
// schema the connection's search path names (here through the connection
// string), and Open says so when that schema does not exist.
func TestOpenSearchPath(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	withPath := dsnWith(t, "search_path", schema)
	_, err := postgres.Open(t.Context(), withPath, postgres.Options{})
	t.Log(err)
	require.ErrorContains(t, err, "names no existing schema")

	_, err = rawConn(t, "").Exec(t.Context(), `CREATE SCHEMA `+quote(schema))
	require.NoError(t, err)
	s, err := postgres.Open(t.Context(), withPath, postgres.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Equal(t, schema, s.Schema())
	var n int
	require.NoError(t, rawConn(t, schema).QueryRow(t.Context(), `SELECT count(*) FROM schema_version`).Scan(&n))
	require.Equal(t, postgres.SchemaVersion, n)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	o := postgres.Options{}.WithDefaults()
	require.NotNil(t, o.Now)
	require.NotNil(t, o.Logger)
	require.Equal(t, postgres.DefaultReconnectMin, o.ReconnectMin)
	require.Equal(t, postgres.DefaultReconnectMax, o.ReconnectMax)
	require.NoError(t, o.Validate())
	require.Error(t, postgres.Options{MaxConns: -1}.Validate())
	require.Error(t, postgres.Options{ReconnectMin: 2, ReconnectMax: 1}.Validate())
	require.Error(t, postgres.Options{Schema: string(make([]byte, 64))}.Validate())
	_, err := postgres.Open(context.Background(), "postgres://%zz", postgres.Options{})
	require.ErrorContains(t, err, "parse the connection string")
}
