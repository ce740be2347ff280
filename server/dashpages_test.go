package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
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
// tasks and work used, and its form sets the fields filled in (the others
// kept), refusing a bad value with its message and changing nothing.
func TestTenantsPage(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	ctx := context.Background()
	require.NoError(t, store.SetTenantWeight(ctx, "acme", 3))
	srv, err := server.New(server.Config{}, server.Deps{Store: store})
	require.NoError(t, err)
	h := srv.Handler()
	wantPage(t, get(t, h, "/tenants"), http.StatusOK, `id="tenant-acme"`, `id="tenant-form"`, `href="/tenants"`)

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
