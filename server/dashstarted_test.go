package server_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
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
	ctx := context.Background()
	// The store's clock stands 90 minutes back: the claim is that old.
	started := time.Now().Add(-90 * time.Minute).UTC().Truncate(time.Second)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Now: func() time.Time { return started }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	mod, err := st.PutModule(ctx, noop)
	require.NoError(t, err)
	running, _, err := st.Submit(ctx, tasks.Spec{Module: mod})
	require.NoError(t, err)
	cl, err := st.Claim(ctx, tasks.ClaimRequest{Owner: "runner-a", Max: 1, Lease: 3 * time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	queued, _, err := st.Submit(ctx, tasks.Spec{Module: mod})
	require.NoError(t, err)
	srv, err := server.New(server.Config{}, server.Deps{Store: st})
	require.NoError(t, err)
	h := srv.Handler()

	wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", running.ID)), http.StatusOK,
		fmt.Sprintf(`<span id="started">started %s (1h30m0s ago)</span>`, started.Format("2006-01-02 15:04:05Z")))
	body := wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", queued.ID)), http.StatusOK)
	require.NotContains(t, body, `id="started"`)
}
