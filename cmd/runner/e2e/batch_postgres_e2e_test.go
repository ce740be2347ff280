package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// runner batch on PostgreSQL (--store postgres://..., a schema of its
// own): every input once, a failure's stderr in its place, and a kill -9
// at a random moment resumed by the same command, no output lost or
// written twice. Skipped without STINT_TEST_POSTGRES.
func TestBatchPostgres(t *testing.T) {
	t.Parallel()
	schema, url := pgSchema(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("STINT_TEST_POSTGRES"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	mod := fixtureFile(t, "upper")
	in, files := batchInputs(t, 600)
	require.NoError(t, os.WriteFile(filepath.Join(in, "bad.bin"), []byte("not\x00text"), 0o644))
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"batch", mod, "--in", in, "--out", out, "--data-dir", dataDir(t), "--store", url, "-j", "2", "--json"}

	p := startRunner(t, nil, args...)
	waitOutputs(t, p, out, 1+rand.IntN(400))
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // it may have ended
	code := p.wait(t)
	require.Contains(t, []int{-1, exitBatchFailed}, code, p.stderr())
	before := partialOutputs(t, out, files, true)

	stdout, stderr, code := runRunner(t, "", args...)
	require.Equal(t, exitBatchFailed, code, stderr)
	s := batchSummaryOf(t, stdout)
	require.Equal(t, 601, s.Total)
	require.Equal(t, 600, s.Succeeded+s.AlreadyDone)
	require.GreaterOrEqual(t, s.AlreadyDone, len(before))
	require.Equal(t, 1, s.Failed)
	got := readOut(t, out)
	require.Contains(t, got[stderrPrefix+"bad.bin"].data, "not text")
	delete(got, stderrPrefix+"bad.bin")
	for name, f := range got {
		_, ok := files[name]
		require.True(t, ok, "unexpected %s", name)
		if b, ok := before[name]; ok {
			require.Equal(t, b, f, "%s, written before the kill, was written again", name)
		}
	}
	require.Len(t, got, len(files))

	// Again, skipping the failed input: nothing runs.
	stdout, stderr, code = runRunner(t, "", append(args, "--skip-failed")...)
	require.Equal(t, exitBatchFailed, code, stderr)
	s = batchSummaryOf(t, stdout)
	require.Equal(t, 600, s.AlreadyDone)
	require.Equal(t, 0, s.Failed)
}
