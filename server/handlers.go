package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/stint-run/stint/tasks"
)

// Paging limits of GET /v1/tasks.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// TaskView is a task as the API returns it (and `runner tasks ... --json`
// prints it): tasks.Task without its result bytes, which
// GET /v1/tasks/{id}/result serves raw; result_size gives their size.
type TaskView struct {
	tasks.Task
	// Result shadows Task.Result and is always nil, so "result" is left out.
	Result []byte `json:"result,omitempty"`
}

// ViewOf returns the API's view of t.
func ViewOf(t tasks.Task) TaskView { return TaskView{Task: t} }

// listResponse is the body of GET /v1/tasks.
type listResponse struct {
	Tasks []TaskView `json:"tasks"`
	// NextAfter is the after= of the next page; left out on the last page.
	NextAfter int64 `json:"next_after,omitempty"`
}

// attemptsResponse is the body of GET /v1/tasks/{id}/attempts.
type attemptsResponse struct {
	Attempts []tasks.Attempt `json:"attempts"`
}

// moduleResponse is the body of POST /v1/modules.
type moduleResponse struct {
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
}

// readinessResponse is the body of GET /readyz.
type readinessResponse struct {
	Ready bool `json:"ready"`
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, "ok")
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.deps.Ready() {
		writeJSON(w, http.StatusOK, readinessResponse{Ready: true})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, readinessResponse{Ready: false})
}

func (s *Server) putModule(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > s.cfg.MaxModuleBytes {
		s.writeError(w, r, &http.MaxBytesError{Limit: s.cfg.MaxModuleBytes})
		return
	}
	wasm, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxModuleBytes))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(wasm) == 0 {
		s.writeError(w, r, badRequest("the body is empty; send the module's wasm bytes"))
		return
	}
	if !looksLikeWasm(wasm) {
		s.writeError(w, r, badRequest("the body is not a WebAssembly binary module (no \\0asm version 1 header); send the .wasm bytes, not the .wat text"))
		return
	}
	sum, err := s.deps.Store.PutModule(r.Context(), wasm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, moduleResponse{SHA256: sum, Size: len(wasm)})
}

func (s *Server) submitTask(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > s.cfg.MaxModuleBytes {
		s.writeError(w, r, &http.MaxBytesError{Limit: s.cfg.MaxModuleBytes})
		return
	}
	spec, err := decodeSpec(http.MaxBytesReader(w, r.Body, s.cfg.MaxModuleBytes))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, existing, err := s.deps.Submit(r.Context(), spec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/tasks/%d", t.ID))
	code := http.StatusCreated
	if existing {
		code = http.StatusOK
	}
	writeJSON(w, code, ViewOf(t))
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	f, err := listFilter(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ts, err := s.deps.Store.List(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := listResponse{Tasks: make([]TaskView, 0, len(ts))}
	for _, t := range ts {
		resp.Tasks = append(resp.Tasks, ViewOf(t))
	}
	if len(ts) > 0 && len(ts) >= f.Limit {
		resp.NextAfter = ts[len(ts)-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
}

// listFilter reads state=, queue=, after= and limit= (1 to 1000, default
// 100).
func listFilter(r *http.Request) (tasks.ListFilter, error) {
	q := r.URL.Query()
	f := tasks.ListFilter{Queue: q.Get("queue"), Limit: defaultListLimit}
	if v := q.Get("state"); v != "" {
		f.State = tasks.State(v)
		if !f.State.Valid() {
			return f, badRequest("unknown state %q; want one of queued, running, succeeded, dead, cancelled", v)
		}
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return f, badRequest("after=%q: want a task id (an integer, 0 or more)", v)
		}
		f.AfterID = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return f, badRequest("limit=%q: want an integer from 1 to %d", v, maxListLimit)
		}
		f.Limit = n
	}
	return f, nil
}

// taskID reads the {id} path value: a positive integer.
func taskID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("task id %q: want a positive integer", v)
	}
	return id, nil
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.deps.Store.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(t))
}

func (s *Server) taskAttempts(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	as, err := s.deps.Store.Attempts(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if as == nil {
		as = []tasks.Attempt{}
	}
	writeJSON(w, http.StatusOK, attemptsResponse{Attempts: as})
}

func (s *Server) taskResult(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.deps.Store.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if t.State != tasks.StateSucceeded {
		s.writeError(w, r, fmt.Errorf("%w: task %d is %s; it has a result only once succeeded", tasks.ErrInvalidState, id, t.State))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(t.Result)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(t.Result)
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	s.taskAction(w, r, s.deps.Store.Cancel)
}

func (s *Server) retryTask(w http.ResponseWriter, r *http.Request) {
	s.taskAction(w, r, s.deps.Store.Retry)
}

// taskAction runs a store operation on the {id} task and returns the task.
func (s *Server) taskAction(w http.ResponseWriter, r *http.Request, op func(context.Context, int64) (tasks.Task, error)) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := op(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(t))
}
