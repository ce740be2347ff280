package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
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

// TestDashboardSnapshots: a task's page says what its stored snapshot is
// (size, runner, attempt, run time and work, how it was taken, how many
// were stored) and how many attempts it lost in a row; a task whose
// snapshot was dropped says how many were stored; the overview shows the
// pool's suspended, resumed and snapshot counters. A runner's name is
// escaped like every other value.
func TestDashboardSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	claim := func(owner, queue string) tasks.Lease {
		return claimOne(t, st, tasks.ClaimRequest{Owner: owner, Queues: map[string]int{queue: 1}, Max: 1, Lease: time.Hour}).Lease
	}

	// Task a: two snapshots, the second as its attempt was suspended;
	// then its runner dies (recovered as lost: a lost streak of 1).
	a := submitSpec(t, st, mod, tasks.Spec{})
	l := claim(hostile, "default")
	require.NoError(t, st.SaveSnapshot(ctx, l, bytes.Repeat([]byte{1}, 4096), tasks.SnapshotInfo{Work: 5, RunTime: time.Second}))
	require.NoError(t, st.SaveSnapshot(ctx, l, bytes.Repeat([]byte{2}, 3<<19), // 1.5 MiB
		tasks.SnapshotInfo{Work: 7, RunTime: 1200 * time.Millisecond, Suspended: true}))
	n, err := st.RecoverRunning(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Task b: one snapshot taken while it ran, dropped since.
	b := submitSpec(t, st, mod, tasks.Spec{Queue: "other"})
	l = claim("runner-b", "other")
	require.Equal(t, b.ID, l.TaskID)
	require.NoError(t, st.SaveSnapshot(ctx, l, []byte("snapshot"), tasks.SnapshotInfo{Work: 5, RunTime: time.Second}))
	require.NoError(t, st.DropSnapshot(ctx, l))

	// Task c: an attempt that resumed from a snapshot says which.
	c := submitSpec(t, st, mod, tasks.Spec{Queue: "third"})
	l = claim("runner-c", "third")
	require.Equal(t, c.ID, l.TaskID)
	errs, err := st.Complete(ctx, []tasks.Completion{{Lease: l, State: tasks.StateSucceeded, Attempt: tasks.Attempt{Outcome: "succeeded",
		Resumed: true, ResumedFrom: &tasks.SnapshotInfo{Owner: hostile, Attempt: 2, Work: 99, RunTime: 3 * time.Second}}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])

	srv, err := server.New(server.Config{}, server.Deps{Store: st, Stats: func() server.PoolStats {
		return server.PoolStats{Started: 4, Suspended: 2, Resumed: 3, Snapshots: 9, SnapshotBytes: 8 << 20, SnapshotTime: 1200 * time.Millisecond}
	}})
	require.NoError(t, err)
	h := srv.Handler()

	body := wantPage(t, get(t, h, "/tasks/"+itoa(a.ID)), http.StatusOK,
		`<dt>Snapshot</dt><dd id="snapshot">1.5 MiB, taken by &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; in attempt 1 `+
			`at 1.2s of run time and 7 work units, as the attempt was suspended; 2 stored in all; the next attempt resumes from it`,
		`<dt>Lost</dt><dd id="lost-streak">1 attempt in a row without progress`,
		"Attempt 1: lost")
	require.NotContains(t, body, "stored, none kept now")

	body = wantPage(t, get(t, h, "/tasks/"+itoa(b.ID)), http.StatusOK,
		`<dt>Snapshots</dt><dd id="snapshot">1 stored, none kept now</dd>`)
	require.NotContains(t, body, "the next attempt resumes from it")
	require.NotContains(t, body, `id="lost-streak"`)

	wantPage(t, get(t, h, "/tasks/"+itoa(c.ID)), http.StatusOK, `<span class="tag">resumed from a snapshot</span>`,
		`Resumed from the snapshot of attempt 2 by &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;: 3s of run time, 99 work units.`)

	wantPage(t, get(t, h, "/"), http.StatusOK,
		"2 suspended, 3 resumed from a snapshot",
		`<dd id="pool-snapshots">9 stored, 8.0 MiB, 1.2s spent storing them</dd>`)
}

// TestDashboardShowsWhatHappened: a Go guest's out-of-memory dump shows
// its first line on the overview, not its goroutine stacks; a task that
// succeeded after a failure shows no stale error in /tasks; attempts that
// were not counted do not show as "3/2"; a scheduled task shows as such.
func TestDashboardShowsWhatHappened(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	submit := func(spec tasks.Spec) tasks.Task { return submitSpec(t, st, mod, spec) }
	end := func(id int64, state tasks.State, a tasks.Attempt) {
		cl := claimOne(t, st, tasks.ClaimRequest{Owner: "r", Max: 1, Lease: time.Hour})
		require.Equal(t, id, cl.Task.ID)
		errs, err := st.Complete(ctx, []tasks.Completion{{Lease: cl.Lease, State: state, Attempt: a}})
		require.NoError(t, err)
		require.NoError(t, errs[0])
	}

	oom := submit(tasks.Spec{MaxAttempts: 1})
	dump := "fatal error: runtime: out of memory\n\nruntime stack:\n" +
		strings.Repeat("runtime.throw({0x1234, 0x5})\n\t/usr/local/go/src/runtime/panic.go:1023 +0x5\n", 60)
	end(oom.ID, tasks.StateDead, tasks.Attempt{Outcome: "failed", ExitCode: 2, Reason: "exit code 2", Counted: true, Stderr: dump})

	healed := submit(tasks.Spec{MaxAttempts: 2, Priority: -1})
	end(healed.ID, tasks.StateQueued, tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "exit code 1", Counted: true})
	end(healed.ID, tasks.StateQueued, tasks.Attempt{Outcome: "interrupted", Reason: "stopped cooperatively"})
	end(healed.ID, tasks.StateSucceeded, tasks.Attempt{Outcome: "succeeded"})
	got, err := st.Get(ctx, healed.ID)
	require.NoError(t, err)
	require.Equal(t, 3, got.Attempt)
	submit(tasks.Spec{RunAt: time.Now().Add(10 * time.Minute), Labels: map[string]string{"src": "api"}})

	h := dashHandler(t, server.Config{}, st)
	body := wantPage(t, get(t, h, "/"), http.StatusOK, "fatal error: runtime: out of memory")
	require.NotContains(t, body, "panic.go:1023 +0x5\n</pre>", "the tail of the dump")

	body = wantPage(t, get(t, h, "/tasks"), http.StatusOK, `id="task-state" title="queued, to run at`, ">scheduled<")
	row := body[strings.Index(body, `href="/tasks/`+itoa(healed.ID)+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	require.Contains(t, row, ">succeeded<")
	require.NotContains(t, row, "exit code 1", "a stale error on a succeeded task")
	require.NotContains(t, row, "3/2")
	require.Contains(t, row, "(1/2 failed)")

	// A label filter: only the labelled task; a malformed one is refused.
	body = wantPage(t, get(t, h, "/tasks?label=src%3Dapi"), http.StatusOK, "Newest first, 1 shown.", `value="src=api"`)
	require.NotContains(t, body, `href="/tasks/`+itoa(healed.ID)+`"`)
	wantPage(t, get(t, h, "/tasks?label=src%3Dcli"), http.StatusOK, "No task matches.")
	wantPage(t, get(t, h, "/tasks?label=nokey"), http.StatusBadRequest, "key=value")
}

// TestLimitsReturnedInHumanUnits: the API returns a task's timeout as a
// duration string.
func TestLimitsReturnedInHumanUnits(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: newFakeStore()})
	sum := c.upload()
	rec := c.do("POST", "/v1/tasks", []byte(`{"module":"`+sum+`","limits":{"timeout":90000000000,"memory_bytes":1048576}}`))
	want(t, rec, http.StatusCreated)
	require.Contains(t, rec.Body.String(), `"limits":{"memory_bytes":1048576,"timeout":"1m30s"}`)
}

// words is n words "w0000 w0001 ...", one line.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "w%04d ", i)
	}
	return b.String()
}

// wholeWordAfterCut matches a tail cut at its start that starts at a word:
// "…" then a whole "wNNNN ".
var wholeWordAfterCut = regexp.MustCompile(`…w\d{4} `)

// TestStderrTailsStartWhole: a tail cut at its start (the stderr the
// runner kept, its 1 KiB on the overview, a last error in the list)
// starts at a word (or a line), never in the middle of one.
func TestStderrTailsStartWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	dead := submitSpec(t, st, mod, tasks.Spec{MaxAttempts: 1})
	cl := claimOne(t, st, tasks.ClaimRequest{Owner: "r", Max: 1, Lease: time.Hour})
	// One long line of words, 7001 bytes: the runner keeps its last 4 KiB,
	// cut in the middle of a word.
	stderr := tasks.StderrTail([]byte("x" + words(1000) + "the end"))
	require.NotRegexp(t, `^w\d{4} `, stderr, "the test's stderr starts mid-word")
	reason := "r" + words(100)
	errs, err := st.Complete(ctx, []tasks.Completion{{Lease: cl.Lease, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: reason, Counted: true, Stderr: stderr}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	h := dashHandler(t, server.Config{}, st)

	body := wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", dead.ID)), http.StatusOK, "the end</pre>")
	require.Regexp(t, `<pre class="stderr">…w\d{4} `, body, "the stderr the runner kept")
	body = wantPage(t, get(t, h, "/"), http.StatusOK, "the end")
	require.Regexp(t, wholeWordAfterCut, body[strings.Index(body, "Recent failures"):], "the overview's 1 KiB")
	body = wantPage(t, get(t, h, "/tasks"), http.StatusOK)
	require.Regexp(t, wholeWordAfterCut, body, "the list's last error")

	// A stderr the runner did not cut is shown whole, partial first word
	// and all.
	require.Equal(t, "xw0000 w0001", server.StderrTail("xw0000 w0001"))
	// A line start is preferred; one long word is cut at a character.
	require.Equal(t, "…second line", server.Tail(12, "first line\nsecond line"))
	require.Equal(t, "…éé", server.Tail(5, "ééééé"))
}

// TestLabelsKeptWhole: the stylesheet never breaks a label (key=value)
// across lines.
func TestLabelsKeptWhole(t *testing.T) {
	t.Parallel()
	srv, err := server.New(server.Config{}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	css := get(t, srv.Handler(), "/dashboard.css")
	require.Equal(t, http.StatusOK, css.Code)
	rule := regexp.MustCompile(`(?m)^ul\.labels li \{([^}]*)\}`).FindStringSubmatch(css.Body.String())
	require.NotNil(t, rule, "a rule for ul.labels li")
	require.Contains(t, rule[1], "white-space: nowrap")
	require.NotContains(t, rule[1], "anywhere")
}

// TestOneInTheSingular: counts of one read in the singular ("1 request
// is in progress", "1 more queue is counted").
func TestOneInTheSingular(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 request is in progress", server.InProgress(1))
	require.Equal(t, "64 requests are in progress", server.InProgress(64))

	ctx := context.Background()
	st := openStore(t)
	mod, err := st.PutModule(ctx, noop)
	require.NoError(t, err)
	for i := range 101 { // the overview counts 100 queues in rows
		_, _, err := st.Submit(ctx, tasks.Spec{Module: mod, Queue: fmt.Sprintf("q%03d", i)})
		require.NoError(t, err)
	}
	h := dashHandler(t, server.Config{}, st)
	body := wantPage(t, get(t, h, "/"), http.StatusOK, "1 more queue is counted in the totals only.")
	require.NotContains(t, body, "1 more queues")
}

// TestScheduleNameTaken: a schedule added under a name taken is refused
// (409) in words of the server's own, through the API and the form, not
// the store's.
func TestScheduleNameTaken(t *testing.T) {
	t.Parallel()
	c, srv := newClient(t, server.Config{}, server.Deps{Store: openStore(t)})
	sha := c.upload()
	body := []byte(`{"name":"tick","every":"10m","spec":{"module":"` + sha + `"}}`)
	want(t, c.do("POST", "/v1/schedules", body), http.StatusCreated)
	rec := c.do("POST", "/v1/schedules", body)
	wantError(t, rec, http.StatusConflict, "a schedule named tick exists (remove it first, or choose another name)")
	require.NotContains(t, rec.Body.String(), "sqlite")

	form := httptestPost(t, "/schedules", map[string][]string{"name": {"tick"}, "module": {sha}, "every": {"5m"}})
	page := wantPage(t, doReq(srv.Handler(), form), http.StatusConflict, "a schedule named tick exists")
	require.NotContains(t, page, "sqlite")
}

// TestRunnersPageStopsIntake: the runners page has a Stop intake button
// for each alive runner, which asks it to stop claiming
// (tasks.Store.RequestDrain: its record is draining at once, the
// runner stops at its next heartbeat), and says what it does; the API's
// POST /v1/runners/{owner}/drain does the same, 404 for an unknown owner
// (issue 41, item 17).
func TestRunnersPageStopsIntake(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	ctx := context.Background()
	for _, o := range []string{"r1", "r2"} {
		_, err := store.RecordRunner(ctx, tasks.RunnerInfo{Owner: o, Host: "h", Started: time.Now(), Lease: time.Minute, Workers: 1})
		require.NoError(t, err)
	}
	srv, err := server.New(server.Config{}, server.Deps{Store: store})
	require.NoError(t, err)
	h := srv.Handler()
	wantPage(t, get(t, h, "/runners"), http.StatusOK, `id="runners-intake"`, `id="drain-r1"`, `action="/runners/r1/drain"`, "pause the queue")
	rec := doReq(h, httptestPost(t, "/runners/r1/drain", nil))
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.Equal(t, "/runners", rec.Header().Get("Location"))
	draining := func(owner string) bool {
		list, err := store.Runners(ctx)
		require.NoError(t, err)
		for _, r := range list {
			if r.Owner == owner {
				return r.Draining
			}
		}
		t.Fatalf("no runner %s", owner)
		return false
	}
	require.True(t, draining("r1"))
	require.False(t, draining("r2"))
	page := get(t, h, "/runners")
	require.NotContains(t, page.Body.String(), `id="drain-r1"`, "a draining runner has no button")

	api := httptest.NewRequest("POST", "/v1/runners/r2/drain", nil)
	api.Host = "localhost:8080"
	rec = doReq(h, api)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.True(t, draining("r2"))
	api = httptest.NewRequest("POST", "/v1/runners/nobody/drain", nil)
	api.Host = "localhost:8080"
	require.Equal(t, http.StatusNotFound, doReq(h, api).Code)
}

// TestTenantsPage: the tenants page lists each tenant's settings, running
// tasks, work used and the graph of its last hour, and its form sets the
// fields filled in (the others kept), refusing a bad value with its
// message and changing nothing.
func TestTenantsPage(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	ctx := context.Background()
	require.NoError(t, store.SetTenantWeight(ctx, "acme", 3))
	srv, err := server.New(server.Config{}, server.Deps{Store: store})
	require.NoError(t, err)
	h := srv.Handler()
	wantPage(t, get(t, h, "/tenants"), http.StatusOK, `id="tenant-acme"`, `id="tenant-form"`, `href="/tenants"`,
		`<td id="throughput-tenant-acme"><span class="muted">–</span></td>`) // no attempt yet
	srv.ObserveAttemptEnd("default", "acme", "failed", time.Second, 10)
	wantPage(t, get(t, h, "/tenants"), http.StatusOK, `<td id="throughput-tenant-acme"><svg class="small-graph"`,
		"attempts of tenant acme recorded by this runner in the last hour: 0 succeeded, 1 not")

	rec := doReq(h, httptestPost(t, "/tenants", url.Values{"tenant": {"acme"}, "max_running": {"4"}, "work_quota": {"5000"}}))
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.Equal(t, "/tenants", rec.Header().Get("Location"))
	got, err := store.Tenants(ctx)
	require.NoError(t, err)
	require.Equal(t, tasks.Tenant{Weight: 3, SharedLimits: tasks.SharedLimits{MaxRunning: 4, WorkQuota: 5000, WorkPeriod: time.Hour}}, got["acme"], "a quota's period defaults to 1h")
	wantPage(t, get(t, h, "/tenants"), http.StatusOK, "0 of 5000 per 1h0m0s")

	rec = doReq(h, httptestPost(t, "/tenants", url.Values{"tenant": {"acme"}, "weight": {"0"}, "max_running": {"9"}}))
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	require.Contains(t, rec.Body.String(), "weight 0")
	got, err = store.Tenants(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, got["acme"].MaxRunning, "a refused form changes nothing")
}

// TestQueueLimitsPage: the tenants page lists the queues' limits, and its
// queue form sets those filled in (a quota's period 1h unless given),
// refuses a bad value or name without changing anything.
func TestQueueLimitsPage(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	ctx := context.Background()
	srv, err := server.New(server.Config{}, server.Deps{Store: store})
	require.NoError(t, err)
	h := srv.Handler()
	wantPage(t, get(t, h, "/tenants"), http.StatusOK, "No queue has a limit", `id="queue-limits-form"`)

	rec := doReq(h, httptestPost(t, "/tenants/queues", url.Values{"queue": {"slow"}, "max_running": {"4"}, "work_quota": {"5000"}}))
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.Equal(t, "/tenants", rec.Header().Get("Location"))
	rec = doReq(h, httptestPost(t, "/tenants/queues", url.Values{"queue": {"slow"}, "rate": {"2.5"}}))
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	got, err := store.QueueLimits(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]tasks.SharedLimits{"slow": {MaxRunning: 4, WorkQuota: 5000, WorkPeriod: time.Hour, Rate: 2.5, Tokens: 2.5}},
		got, "a quota's period defaults to 1h; fields left empty keep their value")
	wantPage(t, get(t, h, "/tenants"), http.StatusOK, `id="queue-slow"`, "0 of 5000 per 1h0m0s", "2.5/s")

	for _, bad := range []url.Values{
		{"queue": {"slow"}, "max_running": {"-1"}, "rate": {"1"}},
		{"queue": {"slow"}, "max_running": {"many"}},
		{"queue": {""}, "max_running": {"1"}},
	} {
		rec = doReq(h, httptestPost(t, "/tenants/queues", bad))
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, "%v", bad)
	}
	got, err = store.QueueLimits(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, got["slow"].MaxRunning, "a refused form changes nothing")
	require.Equal(t, 2.5, got["slow"].Rate)
}

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
