package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestServePostgresConnectionLoss: a runner whose connection to
// PostgreSQL is cut (a TCP proxy between them closes every connection and
// refuses new ones; the shared server keeps running) while two guests run.
// Meanwhile another runner takes one of the tasks over, and both guests
// end. The runner keeps its guests, says /readyz false, retries its
// heartbeats and the recording of the results with backoff (logged once
// per doubling of the failures), and once the connection is back it
// records the result of the task it still holds; fencing refuses the
// other's, whose record stays the new attempt's. /readyz is true again.
func TestServePostgresConnectionLoss(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	purl, proxy := proxiedURL(t, url)
	ctx := context.Background()
	sha := putFixture(t, s, "stopping_block")
	mounts := t.TempDir()
	spec := func(name string) (tasks.Spec, string) {
		dir := filepath.Join(mounts, name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
		return tasks.Spec{Module: sha, MaxAttempts: 3, Limits: tasks.Limits{Timeout: time.Hour},
			Input: []byte(filepath.Join(dir, "fifo"))}, filepath.Join(dir, "fifo")
	}
	specKept, fifoKept := spec("kept")
	specTaken, fifoTaken := spec("taken")
	kept, _, err := s.Submit(ctx, specKept)
	require.NoError(t, err)
	taken, _, err := s.Submit(ctx, specTaken)
	require.NoError(t, err)

	// The default lease (10s): the kept task's lease does not expire in the
	// few moments between the cut and the takeover below, which only the
	// other task's (expired by hand) does.
	p := startRunner(t, nil, serveArgs(dataDir(t), "--store", purl, "--owner", "cut",
		"--http-addr", "127.0.0.1:0", "--mounts-allow", mounts)...)
	httpAddr := p.apiAddr(t)
	p.waitLine(t, "runner ready")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: bound}
	ready := func() bool {
		resp, err := hc.Get("http://" + httpAddr + "/readyz")
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	testutil.WaitFor(t, "both guests to run (they report progress, then block on their fifo)", func() bool {
		for _, id := range []int64{kept.ID, taken.ID} {
			task, err := s.Get(ctx, id)
			require.NoError(t, err)
			if task.State != tasks.StateRunning || task.ProgressDone == 0 {
				return false
			}
		}
		return true
	})
	require.True(t, ready())

	proxy.Cut()
	// Another runner takes one task over: its lease is expired by hand,
	// then a claim of "thief" reaps it and claims it as attempt 2.
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE tasks SET lease_expiry = '2000-01-01' WHERE id = $1`, taken.ID)
	require.NoError(t, conn.Close(ctx))
	require.NoError(t, err)
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "thief", Max: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, taken.ID, cl[0].Task.ID)
	require.Equal(t, 2, cl[0].Lease.Token)

	// Both guests end while the runner cannot reach its database.
	for _, fifo := range []string{fifoKept, fifoTaken} {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString("done\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	p.waitLine(t, "recording attempts failed; retrying")
	p.waitLine(t, "heartbeat failed; the attempts keep running")
	testutil.WaitFor(t, "/readyz to say not ready", func() bool { return !ready() })
	task, err := s.Get(ctx, kept.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateRunning, task.State, "not recorded during the outage")

	proxy.Restore()
	testutil.WaitFor(t, "the kept task's result to be recorded", func() bool {
		task, err := s.Get(ctx, kept.ID)
		require.NoError(t, err)
		return task.State == tasks.StateSucceeded
	})
	p.waitLine(t, "attempt result refused", `"task":`+jsonInt(taken.ID), "stale lease")
	testutil.WaitFor(t, "/readyz to say ready again", ready)

	atts, err := s.Attempts(ctx, kept.ID)
	require.NoError(t, err)
	require.Len(t, atts, 1, "the kept guest ran once, its result kept through the outage")
	require.Equal(t, "succeeded", atts[0].Outcome)
	require.Equal(t, "cut", atts[0].Owner)
	task, err = s.Get(ctx, taken.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateRunning, task.State)
	require.Equal(t, "thief", task.LeaseOwner, "the taken task is the new attempt's")
	require.Equal(t, 2, task.Attempt)
	atts, err = s.Attempts(ctx, taken.ID)
	require.NoError(t, err)
	require.Len(t, atts, 1, "only the takeover's record of the lost attempt; the fenced result is not kept")
	require.Equal(t, "lost", atts[0].Outcome)

	// Once per doubling: every such line counts a power of two failures.
	for _, l := range strings.Split(p.stderr(), "\n") {
		if !strings.Contains(l, "recording attempts failed") && !strings.Contains(l, "heartbeat failed") &&
			!strings.Contains(l, "claim failed") {
			continue
		}
		var line struct {
			Failures int `json:"failures"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &line), l)
		require.Positive(t, line.Failures, l)
		require.Zero(t, line.Failures&(line.Failures-1), "logged at a failure count that is not a power of two: %s", l)
	}
	p.stopCleanly(t)
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
