package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// routes builds the handler: recovery, logging and metrics around the
// guards (Host, cross-origin, token, concurrency) around the mux, whose
// state-changing routes check their body's Content-Type, size and budget
// (withBody).
func (s *Server) routes(requests *prometheus.CounterVec) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		ErrorLog: zap.NewStdLog(s.log.Named("metrics")),
	}))

	mux.HandleFunc("POST /v1/modules", s.withBody(moduleBody, s.putModule))
	mux.HandleFunc("POST /v1/tasks", s.withBody(jsonBody, s.submitTask))
	mux.HandleFunc("GET /v1/tasks", s.listTasks)
	mux.HandleFunc("GET /v1/tasks/{id}", s.getTask)
	mux.HandleFunc("GET /v1/tasks/{id}/attempts", s.taskAttempts)
	mux.HandleFunc("GET /v1/tasks/{id}/input", s.taskInput)
	mux.HandleFunc("GET /v1/tasks/{id}/result", s.taskResult)
	mux.HandleFunc("POST /v1/tasks/{id}/cancel", s.withBody(noBody, s.cancelTask))
	mux.HandleFunc("POST /v1/tasks/{id}/retry", s.withBody(noBody, s.retryTask))
	mux.HandleFunc("GET /v1/runners", s.listRunners)
	mux.HandleFunc("POST /v1/runners/{owner}/drain", s.withBody(noBody, s.drainRunner))
	mux.HandleFunc("GET /v1/schedules", s.listSchedules)
	mux.HandleFunc("POST /v1/schedules", s.withBody(jsonBody, s.addSchedule))
	mux.HandleFunc("GET /v1/schedules/{name}", s.getSchedule)
	mux.HandleFunc("DELETE /v1/schedules/{name}", s.withBody(noBody, s.removeSchedule))
	mux.HandleFunc("POST /v1/schedules/{name}/pause", s.withBody(noBody, s.pauseSchedule))
	mux.HandleFunc("POST /v1/schedules/{name}/resume", s.withBody(noBody, s.resumeSchedule))
	mux.HandleFunc("POST /v1/schedules/{name}/run", s.withBody(noBody, s.runScheduleNow))
	mux.HandleFunc("DELETE /v1/tasks/{id}", s.withBody(noBody, s.deleteTask))
	mux.HandleFunc("POST /v1/tasks/bulk", s.withBody(jsonBody, s.bulkTasks))
	mux.HandleFunc("GET /v1/tenants", s.listTenants)
	mux.HandleFunc("POST /v1/tenants", s.withBody(jsonBody, s.setTenant))
	mux.HandleFunc("GET /v1/queues", s.listQueues)
	mux.HandleFunc("POST /v1/queues/{queue}/pause", s.withBody(noBody, s.pauseQueue))
	mux.HandleFunc("POST /v1/queues/{queue}/resume", s.withBody(noBody, s.resumeQueue))
	mux.HandleFunc("POST /v1/queues/{queue}/limits", s.withBody(jsonBody, s.setQueueLimits))
	mux.HandleFunc("POST /v1/sessions/revoke", s.withBody(noBody, s.revokeSessions))
	s.routeDashboard(mux)
	s.routeActions(mux)

	// Without a token the API is open to whoever reaches it, which Validate
	// allows on loopback only: then the Host must be loopback too.
	checkHost := s.cfg.Token == ""
	crossOrigin := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h, route := mux.Handler(r)
		if route == "" {
			route = "unmatched"
			// The mux's own 404, 405 and redirects, with a JSON body.
			h = jsonErrors(h)
		} else {
			h = mux
		}
		// The route label is the pattern's path: the method is a label
		// of its own.
		label := route
		if _, path, ok := strings.Cut(route, " "); ok {
			label = path
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panicked", zap.String("method", r.Method), zap.String("path", r.URL.Path),
					zap.Any("panic", v), zap.Stack("stack"))
				if sw.code == 0 {
					writeJSON(sw, http.StatusInternalServerError, errorResponse{Error: "internal server error (details are in the runner's log)"})
				}
			}
			requests.WithLabelValues(r.Method, label, strconv.Itoa(sw.status())).Inc()
			if ce := s.log.Check(zap.DebugLevel, "request"); ce != nil {
				ce.Write(zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.String("route", route),
					zap.Int("status", sw.status()), zap.Duration("took", time.Since(start)))
			}
		}()
		// Deadlines for requests without a body; withBody and hold extend
		// them to the sizes they handle.
		rc := http.NewResponseController(sw)
		_ = rc.SetReadDeadline(start.Add(transferGrace))
		_ = rc.SetWriteDeadline(start.Add(transferGrace + handlingTime))
		if checkHost && !hostAllowed(r.Host) {
			writeJSON(sw, http.StatusMisdirectedRequest, errorResponse{Error: fmt.Sprintf(
				"host %s is not a loopback name or address: without http.token the API answers only requests to "+
					"localhost, 127.0.0.1 or [::1] (this refuses web pages that rebind their DNS name to this machine); "+
					"use one of those, or set http.token", strconvQuote(r.Host))})
			return
		}
		if err := crossOrigin.Check(r); err != nil {
			writeJSON(sw, http.StatusForbidden, errorResponse{Error: "cross-origin request refused (Origin " +
				strconvQuote(r.Header.Get("Origin")) + ", Sec-Fetch-Site " + strconvQuote(r.Header.Get("Sec-Fetch-Site")) +
				"): a web page may not change tasks; call the API from a program, not a browser page of another site"})
			return
		}
		// The API is matched on the decoded path and, in case an escaped
		// form routes differently, on the route found as well.
		api := r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") || strings.Contains(route, " /v1/")
		if s.cfg.Token != "" && api {
			if !s.authorized(r, &s.tokenSum) {
				sw.Header().Set("WWW-Authenticate", `Bearer realm="stint"`)
				writeJSON(sw, http.StatusUnauthorized, errorResponse{Error: "missing or wrong bearer token (Authorization: Bearer <http.token>)"})
				return
			}
		}
		if s.cfg.Token != "" && !s.cfg.MetricsPublic && route == "GET /metrics" && !loopbackRemote(r.RemoteAddr) &&
			!s.authorized(r, &s.tokenSum) {
			sw.Header().Set("WWW-Authenticate", `Bearer realm="stint"`)
			writeJSON(sw, http.StatusUnauthorized, errorResponse{Error: "/metrics answers another machine only with the bearer token " +
				"(Authorization: Bearer <http.token>; Prometheus: authorization.credentials), or set http.metrics_public: true"})
			return
		}
		if api && route != "unmatched" {
			select {
			case s.slots <- struct{}{}:
				defer func() { <-s.slots }()
			default:
				s.refuseBusy(sw, r, inProgress(s.cfg.MaxConcurrent)+" (http.max_concurrent)")
				return
			}
		}
		h.ServeHTTP(sw, r)
	})
}

// authorized reports whether r carries the configured bearer token. Both
// sides are hashed first so that the comparison takes the same time
// whatever the token's length.
func (s *Server) authorized(r *http.Request, want *[sha256.Size]byte) bool {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// equalHashed compares got and want in constant time whatever their
// lengths (both are hashed first); an empty want matches nothing.
func equalHashed(got, want string) bool {
	if want == "" {
		return false
	}
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// jsonErrors wraps one of the mux's built-in handlers (404, 405, redirect)
// so that its plain-text body becomes {"error": "..."}; status and headers
// (Allow, Location) are kept.
func jsonErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jw := &jsonErrorWriter{w: w}
		h.ServeHTTP(jw, r)
		code := jw.code
		if code == 0 {
			code = http.StatusNotFound
		}
		msg := http.StatusText(code)
		switch code {
		case http.StatusNotFound:
			msg = "no such endpoint: " + r.URL.Path
		case http.StatusMethodNotAllowed:
			msg = "method " + r.Method + " not allowed on " + r.URL.Path + " (allowed: " + w.Header().Get("Allow") + ")"
		}
		w.Header().Del("Content-Length")
		writeJSON(w, code, errorResponse{Error: msg})
	})
}

// jsonErrorWriter records the status and drops the body.
type jsonErrorWriter struct {
	w    http.ResponseWriter
	code int
}

func (j *jsonErrorWriter) Header() http.Header { return j.w.Header() }
func (j *jsonErrorWriter) WriteHeader(code int) {
	if j.code == 0 {
		j.code = code
	}
}
func (j *jsonErrorWriter) Write(b []byte) (int, error) {
	if j.code == 0 {
		j.code = http.StatusOK
	}
	return len(b), nil
}
