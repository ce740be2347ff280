package server_test

import (
	"fmt"
	"net/http"
	"net/url"
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
	st, mod := noopStore(t, sqlite.Options{})
	later := submitSpec(t, st, mod, tasks.Spec{RunAt: time.Now().Add(time.Hour), Labels: map[string]string{"job": "later"}})
	now := submitSpec(t, st, mod, tasks.Spec{Labels: map[string]string{"job": "now"}})
	h := dashHandler(t, server.Config{}, st)
	body := wantPage(t, get(t, h, "/tasks?state=scheduled"), http.StatusOK, fmt.Sprintf(`href="/tasks/%d"`, later.ID))
	require.NotContains(t, body, fmt.Sprintf(`href="/tasks/%d"`, now.ID))
	require.Contains(t, body, `<option value="scheduled" selected>`)
	wantPage(t, get(t, h, "/tasks?state=later"), http.StatusBadRequest, "scheduled")
}

// TestBulkOneTask: the bulk form counts one task in the singular.
func TestBulkOneTask(t *testing.T) {
	t.Parallel()
	st, _ := dashStore(t)
	h := dashHandler(t, server.Config{}, st)
	form := url.Values{"action": {"retry"}, "state": {"dead"}}
	req := httptestPost(t, "/tasks/bulk", form)
	body := wantPage(t, doReq(h, req), http.StatusOK, "<strong>1</strong> task matches")
	require.NotContains(t, body, "1 tasks")
	form.Set("confirm", "yes")
	body = wantPage(t, doReq(h, httptestPost(t, "/tasks/bulk", form)), http.StatusOK, "1 task done (retry)")
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
