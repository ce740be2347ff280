package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestTasksScheduledFilter: /tasks?state=scheduled (a state the lists
// show) lists the queued tasks whose run_at is to come, and only them.
func TestTasksScheduledFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	mod, err := st.PutModule(ctx, noop)
	require.NoError(t, err)
	later, _, err := st.Submit(ctx, tasks.Spec{Module: mod, RunAt: time.Now().Add(time.Hour), Labels: map[string]string{"job": "later"}})
	require.NoError(t, err)
	now, _, err := st.Submit(ctx, tasks.Spec{Module: mod, Labels: map[string]string{"job": "now"}})
	require.NoError(t, err)
	srv, err := server.New(server.Config{}, server.Deps{Store: st})
	require.NoError(t, err)
	body := wantPage(t, get(t, srv.Handler(), "/tasks?state=scheduled"), http.StatusOK, fmt.Sprintf(`href="/tasks/%d"`, later.ID))
	require.NotContains(t, body, fmt.Sprintf(`href="/tasks/%d"`, now.ID))
	require.Contains(t, body, `<option value="scheduled" selected>`)
	wantPage(t, get(t, srv.Handler(), "/tasks?state=later"), http.StatusBadRequest, "scheduled")
}

// TestBulkOneTask: the bulk form counts one task in the singular.
func TestBulkOneTask(t *testing.T) {
	t.Parallel()
	st, _ := dashStore(t)
	srv, err := server.New(server.Config{}, server.Deps{Store: st})
	require.NoError(t, err)
	form := url.Values{"action": {"retry"}, "state": {"dead"}}
	req := httptestPost(t, "/tasks/bulk", form)
	body := wantPage(t, doReq(srv.Handler(), req), http.StatusOK, "<strong>1</strong> task matches")
	require.NotContains(t, body, "1 tasks")
	form.Set("confirm", "yes")
	body = wantPage(t, doReq(srv.Handler(), httptestPost(t, "/tasks/bulk", form)), http.StatusOK, "1 task done (retry)")
	require.NotContains(t, body, "1 tasks")
}

// httptestPost is a same-site form POST to path.
func httptestPost(t *testing.T, path string, form url.Values) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://localhost:8080"+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Host = "localhost:8080"
	req.RemoteAddr = "127.0.0.1:4000"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return req
}
