package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// hostile is a label value, an arg and a stderr line that would run in a
// page that did not escape them.
const hostile = `<script>alert("x")</script>`

// dashStore is a real SQLite store holding a task in every state: queued
// (ids[queued]), running with progress 1/4, succeeded, dead with stderr
// and a hostile label, cancelled.
func dashStore(t *testing.T) (*sqlite.Store, map[tasks.State]int64) {
	t.Helper()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	submit := func(spec tasks.Spec) tasks.Task { return submitSpec(t, st, mod, spec) }
	claim := func(id int64) tasks.Lease {
		cl := claimOne(t, st, tasks.ClaimRequest{Owner: "runner-a", Max: 1, Lease: time.Hour})
		require.Equal(t, id, cl.Task.ID)
		return cl.Lease
	}
	ids := map[tasks.State]int64{}

	ok := submit(tasks.Spec{Labels: map[string]string{"job": "fine"}})
	l := claim(ok.ID)
	_, err := st.Complete(ctx, []tasks.Completion{{Lease: l, State: tasks.StateSucceeded, Result: []byte("out"),
		Attempt: tasks.Attempt{Outcome: "succeeded"}}})
	require.NoError(t, err)
	ids[tasks.StateSucceeded] = ok.ID

	dead := submit(tasks.Spec{MaxAttempts: 1, Args: []string{hostile}, Labels: map[string]string{"job": hostile}})
	l = claim(dead.ID)
	errs, err := st.Complete(ctx, []tasks.Completion{{Lease: l, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "exit code 1", Counted: true,
			Stderr: strings.Repeat("e", 3000) + "\n" + hostile + "\nboom: the last line\n"}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	ids[tasks.StateDead] = dead.ID

	run := submit(tasks.Spec{Queue: "video", Labels: map[string]string{"job": "encode"}})
	l = claim(run.ID)
	require.NoError(t, st.MarkBegun(ctx, []tasks.Lease{l})) // a worker began it
	require.NoError(t, st.Progress(ctx, l, 1, 4))
	ids[tasks.StateRunning] = run.ID

	later := tasks.Spec{RunAt: time.Now().Add(time.Hour)}
	ids[tasks.StateQueued] = submit(later).ID
	c := submit(later)
	_, err = st.Cancel(ctx, c.ID)
	require.NoError(t, err)
	ids[tasks.StateCancelled] = c.ID
	return st, ids
}

// dashHandler returns the handler of a server with cfg over store st.
func dashHandler(t *testing.T, cfg server.Config, st tasks.Store) http.Handler {
	t.Helper()
	srv, err := server.New(cfg, server.Deps{Store: st})
	require.NoError(t, err)
	return srv.Handler()
}

// noopStore opens a real SQLite store with opts in a temporary directory
// (closed when the test ends) and stores the noop module in it; it
// returns the store and the module's hash.
func noopStore(t testing.TB, opts sqlite.Options) (*sqlite.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "stint.db"), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	mod, err := st.PutModule(ctx, noop)
	require.NoError(t, err)
	return st, mod
}

// submitSpec submits spec to st with its module set to mod, and returns
// the task.
func submitSpec(t testing.TB, st *sqlite.Store, mod string, spec tasks.Spec) tasks.Task {
	t.Helper()
	spec.Module = mod
	tk, _, err := st.Submit(context.Background(), spec)
	require.NoError(t, err)
	return tk
}

// claimOne claims from st with req and requires exactly one task
// claimed; it returns that claim.
func claimOne(t testing.TB, st *sqlite.Store, req tasks.ClaimRequest) tasks.Claimed {
	t.Helper()
	cl, err := st.Claim(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, cl, 1)
	return cl[0]
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// get sends a GET to h with a loopback Host and the given headers.
func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "localhost:8080"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func wantPage(t *testing.T, rec *httptest.ResponseRecorder, code int, contains ...string) string {
	t.Helper()
	require.Equal(t, code, rec.Code, "body: %s", rec.Body.String())
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'none'")
	require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"))
	body := rec.Body.String()
	for _, c := range contains {
		require.Contains(t, body, c)
	}
	// Nothing hostile is ever markup: the only tags are the templates'.
	require.NotContains(t, body, "<script")
	return body
}

func TestDashboardViews(t *testing.T) {
	t.Parallel()
	st, ids := dashStore(t)
	srv, err := server.New(server.Config{}, server.Deps{Store: st,
		Stats: func() server.PoolStats { return server.PoolStats{Running: 1, Started: 3, Finished: 2} }})
	require.NoError(t, err)
	h := srv.Handler()
	srv.ObserveAttemptEnd("video", "", "succeeded", time.Second, 10)
	srv.ObserveAttemptEnd("video", "", "failed", time.Second, 10)

	body := wantPage(t, get(t, h, "/"), http.StatusOK,
		`<meta http-equiv="refresh" content="5">`,
		`<svg id="throughput"`, `class="ok"`, `class="bad"`, "1 succeeded, 1 not", // the last hour, drawn here
		`<td id="throughput-video"><svg class="small-graph"`, "attempts of queue video recorded by this runner in the last hour: 1 succeeded, 1 not", // and its queue's
		`ready: claiming and running tasks`,
		`id="total-queued"><a href="/tasks?state=queued">1</a>`,
		`id="total-running"><a href="/tasks?state=running">1</a>`,
		`id="total-succeeded"><a href="/tasks?state=succeeded">1</a>`,
		`id="total-dead"><a href="/tasks?state=dead">1</a>`,
		`id="total-cancelled"><a href="/tasks?state=cancelled">1</a>`,
		`id="total-all">5</td>`,
		// The one queued task is scheduled for later: none ready.
		`id="total-scheduled"><a href="/tasks?state=scheduled">1</a>`,
		`id="waited-default">–</td>`,
		`<a href="/tasks?queue=video">video</a>`,
		`1 / 4 (25%)`, `runner-a`, `encode`,
		"boom: the last line", "3 started, 2 finished",
		`<a href="/tasks?queue=default&amp;state=succeeded">1</a>`, // counted by queue on SQLite too
		`<td class="num">4</td>`,                                   // the queue's all: no "4+"
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	// The overview keeps a tail of the stderr, not all 4 KiB.
	require.NotContains(t, body, strings.Repeat("e", 2000))
	require.Contains(t, body, `<td id="throughput-default"><span class="muted">–</span></td>`, "a queue with no attempt in the last hour has no graph")

	body = wantPage(t, get(t, h, "/tasks/"+itoa(ids[tasks.StateDead])), http.StatusOK,
		`id="task-state">dead`, "Attempt 1: failed, exit code 1", "exit code 1",
		"boom: the last line", strings.Repeat("e", 2000), "<code>&lt;script&gt;")
	require.NotContains(t, body, `http-equiv="refresh"`, "a terminal task's page does not refresh")
	wantPage(t, get(t, h, "/tasks/"+itoa(ids[tasks.StateRunning])), http.StatusOK,
		`id="task-state">running`, "1 / 4 (25%)", "No attempt has ended yet", `http-equiv="refresh"`)
	wantPage(t, get(t, h, "/tasks/"+itoa(ids[tasks.StateSucceeded])), http.StatusOK,
		`id="task-state">succeeded`, "Attempt 1: succeeded", "3 bytes")

	body = wantPage(t, get(t, h, "/tasks"), http.StatusOK, "Newest first, 5 shown.")
	// Newest first: cancelled (the last submitted) before succeeded (the first).
	require.Less(t, strings.Index(body, `href="/tasks/`+itoa(ids[tasks.StateCancelled])+`"`),
		strings.Index(body, `href="/tasks/`+itoa(ids[tasks.StateSucceeded])+`"`))
	body = wantPage(t, get(t, h, "/tasks?state=dead"), http.StatusOK, "dead tasks", "Newest first, 1 shown.")
	require.Contains(t, body, `href="/tasks/`+itoa(ids[tasks.StateDead])+`"`)
	wantPage(t, get(t, h, "/tasks?queue=video"), http.StatusOK, "Newest first, 1 shown.", "1 / 4 (25%)")
	wantPage(t, get(t, h, "/tasks?state=nope"), http.StatusBadRequest, `unknown state &#34;nope&#34;`)
	wantPage(t, get(t, h, "/tasks?before=x"), http.StatusBadRequest, "want a task id")
	wantPage(t, get(t, h, "/tasks/999"), http.StatusNotFound, "not found")
	wantPage(t, get(t, h, "/tasks/abc"), http.StatusBadRequest, "want a positive integer")

	css := get(t, h, "/dashboard.css")
	require.Equal(t, http.StatusOK, css.Code)
	require.Equal(t, "text/css; charset=utf-8", css.Header().Get("Content-Type"))

	// Without a token the dashboard, like the API, answers loopback names only.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "evil.example:8080"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusMisdirectedRequest, rec.Code)
}

func TestDashboardPaging(t *testing.T) {
	t.Parallel()
	st, _ := dashStore(t)
	h := dashHandler(t, server.Config{}, st)
	ctx := context.Background()
	mod, err := st.PutModule(ctx, noop)
	require.NoError(t, err)
	for range 60 {
		submitSpec(t, st, mod, tasks.Spec{RunAt: time.Now().Add(time.Hour)})
	}
	body := wantPage(t, get(t, h, "/tasks?state=queued"), http.StatusOK, "Newest first, 50 shown.", "Older tasks")
	i := strings.Index(body, `/tasks?before=`)
	require.Positive(t, i)
	next := body[i : i+strings.Index(body[i:], `"`)]
	next = strings.ReplaceAll(next, "&amp;", "&")
	wantPage(t, get(t, h, next), http.StatusOK, "Newest first, 11 shown.")
}

func TestDashboardRunnerState(t *testing.T) {
	t.Parallel()
	st, _ := dashStore(t)
	for _, tc := range []struct {
		ready bool
		phase shutdown.Phase
		say   string
	}{
		{true, shutdown.PhaseNone, "ready: claiming"},
		{false, shutdown.PhaseNone, "not ready: the store does not answer"},
		{false, shutdown.PhaseDrain, "draining: no new claims"},
		{false, shutdown.PhaseCancel, "stopping: guests were asked to stop"},
		{false, shutdown.PhaseForce, "forcing"},
		{false, shutdown.PhaseHooks, "closing"},
	} {
		srv, err := server.New(server.Config{}, server.Deps{Store: st,
			Ready: func() bool { return tc.ready }, Phase: func() shutdown.Phase { return tc.phase }})
		require.NoError(t, err)
		wantPage(t, get(t, srv.Handler(), "/"), http.StatusOK, tc.say, `id="shutdown-phase">`+tc.phase.String())
	}
}

func TestDashboardToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	st, _ := dashStore(t)
	h := dashHandler(t, server.Config{Addr: "0.0.0.0:8080", Token: token}, st)

	// No token: the sign-in form, 401, nothing of the queue.
	body := wantPage(t, get(t, h, "/tasks?state=dead"), http.StatusUnauthorized, `action="/login"`, `name="next" value="/tasks?state=dead"`)
	require.NotContains(t, body, "boom")
	wantPage(t, get(t, h, "/?token=wrong"), http.StatusUnauthorized, `id="login-error"`)
	wantPage(t, get(t, h, "/", "Authorization", "Bearer wrong"), http.StatusUnauthorized)
	// The header, as a proxy would add it.
	wantPage(t, get(t, h, "/", "Authorization", "Bearer "+token), http.StatusOK, "boom: the last line", "Sign out")

	// The token once in the URL: a session cookie, and a redirect to the
	// same page without the token.
	rec := get(t, h, "/tasks?state=dead&token="+token)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/tasks?state=dead", rec.Header().Get("Location"))
	cookie := sessionOf(t, rec)
	require.NotContains(t, cookie.Value, token)
	wantPage(t, get(t, h, "/tasks/1", "Cookie", cookie.Name+"="+cookie.Value), http.StatusOK, "Attempt 1")
	wantPage(t, get(t, h, "/", "Cookie", cookie.Name+"=forged"), http.StatusUnauthorized)

	// The cookie is not the API's credential, and a browser page of
	// another site gets nothing more than before.
	api := get(t, h, "/v1/tasks", "Cookie", cookie.Name+"="+cookie.Value)
	require.Equal(t, http.StatusUnauthorized, api.Code)
	api = get(t, h, "/v1/tasks", "Authorization", "Bearer "+cookie.Value)
	require.Equal(t, http.StatusUnauthorized, api.Code)

	// The form: same cookie; next stays on this server.
	post := func(form url.Values, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		req.Host = "runner.example:8080"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec = post(url.Values{"token": {token}, "next": {"/tasks/1"}}, "Sec-Fetch-Site", "same-origin", "Origin", "http://runner.example:8080")
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/tasks/1", rec.Header().Get("Location"))
	again := sessionOf(t, rec)
	wantPage(t, get(t, h, "/tasks/1", "Cookie", again.Name+"="+again.Value), http.StatusOK, "Attempt 1")
	rec = post(url.Values{"token": {token}, "next": {"//evil.example/"}})
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/", rec.Header().Get("Location"))
	wantPage(t, post(url.Values{"token": {"nope"}}), http.StatusUnauthorized, `id="login-error"`)
	// A sign-in form on another site is refused (login CSRF).
	rec = post(url.Values{"token": {token}}, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Empty(t, rec.Result().Cookies())

	// HTTPS behind a proxy: the cookie is Secure too.
	rec = get(t, h, "/?token="+token, "X-Forwarded-Proto", "https")
	require.True(t, sessionOf(t, rec).Secure)

	// Sign out clears the cookie.
	req := httptest.NewRequest(http.MethodPost, "/logout", strings.NewReader(""))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	gone := sessionOf(t, rec)
	require.Empty(t, gone.Value)
	require.Negative(t, gone.MaxAge)
}

// sessionOf returns the session cookie a response sets, checking its
// flags.
func sessionOf(t *testing.T, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == "stint_session" {
			require.True(t, c.HttpOnly)
			require.Equal(t, http.SameSiteStrictMode, c.SameSite)
			require.Equal(t, "/", c.Path)
			return c
		}
	}
	require.FailNow(t, "no session cookie", "headers: %v", rec.Header())
	return nil
}
