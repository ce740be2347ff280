package server

import (
	"io"
	"net/http"
)

// StartingHandler answers the runner's HTTP address while the runner
// cannot serve the API yet (`runner serve` waiting for a store it cannot
// reach): GET /healthz 200 "ok" (the process lives, so an orchestrator's
// liveness probe does not restart it), GET /readyz 503 {"ready":false},
// GET /metrics the gauge stint_ready 0, and 503 {"error": reason} with
// Retry-After for anything else. It reads and serves nothing else: no
// task, module or dashboard page, so it needs no token.
func StartingHandler(reason string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, readinessResponse{Ready: false})
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, "# HELP stint_ready 1 while the runner is ready (takes new work), 0 while it starts or stops.\n"+
			"# TYPE stint_ready gauge\nstint_ready 0\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, errorResponse{Error: reason})
	})
	return mux
}
