package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

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
