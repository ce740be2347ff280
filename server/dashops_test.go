package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// The dashboard's runners and schedules pages, and the schedule buttons:
// refused without the session when a token is set, never on GET, and
// escaping what the store holds.
func TestDashboardRunnersAndSchedules(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	ctx := context.Background()
	c, _ := newClient(t, server.Config{Token: "secret"}, server.Deps{Store: store})
	require.NoError(t, store.RecordRunner(ctx, tasks.RunnerInfo{Owner: "<b>r1</b>", Host: "h", Version: "v1", Lease: time.Minute, Workers: 2}))
	sha := c.upload()
	_, err := store.AddSchedule(ctx, tasks.Schedule{Name: "tick", Every: time.Hour, Spec: tasks.Spec{Module: sha, Queue: "edge"}})
	require.NoError(t, err)

	page := func(path string) string {
		t.Helper()
		rec := c.do("GET", path, nil)
		want(t, rec, http.StatusOK)
		require.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'none'")
		return rec.Body.String()
	}
	body := page("/runners")
	require.Contains(t, body, "&lt;b&gt;r1&lt;/b&gt;")
	require.NotContains(t, body, "<b>r1</b>")
	require.Contains(t, body, `<span class="st runner-alive"`)
	body = page("/schedules")
	require.Contains(t, body, "every 1h0m0s")
	require.Contains(t, body, `action="/schedules/tick/pause"`)
	next := time.Now().Truncate(time.Hour).Add(time.Hour).UTC().Format("2006-01-02 15:04")
	require.Contains(t, body, next, "the next run is shown")

	post := func(path string, signedIn bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(""))
		req.Host = "localhost:8080"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if signedIn {
			req.Header.Set("Authorization", "Bearer secret")
		}
		return doReq(c.h, req)
	}
	want(t, post("/schedules/tick/pause", false), http.StatusUnauthorized)
	sc, err := store.GetSchedule(ctx, "tick")
	require.NoError(t, err)
	require.False(t, sc.Paused, "refused without the token")
	want(t, c.do("GET", "/schedules/tick/pause", nil), http.StatusMethodNotAllowed)

	rec := post("/schedules/tick/pause", true)
	want(t, rec, http.StatusSeeOther)
	require.Equal(t, "/schedules", rec.Header().Get("Location"))
	sc, err = store.GetSchedule(ctx, "tick")
	require.NoError(t, err)
	require.True(t, sc.Paused)
	require.Contains(t, page("/schedules"), `action="/schedules/tick/resume"`)
	want(t, post("/schedules/tick/resume", true), http.StatusSeeOther)
	want(t, post("/schedules/nope/pause", true), http.StatusNotFound)
	// A cross-site form is refused.
	req := httptest.NewRequest("POST", "/schedules/tick/remove", strings.NewReader(""))
	req.Host = "localhost:8080"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	want(t, doReq(c.h, req), http.StatusForbidden)
	want(t, post("/schedules/tick/remove", true), http.StatusSeeOther)
	_, err = store.GetSchedule(ctx, "tick")
	require.ErrorIs(t, err, tasks.ErrScheduleNotFound)
	require.Contains(t, page("/schedules"), "No schedules.")
}
