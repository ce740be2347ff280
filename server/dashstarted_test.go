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

// TestTaskPageStarted: a running task's page shows when its attempt
// started and how long ago; a queued task's page does not.
func TestTaskPageStarted(t *testing.T) {
	t.Parallel()
	// The store's clock stands 90 minutes back: the claim is that old.
	started := time.Now().Add(-90 * time.Minute).UTC().Truncate(time.Second)
	st, mod := noopStore(t, sqlite.Options{Now: func() time.Time { return started }})
	running := submitSpec(t, st, mod, tasks.Spec{})
	claimOne(t, st, tasks.ClaimRequest{Owner: "runner-a", Max: 1, Lease: 3 * time.Hour})
	queued := submitSpec(t, st, mod, tasks.Spec{})
	h := dashHandler(t, server.Config{}, st)

	wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", running.ID)), http.StatusOK,
		fmt.Sprintf(`<span id="started">started %s (1h30m0s ago)</span>`, started.Format("2006-01-02 15:04:05Z")))
	body := wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", queued.ID)), http.StatusOK)
	require.NotContains(t, body, `id="started"`)
}
