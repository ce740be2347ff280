package pgtest_test

import (
	"context"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/pgtest"
)

// count reads the rows of table t on the cluster at dsn.
func count(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n))
	return n
}

// TestClusterRestartAndFailover: a private cluster keeps what it
// committed through an immediate stop (a crash) and a start; a
// synchronous replica promoted after its primary is killed has every row
// the primary acknowledged, and takes writes; a client given both hosts
// with target_session_attrs=read-write reaches whichever is the primary.
func TestClusterRestartAndFailover(t *testing.T) {
	t.Parallel()
	p := pgtest.Start(t)
	p.Exec(`CREATE TABLE t (n int)`)
	p.Exec(`INSERT INTO t SELECT generate_series(1, 100)`)
	p.Stop("immediate")
	_, err := pgx.Connect(context.Background(), p.DSN("postgres"))
	require.Error(t, err, "the cluster is down")
	p.Start()
	require.Equal(t, 100, count(t, p.DSN("postgres")))

	r := p.Replica(true)
	p.Exec(`INSERT INTO t SELECT generate_series(101, 150)`)
	both := "postgres://postgres@" + p.Addr() + "," + r.Addr() + "/postgres?sslmode=disable&target_session_attrs=read-write"
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, both)
	require.NoError(t, err)
	require.Equal(t, p.Port, conn.PgConn().Conn().RemoteAddr().(*net.TCPAddr).Port, "the primary, the first host")
	require.NoError(t, conn.Close(ctx))

	p.Stop("immediate")
	_, err = pgx.Connect(ctx, both)
	require.Error(t, err, "the replica is read-only until promoted")
	r.Promote()
	require.Equal(t, 150, count(t, r.DSN("postgres")), "every acknowledged commit is on the promoted replica")
	conn, err = pgx.Connect(ctx, both)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO t VALUES (151)`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	require.Equal(t, 151, count(t, r.DSN("postgres")))
}
