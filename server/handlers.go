package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// Paging limits of GET /v1/tasks.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
	// maxListLabels caps the label= filters of a list.
	maxListLabels = 16
	// labelScanPage is how many tasks a labelled list reads at a time,
	// and labelScanAPI how many at most for one request.
	labelScanPage = 500
	labelScanAPI  = 10000
)

// TaskView is a task as the API returns it (and `runner tasks ... --json`
// prints it): tasks.Task without its input and result bytes, which
// GET /v1/tasks/{id}/input and /result serve raw; input_size and
// result_size give their sizes. A view stays small whatever a task
// carries.
type TaskView struct {
	tasks.Task
	// Throttled, for a ready task whose tenant or queue is held back by its limits
	// (GET /v1/tasks/{id} only), says why it waits and until when.
	Throttled *tasks.Throttle `json:"throttled,omitempty"`
	// Input shadows Task.Input and is always nil, so "input" is left out.
	Input []byte `json:"input,omitempty"`
	// Result shadows Task.Result and is always nil, so "result" is left out.
	Result []byte `json:"result,omitempty"`
}

// ViewOf returns the API's view of t (which keeps no reference to t's
// input and result bytes), its state the one shown (tasks.Task.Shown:
// "claimed" for a running task no worker of its runner began).
func ViewOf(t tasks.Task) TaskView {
	t.Input, t.Result = nil, nil
	t.State = t.Shown()
	return TaskView{Task: t}
}

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
	// Name is the name= given, kept with the module (tasks.Store.NameModule).
	Name string `json:"name,omitempty"`
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

// putModule stores a module, and the name of ?name= with it (a file name
// for people: lists show it instead of the hash). withBody has checked
// the Content-Type and capped the body.
func (s *Server) putModule(w http.ResponseWriter, r *http.Request) {
	wasm, err := readBody(r)
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
	name := r.URL.Query().Get("name")
	if name != "" {
		if err := tasks.CheckModuleName(name); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	sum, err := s.deps.Store.PutModule(r.Context(), wasm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if name != "" {
		if err := s.deps.Store.NameModule(r.Context(), sum, name); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusCreated, moduleResponse{SHA256: sum, Size: len(wasm), Name: name})
}

// submitTask queues a task. withBody has checked the Content-Type and
// capped the body.
func (s *Server) submitTask(w http.ResponseWriter, r *http.Request) {
	spec, err := parseSpec(r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, existing, err := s.deps.Submit(r.Context(), spec)
	spec = tasks.Spec{} // the input is no longer needed here
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
	labels, err := labelFilter(r.URL.Query()["label"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var ts []tasks.Task
	var next int64
	if len(labels) == 0 {
		if ts, err = s.deps.Store.List(r.Context(), f); err != nil {
			s.writeError(w, r, err)
			return
		}
		if len(ts) > 0 && len(ts) >= f.Limit {
			next = ts[len(ts)-1].ID
		}
	} else if ts, next, err = s.listLabelled(r.Context(), f, labels); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := listResponse{Tasks: make([]TaskView, 0, len(ts)), NextAfter: next}
	for _, t := range ts {
		resp.Tasks = append(resp.Tasks, ViewOf(t))
	}
	writeJSON(w, http.StatusOK, resp)
}

// labelFilter reads the label= values of a list ("key=value" each; a
// task must carry every one). A key given twice with two values matches
// nothing, and is refused.
func labelFilter(vs []string) (map[string]string, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	if len(vs) > maxListLabels {
		return nil, badRequest("label: %d given; at most %d", len(vs), maxListLabels)
	}
	out := make(map[string]string, len(vs))
	for _, v := range vs {
		k, val, err := tasks.ParseLabel(v)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		if prev, ok := out[k]; ok && prev != val {
			return nil, badRequest("label %q given twice with two values (%q and %q)", k, prev, val)
		}
		out[k] = val
	}
	return out, nil
}

// listLabelled is List for the tasks carrying every label of labels.
// Labels are in no index: it reads pages of f's state and queue by id and
// keeps the matching tasks, reading at most labelScanAPI tasks a request.
// next is the after= of the next page: the last task returned when the
// page is full, the last task read when the read cap stopped it (the page
// may then hold fewer than f.Limit tasks, or none), 0 at the end.
func (s *Server) listLabelled(ctx context.Context, f tasks.ListFilter, labels map[string]string) (ts []tasks.Task, next int64, err error) {
	want := tasks.BulkFilter{Labels: labels}
	after, scanned := f.AfterID, 0
	for {
		page, err := s.deps.Store.List(ctx, tasks.ListFilter{State: f.State, Queue: f.Queue, AfterID: after, Limit: labelScanPage})
		if err != nil {
			return nil, 0, err
		}
		for _, t := range page {
			after = t.ID
			if want.Matches(t) {
				ts = append(ts, t)
				if len(ts) == f.Limit {
					return ts, after, nil
				}
			}
		}
		scanned += len(page)
		if len(page) < labelScanPage {
			return ts, 0, nil
		}
		if scanned >= labelScanAPI {
			return ts, after, nil
		}
	}
}

// listFilter reads state=, queue=, after= and limit= (1 to 1000, default
// 100); label= is labelFilter's.
func listFilter(r *http.Request) (tasks.ListFilter, error) {
	q := r.URL.Query()
	f := tasks.ListFilter{Queue: q.Get("queue"), Limit: defaultListLimit}
	if v := q.Get("state"); v != "" {
		f.State = tasks.State(v)
		if !f.State.Valid() && f.State != tasks.StateClaimed {
			return f, badRequest("unknown state %q; want one of queued, claimed, running, succeeded, dead, cancelled", v)
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

// head returns task id without its input and result bytes (their sizes
// are set), or an error wrapping tasks.ErrNotFound. Store.Get reads both
// whole; Store.List leaves them out, and a list of one task from id-1 on is
// that task.
func (s *Server) head(ctx context.Context, id int64) (tasks.Task, error) {
	ts, err := s.deps.Store.List(ctx, tasks.ListFilter{AfterID: id - 1, Limit: 1})
	if err != nil {
		return tasks.Task{}, err
	}
	if len(ts) == 0 || ts[0].ID != id {
		return tasks.Task{}, fmt.Errorf("task %d: %w", id, tasks.ErrNotFound)
	}
	return ts[0], nil
}

// blobs is what the store reads whole along with task t (Get, Cancel and
// Retry return it with its input and result).
func blobs(t tasks.Task) int64 { return int64(t.InputSize) + int64(t.ResultSize) }

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, ok := s.requestedHead(w, r)
	if !ok {
		return
	}
	v := ViewOf(t)
	v.Throttled = s.throttle(r.Context(), t)
	writeJSON(w, http.StatusOK, v)
}

// throttle says why the ready task t waits on its tenant's limits or its
// queue's (nil: it does not, or the store could not say). The tenants and
// the queues it reads are at most limitsFresh old (limitsNow).
func (s *Server) throttle(ctx context.Context, t tasks.Task) *tasks.Throttle {
	now := time.Now()
	if t.State != tasks.StateQueued || t.RunAt.After(now) {
		return nil // not ready: no tenant holds it back, and no store read
	}
	tenants, err := s.tenantsNow.get(now, func() (map[string]tasks.Tenant, error) { return s.deps.Store.Tenants(ctx) })
	if err != nil {
		return nil
	}
	queues, err := s.queuesNow.get(now, func() (map[string]tasks.SharedLimits, error) { return s.deps.Store.QueueLimits(ctx) })
	if err != nil {
		return nil
	}
	return tasks.TaskThrottle(t, tenants, queues, now)
}

// limitsFresh is how long throttle reuses what the store said of the
// tenants and the queues: each read counts the whole backlog by tenant
// or by queue, and a client polling a queued task would make it at every
// poll. A task's "throttled" is then up to this late.
const limitsFresh = time.Second

// limitsNow keeps the last value fetch returned for limitsFresh (an
// error is not kept, and a change made through this server drops it:
// limitsChanged); the maps it holds are only read.
type limitsNow[T any] struct {
	mu  sync.Mutex
	at  time.Time
	ok  bool
	val T
}

// get returns the value kept, if it was fetched within limitsFresh of
// now, else fetch's.
func (c *limitsNow[T]) get(now time.Time, fetch func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && !now.Before(c.at) && now.Sub(c.at) < limitsFresh {
		return c.val, nil
	}
	v, err := fetch()
	if err != nil {
		return v, err
	}
	c.val, c.at, c.ok = v, now, true
	return v, nil
}

// drop forgets the value kept.
func (c *limitsNow[T]) drop() {
	c.mu.Lock()
	c.ok = false
	c.mu.Unlock()
}

// limitsChanged is called once this server has changed a tenant's
// settings or a queue's limits: throttle reads them afresh.
func (s *Server) limitsChanged() {
	s.tenantsNow.drop()
	s.queuesNow.drop()
}

// requestedHead returns the head (see head) of the task the request's
// {id} names. On an error it writes the error response and returns false.
func (s *Server) requestedHead(w http.ResponseWriter, r *http.Request) (tasks.Task, bool) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return tasks.Task{}, false
	}
	t, err := s.head(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return tasks.Task{}, false
	}
	return t, true
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

// taskInput serves a task's input, raw, in any state.
func (s *Server) taskInput(w http.ResponseWriter, r *http.Request) {
	s.serveBlob(w, r, "input", func(t tasks.Task) ([]byte, int, error) { return t.Input, t.InputSize, nil })
}

// taskResult serves a succeeded task's stdout, raw.
func (s *Server) taskResult(w http.ResponseWriter, r *http.Request) {
	s.serveBlob(w, r, "result", func(t tasks.Task) ([]byte, int, error) {
		if t.State != tasks.StateSucceeded {
			return nil, 0, fmt.Errorf("%w: task %d is %s; it has a result only once succeeded", tasks.ErrInvalidState, t.ID, t.State)
		}
		return t.Result, t.ResultSize, nil
	})
}

// serveBlob serves the bytes pick returns from the {id} task (from a task
// without its bytes for a HEAD request, with them otherwise) as
// application/octet-stream with their Content-Length. The store reads a
// task's input and result whole: their sizes are held in the budget while
// they are sent.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request, what string, pick func(tasks.Task) ([]byte, int, error)) {
	t, ok := s.requestedHead(w, r)
	if !ok {
		return
	}
	id := t.ID
	if _, size, err := pick(t); err != nil || r.Method == http.MethodHead {
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		blobHeaders(w, size)
		w.WriteHeader(http.StatusOK)
		return
	}
	held := blobs(t)
	if !s.hold(w, r, held) {
		return
	}
	defer func() { s.inflight.release(held) }()
	t, err := s.deps.Store.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if n := blobs(t); n > held { // it changed in between (a retried task succeeded)
		s.inflight.force(n - held)
		held = n
	}
	b, _, err := pick(t)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t = tasks.Task{}
	blobHeaders(w, len(b))
	w.WriteHeader(http.StatusOK)
	// Written in pieces, so that a slow reader meets the write deadline
	// piece by piece rather than all at once.
	for len(b) > 0 {
		n := min(len(b), 1<<20)
		if _, err := w.Write(b[:n]); err != nil {
			s.log.Debug("sending a task's bytes failed", zap.Int64("task", id), zap.String("what", what), zap.Error(err))
			return
		}
		b = b[n:]
	}
}

// blobHeaders sets the headers of raw task bytes.
func blobHeaders(w http.ResponseWriter, size int) {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(size))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	s.taskAction(w, r, s.deps.Store.Cancel)
}

func (s *Server) retryTask(w http.ResponseWriter, r *http.Request) {
	s.taskAction(w, r, s.deps.Store.Retry)
}

// taskAction runs a store operation on the {id} task and returns the task.
// The operation returns the task with its input and result, read whole:
// their sizes are held in the budget meanwhile.
func (s *Server) taskAction(w http.ResponseWriter, r *http.Request, op func(context.Context, int64) (tasks.Task, error)) {
	h, ok := s.requestedHead(w, r)
	if !ok {
		return
	}
	id := h.ID
	held := blobs(h)
	if !s.hold(w, r, held) {
		return
	}
	defer s.inflight.release(held)
	t, err := op(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(t))
}
