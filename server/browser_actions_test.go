package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
)

// TestDashboardActionsInBrowser clicks the dashboard's forms in headless
// Chromium against a real `runner serve` with a token: pause and resume a
// queue (its task waits, then runs), retry a dead task from its page,
// delete by the bulk form (the count first, then the confirmation), add a
// schedule by its form, and a form on another site's page, refused. It also sees a scheduled task with
// its time and a module by its name.
func TestDashboardActionsInBrowser(t *testing.T) {
	chromium := browserChromium(t)
	t.Parallel()
	const token = "browser-actions-token-0123456789"
	_, a := serveWithToken(t, token)
	base := a.base

	var named moduleBody
	require.Equal(t, http.StatusCreated, a.call(http.MethodPost, "/v1/modules?name=nightly-report.wasm", "application/wasm", wat.MustLoad("noop"), &named))
	noop, fail := named.SHA256, a.module("seams_stderr_fail")
	dead := a.submit(map[string]any{"module": fail, "max_attempts": 1, "labels": map[string]string{"job": "flaky"}})
	a.await(dead.ID, "dead", func(tk childTask) bool { return tk.State == "dead" })
	a.submit(map[string]any{"module": noop, "run_at": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)})

	b := startCDP(t, browser{t: t, path: chromium, shots: artifactDir(t)})
	// Sign in with the token once: the cookie is the browser's from now on.
	b.navigate(base + "/?token=" + token)
	b.waitText("the overview", "Tasks by queue and state")

	// The list: the module by its name, the scheduled task with its time.
	b.navigate(base + "/tasks")
	html := b.waitText("the task list", "nightly-report.wasm")
	require.Contains(t, html, "scheduled")
	require.Contains(t, html, time.Now().Add(10*time.Minute).UTC().Format("2006-01-02"))
	require.NotContains(t, strings.ToLower(html), "<script")

	// Pause a queue from the overview: its new task waits while another
	// queue's runs; resumed, it runs.
	// A scheduled task makes the queue show, with its Pause button.
	held := a.submit(map[string]any{"module": noop, "queue": "hold", "run_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	b.navigate(base + "/")
	b.waitText("the queue hold on the overview", "hold")
	b.click("#pause-hold")
	b.waitText("the queue shown paused", "paused")
	var qs queuesBody
	require.Equal(t, http.StatusOK, a.call(http.MethodGet, "/v1/queues", "", nil, &qs))
	paused := map[string]bool{}
	for _, q := range qs.Queues {
		paused[q.Queue] = q.Paused
	}
	require.True(t, paused["hold"], "the click did not pause the queue: %+v", qs)
	// Make the held task ready now: delete the scheduled one and submit again.
	require.Equal(t, http.StatusOK, a.call(http.MethodDelete, fmt.Sprintf("/v1/tasks/%d", held.ID), "", nil, nil))
	held = a.submit(map[string]any{"module": noop, "queue": "hold"})
	other := a.submit(map[string]any{"module": noop, "queue": "other"})
	a.await(other.ID, "succeeded", func(tk childTask) bool { return tk.State == "succeeded" })
	var tk childTask
	a.call(http.MethodGet, fmt.Sprintf("/v1/tasks/%d", held.ID), "", nil, &tk)
	require.Equal(t, "queued", tk.State, "a task of the paused queue ran")
	b.navigate(base + "/")
	b.waitText("the overview", "Resume")
	b.click("#resume-hold")
	a.await(held.ID, "succeeded once its queue resumed", func(tk childTask) bool { return tk.State == "succeeded" })

	// Retry the dead task from its page: it runs again (and fails again).
	b.navigate(fmt.Sprintf("%s/tasks/%d", base, dead.ID))
	b.waitText("the dead task's page", "Retry")
	b.click("#action-retry")
	a.await(dead.ID, "dead after a second attempt", func(tk childTask) bool {
		var full struct {
			State   string `json:"state"`
			Attempt int    `json:"attempt"`
		}
		a.call(http.MethodGet, fmt.Sprintf("/v1/tasks/%d", dead.ID), "", nil, &full)
		return full.State == "dead" && full.Attempt == 2
	})

	// Bulk delete of the dead tasks: the count, nothing done; then done.
	b.navigate(base + "/tasks?state=dead")
	b.waitText("the dead tasks", "Count")
	b.setValue(`#bulk-form select[name="action"]`, "delete")
	b.click("#bulk-submit")
	b.waitText("the count", "1 task matches")
	require.Equal(t, http.StatusOK, a.call(http.MethodGet, fmt.Sprintf("/v1/tasks/%d", dead.ID), "", nil, nil), "the count deleted")
	b.click("#bulk-confirm")
	b.waitText("the bulk result", "1 task done (delete)")
	require.Equal(t, http.StatusNotFound, a.call(http.MethodGet, fmt.Sprintf("/v1/tasks/%d", dead.ID), "", nil, nil))

	// Add a schedule from its form: stored with its fields, and listed.
	b.navigate(base + "/schedules")
	b.waitText("the schedules page", "Add a schedule")
	b.click("#schedule-new")
	b.waitText("the schedule form", "Add the schedule")
	for field, v := range map[string]string{`input[name="name"]`: "hourly-report", `input[name="module"]`: noop,
		`input[name="every"]`: "1h", `input[name="queue"]`: "reports", `textarea[name="labels"]`: "team=data"} {
		b.setValue("#schedule-form "+field, v)
	}
	b.click("#schedule-add")
	b.waitText("the new schedule listed", "every 1h0m0s")
	var sc struct {
		Name  string `json:"name"`
		Every string `json:"every"`
		Spec  struct {
			Queue  string            `json:"queue"`
			Labels map[string]string `json:"labels"`
		} `json:"spec"`
	}
	require.Equal(t, http.StatusOK, a.call(http.MethodGet, "/v1/schedules/hourly-report", "", nil, &sc))
	require.Equal(t, "1h0m0s", sc.Every)
	require.Equal(t, "reports", sc.Spec.Queue)
	require.Equal(t, map[string]string{"team": "data"}, sc.Spec.Labels)

	// Another site's page posting to the dashboard is refused.
	evil := filepath.Join(t.TempDir(), "evil.html")
	require.NoError(t, os.WriteFile(evil, []byte(`<!doctype html><form method="post" action="`+base+`/queues/other/pause"></form>`+
		`<script>document.forms[0].submit()</script>`), 0o644))
	b.navigate("file://" + evil)
	b.waitText("the refusal", "cross-origin request refused")
	require.Equal(t, http.StatusOK, a.call(http.MethodGet, "/v1/queues", "", nil, &qs))
	for _, q := range qs.Queues {
		require.False(t, q.Paused, "queue %s paused by another site's form", q.Queue)
	}
}
