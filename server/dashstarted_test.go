package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestTaskPageStarted: a running task's page shows when its attempt was
// claimed and how long ago, and that no worker began it, then when one
// did; a queued task's page does not.
func TestTaskPageStarted(t *testing.T) {
	t.Parallel()
	// The store's clock stands 90 minutes back: the claim is that old.
	started := time.Now().Add(-90 * time.Minute).UTC().Truncate(time.Second)
	st, mod := noopStore(t, sqlite.Options{Now: func() time.Time { return started }})
	running := submitSpec(t, st, mod, tasks.Spec{})
	cl := claimOne(t, st, tasks.ClaimRequest{Owner: "runner-a", Max: 1, Lease: 3 * time.Hour})
	queued := submitSpec(t, st, mod, tasks.Spec{})
	h := dashHandler(t, server.Config{}, st)

	claimed := fmt.Sprintf(`<span id="started">claimed %s (1h30m0s ago)</span>`, started.Format("2006-01-02 15:04:05Z"))
	wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", running.ID)), http.StatusOK, claimed,
		`<span class="st claimed" id="task-state">claimed</span>`, `<span id="began">none of its workers has begun it yet</span>`)
	require.NoError(t, st.MarkBegun(t.Context(), []tasks.Lease{cl.Lease}))
	wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", running.ID)), http.StatusOK, claimed,
		`<span class="st running" id="task-state">running</span>`, fmt.Sprintf(`<span id="began">began %s (1h30m0s ago)</span>`, started.Format("2006-01-02 15:04:05Z")))
	body := wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", queued.ID)), http.StatusOK)
	require.NotContains(t, body, `id="started"`)
}
