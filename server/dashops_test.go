package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	_, err := store.RecordRunner(ctx, tasks.RunnerInfo{Owner: "<b>r1</b>", Host: "h", Version: "v1", Lease: time.Minute, Workers: 2})
	require.NoError(t, err)
	sha := c.upload()
	_, err = store.AddSchedule(ctx, tasks.Schedule{Name: "tick", Every: time.Hour, Spec: tasks.Spec{Module: sha, Queue: "edge"}})
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
	// Run now, from the dashboard and from the API: a task each, with the
	// schedule's label; the schedule's periods untouched.
	require.Contains(t, page("/schedules"), `action="/schedules/tick/run"`)
	want(t, post("/schedules/tick/run", true), http.StatusSeeOther)
	want(t, c.do("POST", "/v1/schedules/tick/run", nil), http.StatusCreated)
	want(t, c.do("POST", "/v1/schedules/nope/run", nil), http.StatusNotFound)
	all, err := store.List(ctx, tasks.ListFilter{})
	require.NoError(t, err)
	ran := 0
	for _, task := range all {
		if task.Labels[tasks.ScheduleLabel] == "tick" {
			ran++
		}
	}
	require.Equal(t, 2, ran)
	sc, err = store.GetSchedule(ctx, "tick")
	require.NoError(t, err)
	require.Zero(t, sc.LastTask, "run now is apart from the periods")
	require.Equal(t, "skip", server.ScheduleViewOf(sc, time.Now()).Overlap)

	want(t, post("/schedules/tick/remove", true), http.StatusSeeOther)
	_, err = store.GetSchedule(ctx, "tick")
	require.ErrorIs(t, err, tasks.ErrScheduleNotFound)
	require.Contains(t, page("/schedules"), "No schedules.")
}

// TestDashboardAddSchedule: /schedules/new's form adds a schedule with
// the task fields it takes; refused without the session, from another
// site, and on GET; a bad form stores nothing and says why.
func TestDashboardAddSchedule(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	ctx := context.Background()
	c, _ := newClient(t, server.Config{Token: "secret"}, server.Deps{Store: store})
	sha := c.upload()
	require.NoError(t, store.NameModule(ctx, sha, "<i>noop</i>.wasm"))
	c.submit(`{"module":"`+sha+`"}`, http.StatusCreated)

	rec := c.do("GET", "/schedules", nil)
	wantPage(t, rec, http.StatusOK, `href="/schedules/new"`)
	body := wantPage(t, c.do("GET", "/schedules/new", nil), http.StatusOK, `<form method="post" action="/schedules"`,
		`<option value="`+sha+`">&lt;i&gt;noop&lt;/i&gt;.wasm</option>`)
	require.NotContains(t, body, "<script")
	require.NotContains(t, body, "<i>noop")

	form := url.Values{
		"name": {"nightly"}, "module": {strings.ToUpper(sha)}, "cron": {"0 3 * * *"}, "queue": {"edge"},
		"priority": {"5"}, "max_attempts": {"2"}, "timeout": {"90s"}, "paused": {"yes"},
		"labels": {"team=data\r\n\r\nsrc=dash"}, "args": {"--format\r\ncsv\r\n"},
	}
	post := func(f url.Values, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/schedules", strings.NewReader(f.Encode()))
		req.Host = "localhost:8080"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return doReq(c.h, req)
	}
	signedIn := []string{"Authorization", "Bearer secret"}
	none := func() {
		t.Helper()
		list, err := store.Schedules(ctx)
		require.NoError(t, err)
		require.Empty(t, list)
	}
	wantPage(t, post(form), http.StatusUnauthorized, `action="/login"`)
	none()
	require.Equal(t, http.StatusForbidden, post(form, append(signedIn, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")...).Code)
	none()
	// A GET with the form's fields changes nothing.
	want(t, c.do("GET", "/schedules?"+form.Encode(), nil), http.StatusOK)
	want(t, c.do("GET", "/schedules/new?"+form.Encode(), nil), http.StatusOK)
	none()

	for _, bad := range []struct {
		field, value string
		code         int
		says         string
	}{
		{"cron", "", http.StatusUnprocessableEntity, "no interval"},
		{"every", "1h", http.StatusUnprocessableEntity, ""},
		{"priority", "high", http.StatusBadRequest, "priority"},
		{"timeout", "soon", http.StatusBadRequest, "timeout"},
		{"labels", "nokey", http.StatusBadRequest, "key=value"},
		{"labels", "a=1\na=2", http.StatusBadRequest, "twice"},
		{"module", strings.Repeat("0", 64), http.StatusNotFound, ""},
		{"name", "", http.StatusUnprocessableEntity, ""},
	} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set(bad.field, bad.value)
		wantPage(t, post(f, signedIn...), bad.code, bad.says)
		none()
	}

	rec = post(form, signedIn...)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.Equal(t, "/schedules", rec.Header().Get("Location"))
	sc, err := store.GetSchedule(ctx, "nightly")
	require.NoError(t, err)
	require.Equal(t, "0 3 * * *", sc.Cron)
	require.True(t, sc.Paused)
	require.Equal(t, sha, sc.Spec.Module)
	require.Equal(t, "edge", sc.Spec.Queue)
	require.Equal(t, 5, sc.Spec.Priority)
	require.Equal(t, 2, sc.Spec.MaxAttempts)
	require.Equal(t, 90*time.Second, sc.Spec.Limits.Timeout)
	require.Equal(t, map[string]string{"team": "data", "src": "dash"}, sc.Spec.Labels)
	require.Equal(t, []string{"--format", "csv"}, sc.Spec.Args)
	wantPage(t, c.do("GET", "/schedules", nil), http.StatusOK, "nightly", `action="/schedules/nightly/resume"`)
	wantPage(t, post(form, signedIn...), http.StatusConflict)
}
