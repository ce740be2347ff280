package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
)

// TestStartingHandler: alive, not ready, and nothing else served.
func TestStartingHandler(t *testing.T) {
	t.Parallel()
	h := server.StartingHandler("waiting for the store")
	get := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	w := get("GET", "/healthz")
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "ok", w.Body.String())
	w = get("GET", "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.JSONEq(t, `{"ready":false}`, w.Body.String())
	w = get("GET", "/metrics")
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), "\nstint_ready 0\n")
	for _, r := range [][2]string{{"GET", "/v1/tasks"}, {"POST", "/v1/tasks"}, {"GET", "/"}, {"GET", "/tasks/1"}} {
		w = get(r[0], r[1])
		require.Equal(t, http.StatusServiceUnavailable, w.Code, r)
		require.JSONEq(t, `{"error":"waiting for the store"}`, w.Body.String(), r)
		require.NotEmpty(t, w.Header().Get("Retry-After"), r)
	}
}
