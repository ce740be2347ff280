package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/stint-run/stint/tasks"
)

// The operator's actions of the API: delete a task, act on many by filter
// (a dry run counts them first), pause and resume a queue, list the
// queues. Retry and cancel of one task are in handlers.go.

// maxBulkBody caps the body of POST /v1/tasks/bulk.
const maxBulkBody = 64 << 10

// BulkRequest is the body of POST /v1/tasks/bulk: an action and the filter
// that selects its tasks. OlderThan is a duration ("1h", "30m"): tasks last
// changed longer ago than it. A request that sets no filter needs All.
// With DryRun the answer counts the tasks and changes nothing: a client
// shows the count, then sends the same request without DryRun.
type BulkRequest struct {
	Action    string            `json:"action"`
	State     string            `json:"state,omitempty"`
	Queue     string            `json:"queue,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	OlderThan string            `json:"older_than,omitempty"`
	All       bool              `json:"all,omitempty"`
	DryRun    bool              `json:"dry_run,omitempty"`
}

// Filter turns the request into the action and filter of tasks.Bulk, now
// being the time older_than counts back from.
func (b BulkRequest) Filter(now time.Time) (tasks.Action, tasks.BulkFilter, error) {
	a, err := tasks.ParseAction(b.Action)
	if err != nil {
		return "", tasks.BulkFilter{}, badRequest("%v", err)
	}
	f := tasks.BulkFilter{State: tasks.State(b.State), Queue: b.Queue, Labels: b.Labels, All: b.All}
	if b.OlderThan != "" {
		d, err := time.ParseDuration(b.OlderThan)
		if err != nil || d <= 0 {
			return "", f, badRequest("older_than %q: want a positive duration such as 30m or 1h", b.OlderThan)
		}
		f.Before = now.Add(-d)
	}
	if err := f.Check(); err != nil {
		return "", f, badRequest("%s", strings.TrimPrefix(err.Error(), tasks.ErrInvalidSpec.Error()+": "))
	}
	return a, f, nil
}

// QueueView is one queue of GET /v1/queues: its counts by state (the
// states with tasks), whether it is paused, and its limits. A queue is
// listed when it holds tasks, is paused or has a limit.
type QueueView struct {
	Queue    string                `json:"queue"`
	Paused   bool                  `json:"paused"`
	PausedAt time.Time             `json:"paused_at,omitzero"`
	Counts   map[tasks.State]int64 `json:"counts"`
	// Limits are the queue's limits across every runner and what counts
	// against them (tasks.Store's QueueLimits), for a queue with one.
	Limits *tasks.SharedLimits `json:"limits,omitempty"`
}

// queuesResponse is the body of GET /v1/queues.
type queuesResponse struct {
	Queues []QueueView `json:"queues"`
}

// deletedResponse is the body of DELETE /v1/tasks/{id}.
type deletedResponse struct {
	Deleted int64 `json:"deleted"`
}

// pauseResponse is the body of POST /v1/queues/{queue}/pause and /resume.
type pauseResponse struct {
	Queue  string `json:"queue"`
	Paused bool   `json:"paused"`
}

func (s *Server) deleteTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.deps.Store.Delete(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deletedResponse{Deleted: id})
}

func (s *Server) bulkTasks(w http.ResponseWriter, r *http.Request) {
	var req BulkRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBulkBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.writeError(w, r, err)
			return
		}
		s.writeError(w, r, badRequest("the bulk request is not valid JSON: %v", err))
		return
	}
	a, f, err := req.Filter(time.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := tasks.Bulk(r.Context(), s.deps.Store, a, f, req.DryRun)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) {
	qs, err := s.queues(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, queuesResponse{Queues: qs})
}

// queues lists the queues that hold tasks, are paused or have a limit, by
// name.
func (s *Server) queues(r *http.Request) ([]QueueView, error) {
	byName := map[string]*QueueView{}
	get := func(q string) *QueueView {
		if v := byName[q]; v != nil {
			return v
		}
		v := &QueueView{Queue: q, Counts: map[tasks.State]int64{}}
		byName[q] = v
		return v
	}
	c, err := s.deps.Store.CountTasks(r.Context())
	if err != nil {
		return nil, err
	}
	for _, qc := range c.ByQueue {
		get(qc.Queue).Counts[qc.State] += qc.Count
	}
	ps, err := s.deps.Store.PausedQueues(r.Context())
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		v := get(p.Queue)
		v.Paused, v.PausedAt = true, p.PausedAt
	}
	limits, err := s.deps.Store.QueueLimits(r.Context())
	if err != nil {
		return nil, err
	}
	for q, l := range limits {
		get(q).Limits = &l
	}
	out := make([]QueueView, 0, len(byName))
	for _, v := range byName {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b QueueView) int { return strings.Compare(a.Queue, b.Queue) })
	return out, nil
}

func (s *Server) pauseQueue(w http.ResponseWriter, r *http.Request) { s.setQueuePaused(w, r, true) }

func (s *Server) resumeQueue(w http.ResponseWriter, r *http.Request) { s.setQueuePaused(w, r, false) }

func (s *Server) setQueuePaused(w http.ResponseWriter, r *http.Request, pause bool) {
	q := r.PathValue("queue")
	var err error
	if pause {
		err = s.deps.Store.PauseQueue(r.Context(), q)
	} else {
		err = s.deps.Store.ResumeQueue(r.Context(), q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.dash.forgetCounts()
	writeJSON(w, http.StatusOK, pauseResponse{Queue: q, Paused: pause})
}

// describeBulk says in words what a bulk action selects, for the
// dashboard's confirmation.
func describeBulk(a tasks.Action, f tasks.BulkFilter, olderThan string) string {
	var parts []string
	if f.State != "" {
		parts = append(parts, "state "+string(f.State))
	}
	if f.Queue != "" {
		parts = append(parts, "queue "+f.Queue)
	}
	for _, k := range sortKeys(f.Labels) {
		parts = append(parts, fmt.Sprintf("label %s=%s", k, f.Labels[k]))
	}
	if olderThan != "" {
		parts = append(parts, "last changed more than "+olderThan+" ago")
	}
	if len(parts) == 0 {
		parts = append(parts, "every task")
	}
	return string(a) + " the tasks with " + strings.Join(parts, ", ")
}
