package server

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/stint-run/stint/tasks"
)

// The dashboard's actions: HTML forms that POST (never a GET that changes
// state), each refused without the token or session when one is set, and
// refused cross-origin (the guard in routes.go checks every POST). They
// answer with a redirect (303) to the page to see, or a page: the bulk
// form first shows how many tasks it selects and acts only when that
// page's confirmation is sent.

// maxActionBody caps an action form's body.
const maxActionBody = 16 << 10

// routeActions adds the dashboard's action routes to mux.
func (s *Server) routeActions(mux *http.ServeMux) {
	mux.HandleFunc("POST /tasks/{id}/{action}", s.dashAction(s.taskActionForm))
	mux.HandleFunc("POST /tasks/bulk", s.dashAction(s.bulkForm))
	mux.HandleFunc("POST /queues/{queue}/{action}", s.dashAction(s.queueForm))
}

// dashAction wraps an action: the token (the session cookie or the
// Authorization header; never ?token=), a form body, a slot of
// MaxConcurrent. h returns where to redirect, or a page to render.
func (s *Server) dashAction(h func(w http.ResponseWriter, r *http.Request) (redirect string, name string, p page, err error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" && !s.dashAuthorized(w, r) {
			s.loginPage(w, r, http.StatusUnauthorized, loginView{Next: "/"})
			return
		}
		if err := checkMediaType(r, []string{"application/x-www-form-urlencoded"}, true); err != nil {
			s.render(w, r, statusOf(err), "error", page{Title: "Refused", Data: errorView{Message: err.Error()}})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxActionBody)
		if err := r.ParseForm(); err != nil {
			s.render(w, r, http.StatusBadRequest, "error", page{Title: "Refused", Data: errorView{Message: "the form did not parse: " + err.Error()}})
			return
		}
		if !s.takeDashSlot(w, r) {
			return
		}
		defer func() { <-s.slots }()
		to, name, p, err := h(w, r)
		if err != nil {
			s.renderFailure(w, r, err, "dashboard action failed", "the action failed (details are in the runner's log)")
			return
		}
		s.dash.forgetCounts()
		if to != "" {
			dashHeaders(w.Header())
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
		s.render(w, r, http.StatusOK, name, p)
	}
}

// taskActionForm is POST /tasks/{id}/retry, /cancel or /delete.
func (s *Server) taskActionForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	id, err := taskID(r)
	if err != nil {
		return "", "", page{}, err
	}
	ctx := r.Context()
	switch r.PathValue("action") {
	case "retry":
		_, err = s.deps.Store.Retry(ctx, id)
	case "cancel":
		_, err = s.deps.Store.Cancel(ctx, id)
	case "delete":
		if err = s.deps.Store.Delete(ctx, id); err == nil {
			return "/tasks", "", page{}, nil
		}
	default:
		return "", "", page{}, badRequest("unknown action %q: retry, cancel or delete", r.PathValue("action"))
	}
	if err != nil {
		return "", "", page{}, err
	}
	return fmt.Sprintf("/tasks/%d", id), "", page{}, nil
}

// bulkView is the bulk confirmation's (and result's) data.
type bulkView struct {
	// Fields are the form's fields, sent again with the confirmation.
	Fields   url.Values
	Says     string
	Result   tasks.BulkResult
	Done     bool
	Action   tasks.Action
	Matching int
}

// bulkForm is POST /tasks/bulk: action, state, queue, label (key=value),
// older_than; without confirm=yes it only counts and shows the
// confirmation.
func (s *Server) bulkForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	f := r.PostForm
	req := BulkRequest{Action: f.Get("action"), State: f.Get("state"), Queue: f.Get("queue"), OlderThan: f.Get("older_than")}
	if l := f.Get("label"); l != "" {
		k, v, err := tasks.ParseLabel(l)
		if err != nil {
			return "", "", page{}, badRequest("%v", err)
		}
		req.Labels = map[string]string{k: v}
	}
	req.All = f.Get("all") == "yes"
	a, filter, err := req.Filter(time.Now())
	if err != nil {
		return "", "", page{}, err
	}
	confirm := f.Get("confirm") == "yes"
	res, err := tasks.Bulk(r.Context(), s.deps.Store, a, filter, !confirm)
	if err != nil {
		return "", "", page{}, err
	}
	fields := url.Values{}
	for _, k := range []string{"action", "state", "queue", "label", "older_than", "all"} {
		if v := f.Get(k); v != "" {
			fields.Set(k, v)
		}
	}
	v := bulkView{Fields: fields, Says: describeBulk(a, filter, req.OlderThan), Result: res, Done: confirm, Action: a, Matching: res.Matched}
	return "", "bulk", page{Title: "Bulk " + string(a), Data: v}, nil
}

// queueForm is POST /queues/{queue}/pause or /resume.
func (s *Server) queueForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	var err error
	q := r.PathValue("queue")
	switch r.PathValue("action") {
	case "pause":
		err = s.deps.Store.PauseQueue(r.Context(), q)
	case "resume":
		err = s.deps.Store.ResumeQueue(r.Context(), q)
	default:
		return "", "", page{}, badRequest("unknown action %q: pause or resume", r.PathValue("action"))
	}
	if err != nil {
		return "", "", page{}, err
	}
	return "/#counts", "", page{}, nil
}

// forgetCounts makes the next page count the tasks again.
func (d *dashboard) forgetCounts() {
	d.mu.Lock()
	d.countsAt = time.Time{}
	d.mu.Unlock()
}
