package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/stint-run/stint/tasks"
)

// The runners and schedules of the store: GET /v1/runners, and
// /v1/schedules (list, add, show, pause, resume, remove).

// RunnerView is a runner as the API, the CLI and the dashboard show it.
type RunnerView struct {
	Owner    string    `json:"owner"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Version  string    `json:"version"`
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"last_seen"`
	// Lease is in Go syntax ("10s").
	Lease    string `json:"lease"`
	Workers  int    `json:"workers"`
	InFlight int    `json:"in_flight"`
	// Held: of InFlight, the tasks claimed that wait for a free worker.
	Held     int  `json:"held"`
	Draining bool `json:"draining"`
	Silent   bool `json:"silent"`
	// Status is "alive", "draining" or "silent" (past its lease).
	Status string `json:"status"`
}

// RunnerViewOf returns the view of r.
func RunnerViewOf(r tasks.RunnerInfo) RunnerView {
	status := "alive"
	switch {
	case r.Silent:
		status = "silent"
	case r.Draining:
		status = "draining"
	}
	return RunnerView{Owner: r.Owner, Host: r.Host, PID: r.PID, Version: r.Version, Started: r.Started, LastSeen: r.LastSeen,
		Lease: r.Lease.String(), Workers: r.Workers, InFlight: r.InFlight, Held: r.Held, Draining: r.Draining, Silent: r.Silent, Status: status}
}

// ScheduleView is a schedule as the API, the CLI and the dashboard show
// it: its task's spec without the input bytes (their size instead).
type ScheduleView struct {
	Name string `json:"name"`
	// Every is in Go syntax ("10m0s"); Cron a cron expression; one is set.
	Every  string `json:"every,omitempty"`
	Cron   string `json:"cron,omitempty"`
	Paused bool   `json:"paused"`
	// Overlap is the schedule's overlap policy, the default spelled out:
	// skip, queue_one or allow.
	Overlap string `json:"overlap"`
	// NextRun is when the next task is submitted: the start of a period
	// that is due and not yet submitted, else of the next period (none
	// while paused).
	NextRun  time.Time  `json:"next_run,omitzero"`
	LastRun  time.Time  `json:"last_run,omitzero"`
	LastTask int64      `json:"last_task,omitempty"`
	Created  time.Time  `json:"created"`
	Spec     tasks.Spec `json:"spec"`
	// InputSize is the size of the spec's input, left out of Spec.
	InputSize int `json:"input_size"`
}

// ScheduleViewOf returns the view of s at now.
func ScheduleViewOf(s tasks.Schedule, now time.Time) ScheduleView {
	v := ScheduleView{Name: s.Name, Cron: s.Cron, Paused: s.Paused, Overlap: cmp.Or(s.Overlap, tasks.OverlapSkip), LastRun: s.LastRun, LastTask: s.LastTask,
		Created: s.Created, Spec: s.Spec, InputSize: len(s.Spec.Input), NextRun: NextRun(s, now)}
	v.Spec.Input = nil
	if s.Every > 0 {
		v.Every = s.Every.String()
	}
	return v
}

// NextRun is when s next submits a task, seen at now: a period due and
// not yet submitted (a runner submits it within a second or so), else the
// next period; zero while paused.
func NextRun(s tasks.Schedule, now time.Time) time.Time {
	if p, due := s.Due(now); due {
		return p
	}
	return s.Next(now)
}

// ScheduleRequest is the body of POST /v1/schedules.
type ScheduleRequest struct {
	Name string `json:"name"`
	// Every is an interval in Go syntax ("10m"); Cron a 5-field cron
	// expression ("0 * * * *"); give one.
	Every  string `json:"every,omitempty"`
	Cron   string `json:"cron,omitempty"`
	Paused bool   `json:"paused,omitempty"`
	// Overlap is skip (the default), queue_one or allow (tasks.Schedule).
	Overlap string     `json:"overlap,omitempty"`
	Spec    tasks.Spec `json:"spec"`
}

// Schedule turns the request into a schedule, checked (tasks.Schedule
// Validate); its errors wrap tasks.ErrInvalidSchedule or ErrInvalidSpec.
func (q ScheduleRequest) Schedule() (tasks.Schedule, error) {
	s := tasks.Schedule{Name: q.Name, Cron: q.Cron, Paused: q.Paused, Overlap: q.Overlap, Spec: q.Spec}
	if q.Every != "" {
		d, err := time.ParseDuration(q.Every)
		if err != nil {
			return s, fmt.Errorf("%w: every %q: want a duration like \"10m\" or \"1h\"", tasks.ErrInvalidSchedule, q.Every)
		}
		s.Every = d
	}
	return s, s.Validate()
}

type runnersResponse struct {
	Runners []RunnerView `json:"runners"`
}

type schedulesResponse struct {
	Schedules []ScheduleView `json:"schedules"`
}

func (s *Server) listRunners(w http.ResponseWriter, r *http.Request) {
	list, err := s.deps.Store.Runners(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := runnersResponse{Runners: make([]RunnerView, 0, len(list))}
	for _, x := range list {
		resp.Runners = append(resp.Runners, RunnerViewOf(x))
	}
	writeJSON(w, http.StatusOK, resp)
}

// drainRunner asks a runner to stop claiming (tasks.Store's
// RequestDrain): it stops at its next heartbeat, finishes what it runs,
// and shows as draining; 404 if no runner has that owner.
func (s *Server) drainRunner(w http.ResponseWriter, r *http.Request) {
	owner := r.PathValue("owner")
	if err := s.deps.Store.RequestDrain(r.Context(), owner); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"owner": owner, "draining": true})
}

// runScheduleNow submits a task of the schedule now (tasks.RunScheduleNow),
// apart from its periods, and answers it as POST /v1/tasks does.
func (s *Server) runScheduleNow(w http.ResponseWriter, r *http.Request) {
	t, err := tasks.RunScheduleNow(r.Context(), s.deps.Store, r.PathValue("name"), time.Now(), s.deps.Submit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": t.ID, "state": t.State, "schedule": r.PathValue("name")})
}

// decodeObject reads one JSON object of what into v from body: no unknown
// field (a misspelt one is an error, not silently a default), nothing after
// it.
func decodeObject(body io.Reader, what string, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid %s JSON: unexpected data after the object", what)
	}
	return nil
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := s.deps.Store.Schedules(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := time.Now()
	resp := schedulesResponse{Schedules: make([]ScheduleView, 0, len(list))}
	for _, x := range list {
		resp.Schedules = append(resp.Schedules, ScheduleViewOf(x, now))
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) {
	sc, err := s.deps.Store.GetSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ScheduleViewOf(sc, time.Now()))
}

// addSchedule stores a schedule. withBody has checked the Content-Type
// and capped the body.
func (s *Server) addSchedule(w http.ResponseWriter, r *http.Request) {
	var q ScheduleRequest
	if err := decodeObject(r.Body, "schedule", &q); err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, err := q.Schedule()
	if err == nil && s.deps.CheckSpec != nil {
		err = s.deps.CheckSpec(sc.Spec)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := sc.Name
	sc, err = s.deps.Store.AddSchedule(r.Context(), sc)
	if err != nil {
		s.writeError(w, r, scheduleExists(err, name))
		return
	}
	w.Header().Set("Location", "/v1/schedules/"+sc.Name)
	writeJSON(w, http.StatusCreated, ScheduleViewOf(sc, time.Now()))
}

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	s.setSchedulePaused(w, r, true)
}
func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	s.setSchedulePaused(w, r, false)
}

func (s *Server) setSchedulePaused(w http.ResponseWriter, r *http.Request, paused bool) {
	sc, err := s.deps.Store.PauseSchedule(r.Context(), r.PathValue("name"), paused)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ScheduleViewOf(sc, time.Now()))
}

func (s *Server) removeSchedule(w http.ResponseWriter, r *http.Request) {
	if err := s.deps.Store.RemoveSchedule(r.Context(), r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// scheduleExists says in words of its own, not the store's, that a
// schedule's name is taken (409: it wraps tasks.ErrScheduleExists); any
// other err is returned as it is.
func scheduleExists(err error, name string) error {
	if !errors.Is(err, tasks.ErrScheduleExists) {
		return err
	}
	return nameTakenError{name}
}

// nameTakenError is a schedule's name taken.
type nameTakenError struct{ name string }

func (e nameTakenError) Error() string {
	return "a schedule named " + e.name + " exists (remove it first, or choose another name)"
}

func (e nameTakenError) Unwrap() error { return tasks.ErrScheduleExists }
