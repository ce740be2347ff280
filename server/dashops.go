package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// The dashboard's runners and schedules pages: /runners lists the runners
// that work the store, /schedules the schedules with their next run, and
// its buttons pause, resume and remove one (POST, guarded as the login
// form is: the token's session, and the cross-origin check of every
// state-changing request).

// runnersView is the /runners page's data.
type runnersView struct {
	Runners   []RunnerView
	Supported bool
}

// schedulesView is the /schedules page's data.
type schedulesView struct {
	Schedules []scheduleRow
	Supported bool
}

// scheduleRow is one schedule on the /schedules page.
type scheduleRow struct {
	ScheduleView
	Period string
	Queue  string
	// Path is the escaped name, for the forms' actions.
	Path string
}

// routeDashOps adds the runners and schedules pages to mux.
func (s *Server) routeDashOps(mux *http.ServeMux) {
	mux.HandleFunc("GET /runners", s.dashPage(s.runnersPage))
	mux.HandleFunc("GET /schedules", s.dashPage(s.schedulesPage))
	mux.HandleFunc("POST /schedules/{name}/pause", s.scheduleAction(func(ctx context.Context, ss tasks.ScheduleStore, name string) error {
		_, err := ss.PauseSchedule(ctx, name, true)
		return err
	}))
	mux.HandleFunc("POST /schedules/{name}/resume", s.scheduleAction(func(ctx context.Context, ss tasks.ScheduleStore, name string) error {
		_, err := ss.PauseSchedule(ctx, name, false)
		return err
	}))
	mux.HandleFunc("POST /schedules/{name}/remove", s.scheduleAction(func(ctx context.Context, ss tasks.ScheduleStore, name string) error {
		return ss.RemoveSchedule(ctx, name)
	}))
}

func (s *Server) runnersPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	v := runnersView{}
	if rr, ok := s.deps.Store.(tasks.RunnerRegistry); ok {
		v.Supported = true
		list, err := rr.Runners(r.Context())
		if err != nil {
			return "", page{}, err
		}
		for _, x := range list {
			v.Runners = append(v.Runners, RunnerViewOf(x))
		}
	}
	return "runners", page{Title: "Runners", Refresh: overviewRefresh, Data: v}, nil
}

func (s *Server) schedulesPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	v := schedulesView{}
	if ss, ok := s.deps.Store.(tasks.ScheduleStore); ok {
		v.Supported = true
		list, err := ss.Schedules(r.Context())
		if err != nil {
			return "", page{}, err
		}
		now := time.Now()
		for _, x := range list {
			v.Schedules = append(v.Schedules, scheduleRow{ScheduleView: ScheduleViewOf(x, now), Period: x.Period(),
				Queue: x.Spec.WithDefaults().Queue, Path: url.PathEscape(x.Name)})
		}
	}
	return "schedules", page{Title: "Schedules", Refresh: overviewRefresh, Data: v}, nil
}

// scheduleAction wraps a schedule's button: signed in (with a token), a
// form POST (no state change on GET: the mux routes POST only), then back
// to /schedules.
func (s *Server) scheduleAction(op func(ctx context.Context, ss tasks.ScheduleStore, name string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" && !s.dashAuthorized(r) {
			s.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in", Data: loginView{Next: "/schedules"}})
			return
		}
		if err := checkMediaType(r, []string{"application/x-www-form-urlencoded"}, true); err != nil {
			s.writeError(w, r, err)
			return
		}
		ss, ok := s.deps.Store.(tasks.ScheduleStore)
		if !ok {
			s.render(w, r, http.StatusNotImplemented, "error", page{Title: "Not supported", Data: errorView{Message: "this store keeps no schedules"}})
			return
		}
		name := r.PathValue("name")
		if err := op(r.Context(), ss, name); err != nil {
			code := statusOf(err)
			msg := err.Error()
			if code >= 500 {
				s.log.Error("dashboard schedule action failed", zap.String("schedule", name), zap.Error(err))
				msg = "the store could not be changed (details are in the runner's log)"
			}
			s.render(w, r, code, "error", page{Title: http.StatusText(code), Data: errorView{Message: fmt.Sprintf("schedule %s: %s", name, msg)}})
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/schedules", http.StatusSeeOther)
	}
}
