package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// The dashboard's runners and schedules pages: /runners lists the runners
// that work the store, /schedules the schedules with their next run, and
// its buttons pause, resume and remove one (POST, guarded as the login
// form is: the token's session, and the cross-origin check of every
// state-changing request). /schedules/new is the form that adds one
// (POST /schedules, a dashAction as the task buttons are).

// runnersView is the /runners page's data.
type runnersView struct {
	Runners []RunnerView
}

// schedulesView is the /schedules page's data.
type schedulesView struct {
	Schedules []scheduleRow
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
	mux.HandleFunc("POST /runners/{owner}/drain", s.dashAction(s.drainRunnerForm))
	mux.HandleFunc("GET /schedules", s.dashPage(s.schedulesPage))
	mux.HandleFunc("GET /schedules/new", s.dashPage(s.scheduleNewPage))
	mux.HandleFunc("POST /schedules", s.dashAction(s.scheduleAddForm))
	mux.HandleFunc("POST /schedules/{name}/pause", s.scheduleAction(func(ctx context.Context, ss tasks.Store, name string) error {
		_, err := ss.PauseSchedule(ctx, name, true)
		return err
	}))
	mux.HandleFunc("POST /schedules/{name}/resume", s.scheduleAction(func(ctx context.Context, ss tasks.Store, name string) error {
		_, err := ss.PauseSchedule(ctx, name, false)
		return err
	}))
	mux.HandleFunc("POST /schedules/{name}/remove", s.scheduleAction(func(ctx context.Context, ss tasks.Store, name string) error {
		return ss.RemoveSchedule(ctx, name)
	}))
	mux.HandleFunc("POST /schedules/{name}/run", s.scheduleAction(func(ctx context.Context, ss tasks.Store, name string) error {
		_, err := tasks.RunScheduleNow(ctx, ss, name, time.Now(), s.deps.Submit)
		return err
	}))
}

func (s *Server) runnersPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	v := runnersView{}
	list, err := s.deps.Store.Runners(r.Context())
	if err != nil {
		return "", page{}, err
	}
	for _, x := range list {
		v.Runners = append(v.Runners, RunnerViewOf(x))
	}
	return "runners", page{Title: "Runners", Refresh: overviewRefresh, Data: v}, nil
}

// drainRunnerForm is the runners page's "Stop intake" button: the runner
// is asked to stop claiming (tasks.Store.RequestDrain).
func (s *Server) drainRunnerForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	if err := s.deps.Store.RequestDrain(r.Context(), r.PathValue("owner")); err != nil {
		return "", "", page{}, err
	}
	return "/runners", "", page{}, nil
}

func (s *Server) schedulesPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	v := schedulesView{}
	list, err := s.deps.Store.Schedules(r.Context())
	if err != nil {
		return "", page{}, err
	}
	now := time.Now()
	for _, x := range list {
		v.Schedules = append(v.Schedules, scheduleRow{ScheduleView: ScheduleViewOf(x, now), Period: x.Period(),
			Queue: x.Spec.WithDefaults().Queue, Path: url.PathEscape(x.Name)})
	}
	return "schedules", page{Title: "Schedules", Refresh: overviewRefresh, Data: v}, nil
}

// scheduleAction wraps a schedule's button: signed in (with a token), a
// form POST (no state change on GET: the mux routes POST only), then back
// to /schedules.
func (s *Server) scheduleAction(op func(ctx context.Context, ss tasks.Store, name string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" && !s.dashAuthorized(w, r) {
			s.loginPage(w, r, http.StatusUnauthorized, loginView{Next: "/schedules"})
			return
		}
		if err := checkMediaType(r, []string{"application/x-www-form-urlencoded"}, true); err != nil {
			s.writeError(w, r, err)
			return
		}
		name := r.PathValue("name")
		if err := op(r.Context(), s.deps.Store, name); err != nil {
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

// scheduleNewView is the /schedules/new page's data.
type scheduleNewView struct {
	// Modules are the modules of the newest tasks and of the schedules,
	// offered in the module field (a datalist: any stored module's
	// sha256 may be typed).
	Modules []moduleOption
}

// moduleOption is a module the add form offers.
type moduleOption struct {
	Sha  string
	Name string
}

// scheduleModulesScan is how many of the newest tasks the add form reads
// for the modules it offers.
const scheduleModulesScan = 200

func (s *Server) scheduleNewPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	v := scheduleNewView{}
	ctx := r.Context()
	ts, err := s.deps.Store.ListNewest(ctx, tasks.NewestFilter{Limit: scheduleModulesScan})
	if err != nil {
		return "", page{}, err
	}
	list, err := s.deps.Store.Schedules(ctx)
	if err != nil {
		return "", page{}, err
	}
	for _, sc := range list {
		ts = append(ts, tasks.Task{Spec: sc.Spec})
	}
	names := s.moduleNames(ctx, ts...)
	seen := map[string]bool{}
	for _, t := range ts {
		if !seen[t.Module] {
			seen[t.Module] = true
			v.Modules = append(v.Modules, moduleOption{Sha: t.Module, Name: names[t.Module]})
		}
	}
	sort.SliceStable(v.Modules, func(i, j int) bool { return v.Modules[i].Name < v.Modules[j].Name })
	return "schedule-new", page{Title: "Add a schedule", Data: v}, nil
}

// scheduleAddForm is POST /schedules, the form of /schedules/new: it
// stores the schedule (checked as POST /v1/schedules checks one) and
// goes back to /schedules.
func (s *Server) scheduleAddForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	q, err := scheduleRequestOf(r.PostForm)
	if err != nil {
		return "", "", page{}, err
	}
	sc, err := q.Schedule()
	if err == nil && s.deps.CheckSpec != nil {
		err = s.deps.CheckSpec(sc.Spec)
	}
	if err != nil {
		return "", "", page{}, err
	}
	if _, err := s.deps.Store.AddSchedule(r.Context(), sc); err != nil {
		return "", "", page{}, scheduleExists(err, sc.Name)
	}
	return "/schedules", "", page{}, nil
}

// scheduleRequestOf reads the add form: name, module (a stored module's
// sha256), every or cron, queue, priority, max_attempts, timeout (a
// duration), labels and args (one a line; empty lines skipped), paused
// ("yes").
func scheduleRequestOf(f url.Values) (ScheduleRequest, error) {
	q := ScheduleRequest{
		Name:   strings.TrimSpace(f.Get("name")),
		Every:  strings.TrimSpace(f.Get("every")),
		Cron:   strings.TrimSpace(f.Get("cron")),
		Paused: f.Get("paused") == "yes",
		Spec:   tasks.Spec{Module: strings.ToLower(strings.TrimSpace(f.Get("module"))), Queue: strings.TrimSpace(f.Get("queue"))},
	}
	var err error
	if q.Spec.Priority, err = formInt(f, "priority"); err != nil {
		return q, err
	}
	if q.Spec.MaxAttempts, err = formInt(f, "max_attempts"); err != nil {
		return q, err
	}
	if v := strings.TrimSpace(f.Get("timeout")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return q, badRequest("timeout %q: want a duration like 30s or 5m", v)
		}
		q.Spec.Limits.Timeout = d
	}
	for _, line := range formLines(f.Get("labels")) {
		k, v, err := tasks.ParseLabel(strings.TrimSpace(line))
		if err != nil {
			return q, badRequest("%v", err)
		}
		if q.Spec.Labels == nil {
			q.Spec.Labels = map[string]string{}
		}
		if _, dup := q.Spec.Labels[k]; dup {
			return q, badRequest("label %q given twice", k)
		}
		q.Spec.Labels[k] = v
	}
	q.Spec.Args = formLines(f.Get("args"))
	return q, nil
}

// formInt reads an optional integer field.
func formInt(f url.Values, key string) (int, error) {
	v := strings.TrimSpace(f.Get(key))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badRequest("%s %q: want an integer", key, v)
	}
	return n, nil
}

// formLines splits a textarea into its non-empty lines (a browser sends
// CRLF).
func formLines(s string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return out
}
