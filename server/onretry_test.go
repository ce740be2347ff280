package server_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestAPIOnRetry: a spec's on_retry (restart or resume; absent: "", which
// resumes) is stored with the task and shown by POST and GET
// /v1/tasks/{id}; any other value is refused (422) naming the field, and
// nothing is queued.
func TestAPIOnRetry(t *testing.T) {
	t.Parallel()
	st, mod := noopStore(t, sqlite.Options{})
	c, _ := newClient(t, server.Config{}, server.Deps{Store: st})
	ctx := context.Background()

	wantError(t, c.do("POST", "/v1/tasks", []byte(`{"module":"`+mod+`","on_retry":"never"}`)), http.StatusUnprocessableEntity, "on_retry")
	none, err := st.List(ctx, tasks.ListFilter{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, none, "a refused spec is not queued")

	for _, v := range []string{tasks.OnRetryRestart, tasks.OnRetryResume, ""} {
		body := `{"module":"` + mod + `"}`
		if v != "" {
			body = `{"module":"` + mod + `","on_retry":"` + v + `"}`
		}
		rec := c.do("POST", "/v1/tasks", []byte(body))
		want(t, rec, http.StatusCreated)
		posted := decode[map[string]any](t, rec)
		id := int64(posted["id"].(float64))
		stored, err := st.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, v, stored.OnRetry, "on_retry %q", v)

		rec = c.do("GET", "/v1/tasks/"+strconv.FormatInt(id, 10), nil)
		want(t, rec, http.StatusOK)
		got := decode[map[string]any](t, rec)
		for _, view := range []map[string]any{posted, got} {
			if v == "" {
				require.NotContains(t, view, "on_retry")
			} else {
				require.Equal(t, v, view["on_retry"])
			}
		}
	}
}
