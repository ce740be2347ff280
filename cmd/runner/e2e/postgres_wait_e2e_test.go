package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestServePostgresWaitsForTheDatabase: `runner serve` started while its
// PostgreSQL cannot be reached (a TCP proxy in front of the shared server
// refuses every connection) does not exit: it logs each failed try with
// the wait before the next, answers /healthz 200 and /readyz 503 on its
// HTTP address meanwhile, and once the proxy lets connections through it
// starts on the same address, says ready, and runs the task queued during
// the outage.
func TestServePostgresWaitsForTheDatabase(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	purl, proxy := proxiedURL(t, url)
	ctx := context.Background()
	sha := putFixture(t, s, "noop")
	proxy.Cut()

	p, probe := startWaitingRunner(t, purl, "waiter")
	code, body := probe.get(t, "/healthz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = probe.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.JSONEq(t, `{"ready":false}`, body)
	code, body = probe.get(t, "/v1/tasks")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, "store cannot be reached")

	task, _, err := s.Submit(ctx, tasks.Spec{Module: sha})
	require.NoError(t, err)
	proxy.Restore()
	httpAddr := p.apiAddr(t)
	require.Equal(t, probe.addr, httpAddr, "the API takes over the probes' address")
	p.waitLine(t, "runner ready")
	testutil.WaitFor(t, "the task queued during the outage to succeed", func() bool {
		got, err := s.Get(ctx, task.ID)
		require.NoError(t, err)
		return got.State == tasks.StateSucceeded
	})
	code, body = probe.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	p.stopCleanly(t)
	require.NotContains(t, p.stderr(), `"level":"error"`)
}

// TestServePostgresStoreWaitEnds: a runner waiting for a database it
// cannot reach exits 1 once store_wait has passed, naming the store and
// the wait; and exits 0 at SIGTERM while it waits (nothing ran).
func TestServePostgresStoreWaitEnds(t *testing.T) {
	t.Parallel()
	_, url := pgStore(t)
	purl, proxy := proxiedURL(t, url)
	proxy.Cut()

	p := startRunner(t, nil, serveArgs(dataDir(t), "--store", purl, "--owner", "gives-up", "--store-wait", "300ms")...)
	require.Equal(t, 1, p.wait(t), p.stderr())
	require.Contains(t, p.stderr(), "store unreachable; waiting for it")
	require.Contains(t, p.stderr(), "the store stayed unreachable for")
	require.Contains(t, p.stderr(), "store_wait")

	p = startRunner(t, nil, serveArgs(dataDir(t), "--store", purl, "--owner", "stopped")...)
	p.waitLine(t, "store unreachable; waiting for it")
	p.stopCleanly(t)
	require.Contains(t, p.stderr(), "signal received while starting")
	require.False(t, strings.Contains(p.stderr(), "runner ready"), p.stderr())
}
