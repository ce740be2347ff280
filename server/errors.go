package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// errBadRequest marks input the server refuses before the store sees it:
// malformed JSON, a bad id or query parameter, bytes that are not wasm.
var errBadRequest = errors.New("bad request")

// badRequest returns an error wrapping errBadRequest; its message is the
// formatted text alone.
func badRequest(format string, a ...any) error {
	return &requestError{msg: fmt.Sprintf(format, a...)}
}

type requestError struct{ msg string }

func (e *requestError) Error() string        { return e.msg }
func (e *requestError) Is(target error) bool { return target == errBadRequest }

// errorResponse is the body of every error: {"error": "..."}.
type errorResponse struct {
	Error string `json:"error"`
}

// statusOf maps an error to its HTTP status.
func statusOf(err error) int {
	var tooBig *http.MaxBytesError
	var overCap *tasks.LimitError
	switch {
	case errors.As(err, &tooBig), errors.As(err, &overCap):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, errUnsupportedMedia):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, errBusy):
		return http.StatusServiceUnavailable
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, tasks.ErrModuleNotFound), errors.Is(err, tasks.ErrScheduleNotFound),
		errors.Is(err, tasks.ErrRunnerNotFound):
		return http.StatusNotFound
	case errors.Is(err, tasks.ErrScheduleExists), errors.Is(err, tasks.ErrTooManySchedules):
		return http.StatusConflict
	case errors.Is(err, tasks.ErrInvalidSchedule):
		return http.StatusUnprocessableEntity
	case errors.Is(err, tasks.ErrInvalidState), errors.Is(err, tasks.ErrStaleLease):
		return http.StatusConflict
	case errors.Is(err, tasks.ErrInvalidSpec):
		return http.StatusUnprocessableEntity
	case errors.Is(err, tasks.ErrLocked), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError writes err as {"error": "..."} with its status. A server-side
// failure (5xx) is logged in full and answered with a short message, so
// that store internals (paths, SQL) do not leak to clients.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	msg := err.Error()
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		msg = fmt.Sprintf("request body is over the limit of %d bytes", tooBig.Limit)
	}
	if code >= 500 {
		s.log.Error("request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path),
			zap.Int("status", code), zap.Error(err))
		switch code {
		case http.StatusServiceUnavailable:
			msg = "service unavailable: " + err.Error()
		case http.StatusNotImplemented:
			msg = err.Error()
		default:
			msg = "internal server error (details are in the runner's log)"
		}
	}
	writeJSON(w, code, errorResponse{Error: msg})
}

// writeJSON writes v as JSON with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(errorResponse{Error: "encode response: " + err.Error()})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
