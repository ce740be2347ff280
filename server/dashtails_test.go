package server_test

import (
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
// tasks, work used and the graph of its last hour, and its form sets the fields filled in (the others
// kept), refusing a bad value with its message and changing nothing.
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
