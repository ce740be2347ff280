package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

type bulkBody struct {
	Action  string `json:"action"`
	Matched int    `json:"matched"`
	Done    int    `json:"done"`
	DryRun  bool   `json:"dry_run"`
}

type queuesBody struct {
	Queues []server.QueueView `json:"queues"`
}

// TestAPIActions: delete, bulk by filter (a dry run first), queue pause
// and resume, each refused without the token.
func TestAPIActions(t *testing.T) {
	t.Parallel()
	st, ids := dashStore(t)
	c, _ := newClient(t, server.Config{Token: "tok"}, server.Deps{Store: st})
	send := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = "localhost:8080"
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		return doReq(c.h, req)
	}
	dead := ids[tasks.StateDead]

	// Without the token every action is refused and changes nothing.
	c.token = ""
	for _, r := range []struct{ method, path, body string }{
		{"DELETE", fmt.Sprintf("/v1/tasks/%d", dead), ""},
		{"POST", "/v1/tasks/bulk", `{"action":"retry","state":"dead"}`},
		{"POST", "/v1/queues/video/pause", ""},
		{"POST", "/v1/queues/video/resume", ""},
		{"GET", "/v1/queues", ""},
	} {
		wantError(t, send(r.method, r.path, r.body), http.StatusUnauthorized, "bearer token")
	}
	c.token = "tok"
	require.Equal(t, tasks.StateDead, getState(t, st, dead))

	// Bulk: the dry run counts, then the act.
	rec := send("POST", "/v1/tasks/bulk", `{"action":"retry","state":"dead","dry_run":true}`)
	want(t, rec, http.StatusOK)
	require.Equal(t, bulkBody{Action: "retry", Matched: 1, DryRun: true}, decode[bulkBody](t, rec))
	require.Equal(t, tasks.StateDead, getState(t, st, dead))
	rec = send("POST", "/v1/tasks/bulk", `{"action":"retry","labels":{"job":"<script>alert(\"x\")</script>"},"older_than":"1ns"}`)
	want(t, rec, http.StatusOK)
	require.Equal(t, bulkBody{Action: "retry", Matched: 1, Done: 1}, decode[bulkBody](t, rec))
	require.Equal(t, tasks.StateQueued, getState(t, st, dead))
	wantError(t, send("POST", "/v1/tasks/bulk", `{"action":"retry"}`), http.StatusBadRequest, "needs a filter")
	wantError(t, send("POST", "/v1/tasks/bulk", `{"action":"explode","all":true}`), http.StatusBadRequest, "unknown action")
	wantError(t, send("POST", "/v1/tasks/bulk", `{"action":"retry","older_than":"soon"}`), http.StatusBadRequest, "older_than")
	wantError(t, send("POST", "/v1/tasks/bulk", `{"action":"retry","state":"nope"}`), http.StatusBadRequest, "unknown state")
	wantError(t, send("POST", "/v1/tasks/bulk", `{"action":"retry","bogus":1}`), http.StatusBadRequest, "unknown field")

	// Delete one: not a running one.
	wantError(t, send("DELETE", fmt.Sprintf("/v1/tasks/%d", ids[tasks.StateRunning]), ""), http.StatusConflict, "running")
	rec = send("DELETE", fmt.Sprintf("/v1/tasks/%d", ids[tasks.StateCancelled]), "")
	want(t, rec, http.StatusOK)
	require.JSONEq(t, fmt.Sprintf(`{"deleted":%d}`, ids[tasks.StateCancelled]), rec.Body.String())
	wantError(t, send("DELETE", fmt.Sprintf("/v1/tasks/%d", ids[tasks.StateCancelled]), ""), http.StatusNotFound, "not found")

	// Pause: listed, honoured, resumed. No state change on GET.
	want(t, send("GET", "/v1/queues/video/pause", ""), http.StatusMethodNotAllowed)
	rec = send("POST", "/v1/queues/default/pause", "")
	want(t, rec, http.StatusOK)
	require.JSONEq(t, `{"queue":"default","paused":true}`, rec.Body.String())
	qs := decode[queuesBody](t, send("GET", "/v1/queues", ""))
	require.Len(t, qs.Queues, 2)
	require.Equal(t, "default", qs.Queues[0].Queue)
	require.True(t, qs.Queues[0].Paused)
	require.Equal(t, int64(1), qs.Queues[0].Counts[tasks.StateSucceeded])
	require.False(t, qs.Queues[1].Paused)
	cl, err := st.Claim(t.Context(), tasks.ClaimRequest{Owner: "b", Max: 10, Lease: 60e9})
	require.NoError(t, err)
	require.Empty(t, cl, "the retried task of the paused queue was claimed")
	want(t, send("POST", "/v1/queues/default/resume", ""), http.StatusOK)
	cl, err = st.Claim(t.Context(), tasks.ClaimRequest{Owner: "b", Max: 10, Lease: 60e9})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, dead, cl[0].Task.ID)
	wantError(t, send("POST", "/v1/queues/"+strings.Repeat("q", 200)+"/pause", ""), http.StatusUnprocessableEntity, "queue name")
}

func getState(t *testing.T, st tasks.Store, id int64) tasks.State {
	t.Helper()
	tk, err := st.Get(t.Context(), id)
	require.NoError(t, err)
	return tk.State
}

// TestDashboardActions: the forms POST; without the session, from another
// site, or by GET nothing changes; the bulk form counts before it acts.
func TestDashboardActions(t *testing.T) {
	t.Parallel()
	const token = "dash-token"
	st, ids := dashStore(t)
	h := dashHandler(t, server.Config{Addr: "0.0.0.0:8080", Token: token}, st)
	cookie := sessionOf(t, get(t, h, "/?token="+token))
	session := cookie.Name + "=" + cookie.Value
	post := func(path string, form url.Values, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
		req.Host = "runner.example:8080"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return doReq(h, req)
	}
	sameSite := []string{"Cookie", session, "Sec-Fetch-Site", "same-origin", "Origin", "http://runner.example:8080"}
	dead := ids[tasks.StateDead]
	retry := fmt.Sprintf("/tasks/%d/retry", dead)

	// The task's page offers the actions its state allows, as forms.
	body := wantPage(t, get(t, h, fmt.Sprintf("/tasks/%d", dead), "Cookie", session), http.StatusOK,
		`<form method="post" action="`+retry+`">`, `id="action-delete"`)
	require.NotContains(t, body, `id="action-cancel"`)

	wantPage(t, post(retry, nil), http.StatusUnauthorized, `action="/login"`)
	wantPage(t, post(retry, nil, "Cookie", cookie.Name+"=forged"), http.StatusUnauthorized)
	rec := post(retry, nil, "Cookie", session, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Equal(t, http.StatusMethodNotAllowed, get(t, h, retry, "Cookie", session).Code)
	require.Equal(t, tasks.StateDead, getState(t, st, dead))

	rec = post(retry, nil, sameSite...)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.Equal(t, fmt.Sprintf("/tasks/%d", dead), rec.Header().Get("Location"))
	require.Equal(t, tasks.StateQueued, getState(t, st, dead))
	// The same again: the state does not allow it, a page says so.
	wantPage(t, post(retry, nil, sameSite...), http.StatusConflict, "not allowed")

	rec = post(fmt.Sprintf("/tasks/%d/delete", ids[tasks.StateSucceeded]), nil, sameSite...)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	_, err := st.Get(t.Context(), ids[tasks.StateSucceeded])
	require.ErrorIs(t, err, tasks.ErrNotFound)

	// Bulk: the count first, nothing done; then the confirmation.
	form := url.Values{"action": {"cancel"}, "queue": {"default"}}
	body = wantPage(t, post("/tasks/bulk", form, sameSite...), http.StatusOK, "cancel the tasks with queue default", "<strong>2</strong> tasks match", `name="confirm" value="yes"`)
	require.Contains(t, body, `<input type="hidden" name="queue" value="default">`)
	require.Equal(t, tasks.StateQueued, getState(t, st, ids[tasks.StateQueued]))
	form.Set("confirm", "yes")
	wantPage(t, post("/tasks/bulk", form, sameSite...), http.StatusOK, "2 tasks done (cancel)")
	require.Equal(t, tasks.StateCancelled, getState(t, st, ids[tasks.StateQueued]))
	wantPage(t, post("/tasks/bulk", url.Values{"action": {"retry"}}, sameSite...), http.StatusBadRequest, "needs a filter")
	wantPage(t, post("/tasks/bulk", url.Values{"action": {"retry"}, "label": {"nokey"}}, sameSite...), http.StatusBadRequest, "key=value")

	// Pause from the overview: shown there, stored.
	wantPage(t, get(t, h, "/", "Cookie", session), http.StatusOK, `action="/queues/video/pause"`)
	rec = post("/queues/video/pause", nil, sameSite...)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	wantPage(t, get(t, h, "/", "Cookie", session), http.StatusOK, `id="paused-video"`, `action="/queues/video/resume"`)
	ps, err := st.PausedQueues(t.Context())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, http.StatusForbidden, post("/queues/video/resume", nil, "Cookie", session, "Sec-Fetch-Site", "cross-site").Code)
	require.Equal(t, http.StatusSeeOther, post("/queues/video/resume", nil, sameSite...).Code)
	ps, err = st.PausedQueues(t.Context())
	require.NoError(t, err)
	require.Empty(t, ps)
}

// TestDashboardActionsWithoutToken: without a token the forms answer
// loopback Hosts only, and never another site's page.
func TestDashboardActionsWithoutToken(t *testing.T) {
	t.Parallel()
	st, ids := dashStore(t)
	h := dashHandler(t, server.Config{}, st)
	retry := fmt.Sprintf("/tasks/%d/retry", ids[tasks.StateDead])
	post := func(host string, hdr ...string) int {
		req := httptest.NewRequest(http.MethodPost, retry, strings.NewReader(""))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return doReq(h, req).Code
	}
	require.Equal(t, http.StatusMisdirectedRequest, post("evil.example:8080"))
	require.Equal(t, http.StatusForbidden, post("127.0.0.1:8080", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"))
	require.Equal(t, tasks.StateDead, getState(t, st, ids[tasks.StateDead]))
	require.Equal(t, http.StatusSeeOther, post("127.0.0.1:8080", "Sec-Fetch-Site", "same-origin", "Origin", "http://127.0.0.1:8080"))
	require.Equal(t, tasks.StateQueued, getState(t, st, ids[tasks.StateDead]))
}
