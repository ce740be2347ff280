package server

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/shortdur"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

// The dashboard: read-only HTML pages at /, /tasks and /tasks/{id},
// rendered on the server with html/template (which escapes every value:
// labels, args and stderr come from whoever submitted the task). No
// JavaScript; the overview refreshes itself with a meta refresh.
//
// With a token, a page needs one of: the Authorization header (a proxy may
// add it), the session cookie, or the token once, by the login form
// (POST /login) or ?token= on any page, which sets the cookie and
// redirects to the page without it. See docs/dashboard.md.

//go:embed web
var webFS embed.FS

// Caps of the dashboard's lists and its counts cache, so that a page stays
// cheap whatever the queue holds.
const (
	// dashRunning caps the running tasks on the overview.
	dashRunning = 50
	// dashFailures is how many dead tasks the overview shows, each with
	// its last attempt's stderr tail.
	dashFailures = 10
	// dashPage is the page size of /tasks.
	dashPage = 50
	// dashQueues caps the queues of the counts table.
	dashQueues = 100
	// labelScan caps the tasks /tasks?label= reads for one page (labels
	// are in no index).
	labelScan = 5000
	// countsFor is how long the counts (tasks.Store.CountTasks: a few
	// queries, one of which counts the whole table) are reused across page
	// views.
	countsFor = 3 * time.Second
	// overviewRefresh is the overview's meta refresh, in seconds.
	overviewRefresh = 5
	// sessionCookie is the dashboard's cookie (sessions.go).
	sessionCookie = "stint_session"
	// maxLoginBody caps the login form.
	maxLoginBody = 8 << 10
	// failureTail is how much of a failure's stderr the overview shows;
	// the task's page shows all that is kept (tasks.MaxStderrTail).
	failureTail = 1 << 10
)

// dashCSP forbids scripts, frames and every origin but this one's styles
// and forms: a value that escaped the templates could still run nothing.
const dashCSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

var pageFuncs = template.FuncMap{
	"ago":         ago,
	"when":        when,
	"pct":         pct,
	"tail":        tail,
	"stderrTail":  stderrTail,
	"failureTail": func(s string) string { return tail(failureTail, s) },
	"sortKeys":    sortKeys,
	"query":       query,
	"failureText": failureText,
	"pathEsc":     url.PathEscape,
	"plural":      plural,
	"size":        func(n any) string { return sizeText(toInt64(n)) },
	"runTime":     func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"stateOf": func(t tasks.Task, now time.Time) stateView {
		sched := scheduled(t, now)
		t.State = t.Shown() // claimed: no worker began it
		return stateView{Task: t, Now: now, Scheduled: sched}
	},
	"moduleOf": func(t tasks.Task, names map[string]string) moduleView {
		return moduleView{Module: t.Module, Names: names}
	},
}

// plural is one when n is 1, else many ("1 task matches", "2 tasks match").
func plural(n any, one, many string) string {
	if fmt.Sprint(n) == "1" {
		return one
	}
	return many
}

// inProgress says that n requests are in progress, in words.
func inProgress(n int) string {
	return fmt.Sprintf("%d %s in progress", n, plural(n, "request is", "requests are"))
}

// sizeText is n bytes for a person: "512 bytes", "1.5 KiB", "8.0 MiB".
func sizeText(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d %s", n, plural(n, "byte", "bytes"))
	}
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m {
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.m), u.s)
		}
	}
	return "" // unreachable: n >= 1 KiB
}

// toInt64 is an int or int64 as an int64 (0 for anything else): the
// templates' sizes come as both.
func toInt64(n any) int64 {
	switch n := n.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	}
	return 0
}

// stateView is a task's state as the "state" template shows it: a queued
// task whose RunAt is still to come is "scheduled", with its time; a
// running task no worker began is "claimed" (tasks.Task.Shown).
type stateView struct {
	Task      tasks.Task
	Now       time.Time
	Scheduled bool
}

// scheduled reports whether t waits for its RunAt.
func scheduled(t tasks.Task, now time.Time) bool {
	return t.State == tasks.StateQueued && t.RunAt.After(now)
}

// moduleView is a module as the "module" template shows it: its name when
// the store has one, else the start of its hash.
type moduleView struct {
	Module string
	Names  map[string]string
}

// failureText is what the overview shows of a failure's stderr: from the
// first line that says why a Go or Rust guest died ("fatal error: ",
// "panic: ", "thread '...' panicked") when there is one, the head of what
// follows (a Go out-of-memory dump's first line is its reason, the rest
// goroutine stacks); otherwise the tail.
func failureText(s string) string {
	for _, mark := range []string{"fatal error: ", "panic: ", "thread '"} {
		i := strings.Index(s, mark)
		if i < 0 || (i > 0 && s[i-1] != '\n') {
			continue
		}
		if mark == "thread '" && !strings.Contains(s[i:], "panicked") {
			continue
		}
		out := s[i:]
		if len(out) > failureTail {
			out = out[:failureTail]
			for len(out) > 0 && out[len(out)-1]&0xC0 == 0x80 {
				out = out[:len(out)-1]
			}
			if len(out) > 0 && out[len(out)-1]&0xC0 == 0xC0 {
				out = out[:len(out)-1]
			}
			out += "…"
		}
		if i > 0 {
			out = "…" + out
		}
		return out
	}
	return tail(failureTail, s)
}

// pages returns the dashboard's templates, each with the layout, parsed
// on first use: not at package init, which every runner command (runner
// run among them) would pay at start.
var pages = sync.OnceValue(func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{"overview", "tasks", "task", "login", "error", "runners", "schedules", "schedule-new", "bulk", "tenants"} {
		out[name] = template.Must(template.New(name).Funcs(pageFuncs).ParseFS(webFS, "web/layout.html", "web/parts.html", "web/"+name+".html"))
	}
	return out
})

// dashboard holds what the dashboard keeps between requests.
type dashboard struct {
	// sess signs and checks the session cookies (nil without a token).
	sess *sessions

	mu       sync.Mutex
	counts   tasks.TaskCounts
	countsAt time.Time
	countErr error
}

// newDashboard returns the dashboard's state for cfg (with its defaults).
func newDashboard(cfg Config) *dashboard {
	d := &dashboard{}
	if cfg.Token != "" {
		d.sess = newSessions(cfg.SessionIdle, cfg.SessionMax)
	}
	return d
}

// routeDashboard adds the dashboard's routes to mux.
func (s *Server) routeDashboard(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.dashPage(s.overview))
	mux.HandleFunc("GET /tasks", s.dashPage(s.taskList))
	mux.HandleFunc("GET /tasks/{id}", s.dashPage(s.taskPage))
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.HandleFunc("GET /dashboard.css", s.stylesheet)
	s.routeDashOps(mux)
	s.routeDashTenants(mux)
}

// page is what every template gets.
type page struct {
	Title   string
	Refresh int
	Runner  runnerView
	// Auth: the dashboard has a token (a logout button makes sense).
	Auth bool
	// Public: the sign-in page, shown before the token is given: no
	// runner state, no sign-out button.
	Public bool
	Now    time.Time
	Data   any
}

// runnerView is the runner's state in the header.
type runnerView struct {
	Ready bool
	// Phase is the shutdown phase (shutdown.PhaseNone: not stopping).
	Phase    shutdown.Phase
	HasPhase bool
	// State is one word: ready, not-ready, draining, stopping, forcing,
	// closing, stopped.
	State string
	// Say explains State in a sentence.
	Say      string
	Stats    PoolStats
	HasStats bool
}

func (s *Server) runnerView() runnerView {
	v := runnerView{Ready: s.deps.Ready()}
	if s.deps.Phase != nil {
		v.Phase, v.HasPhase = s.deps.Phase(), true
	}
	if s.deps.Stats != nil {
		v.Stats, v.HasStats = s.deps.Stats(), true
	}
	switch v.Phase {
	case shutdown.PhaseNone:
		if v.Ready {
			v.State, v.Say = "ready", "ready: claiming and running tasks"
		} else {
			v.State, v.Say = "not-ready", "not ready: the store does not answer (see the runner's log)"
		}
	case shutdown.PhaseIntake, shutdown.PhaseDrain:
		v.State, v.Say = "draining", "draining: no new claims; running tasks may finish (shutdown phase "+v.Phase.String()+")"
	case shutdown.PhaseCancel:
		v.State, v.Say = "stopping", "stopping: guests were asked to stop and checkpoint (shutdown phase cancel)"
	case shutdown.PhaseForce:
		v.State, v.Say = "forcing", "forcing: the guests left are being ended (shutdown phase force)"
	case shutdown.PhaseHooks:
		v.State, v.Say = "closing", "closing: cleanup hooks run (shutdown phase hooks)"
	default:
		v.State, v.Say = "stopped", "stopped (shutdown phase "+v.Phase.String()+")"
	}
	return v
}

// dashPage wraps a page handler: the token (when one is set), a slot of
// MaxConcurrent (pages read the store) and the security headers.
func (s *Server) dashPage(h func(w http.ResponseWriter, r *http.Request) (string, page, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" {
			if tok := r.URL.Query().Get("token"); tok != "" {
				s.loginWith(w, r, tok, withoutToken(r.URL))
				return
			}
			if !s.dashAuthorized(w, r) {
				s.loginPage(w, r, http.StatusUnauthorized, loginView{Next: r.URL.RequestURI()})
				return
			}
		}
		if !s.takeDashSlot(w, r) {
			return
		}
		defer func() { <-s.slots }()
		name, p, err := h(w, r)
		if err != nil {
			s.renderFailure(w, r, err, "dashboard page failed", "the page could not be read from the store (details are in the runner's log)")
			return
		}
		s.render(w, r, http.StatusOK, name, p)
	}
}

// takeDashSlot takes one of the MaxConcurrent slots for a dashboard page
// or action, and reports whether it did. When none is free it renders the
// "Busy" page (503, with Retry-After) instead. The caller gives the slot
// back with <-s.slots once done.
func (s *Server) takeDashSlot(w http.ResponseWriter, r *http.Request) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		w.Header().Set("Retry-After", retryAfter)
		s.render(w, r, http.StatusServiceUnavailable, "error", page{Title: "Busy", Data: errorView{
			Message: inProgress(s.cfg.MaxConcurrent) + " (http.max_concurrent); try again in a moment"}})
		return false
	}
}

// renderFailure renders the error page for err, with err's status. A 5xx
// is logged as logMsg, with the request's path, and the page says say
// rather than the error's own text.
func (s *Server) renderFailure(w http.ResponseWriter, r *http.Request, err error, logMsg, say string) {
	code := statusOf(err)
	msg := err.Error()
	if code >= 500 {
		s.log.Error(logMsg, zap.String("path", r.URL.Path), zap.Error(err))
		msg = say
	}
	s.render(w, r, code, "error", page{Title: http.StatusText(code), Data: errorView{Message: msg}})
}

// render writes a page with the dashboard's headers.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Public = name == "login"
	if !p.Public {
		p.Runner = s.runnerView()
	}
	p.Auth = s.cfg.Token != ""
	p.Now = time.Now()
	var b strings.Builder
	if err := pages()[name].ExecuteTemplate(&b, "layout", p); err != nil {
		s.log.Error("dashboard template failed", zap.String("page", name), zap.Error(err))
		code = http.StatusInternalServerError
		b.Reset()
		b.WriteString("internal server error (details are in the runner's log)\n")
	}
	dashHeaders(w.Header())
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, b.String())
	}
}

func dashHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", dashCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// errorView is the error page's data.
type errorView struct{ Message string }

// loginView is the login page's data.
type loginView struct {
	Next  string
	Wrong bool
	// Limited: too many failed sign-ins from this address.
	Limited bool
	// Idle and Max are the sessions' lifetimes (http.session_idle,
	// http.session_max), as "1h" or "90m".
	Idle, Max string
}

// loginPage renders the sign-in form with code.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request, code int, v loginView) {
	v.Idle, v.Max = shortdur.Format(s.cfg.SessionIdle), shortdur.Format(s.cfg.SessionMax)
	s.render(w, r, code, "login", page{Title: "Sign in", Data: v})
}

// dashAuthorized reports whether r carries the token (Authorization
// header) or a live session cookie; a session's cookie is renewed (its
// last request now) through w.
func (s *Server) dashAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return s.authorized(r, &s.tokenSum)
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	issued, ok := s.dash.sess.check(c.Value)
	if ok {
		s.setSession(w, r, issued)
	}
	return ok
}

// setSession sets the session cookie of a session signed in at issued
// (Unix seconds), last seen now.
func (s *Server) setSession(w http.ResponseWriter, r *http.Request, issued int64) {
	ss := s.dash.sess
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: ss.cookie(issued, ss.now().Unix()), Path: "/",
		MaxAge: ss.maxAge(issued), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secureRequest(r),
	})
}

// RevokeSessions ends every dashboard session at once (POST
// /v1/sessions/revoke): their cookies' key is drawn again, so each
// browser must sign in again with the token. A restart does the same.
func (s *Server) RevokeSessions() {
	if s.dash.sess != nil {
		s.dash.sess.rotate()
	}
}

// loginWith checks tok and, when it is the token, sets the session cookie
// and redirects (303) to next; otherwise it answers 401 with the form, or
// 429 when the address failed too often (sessions.go).
func (s *Server) loginWith(w http.ResponseWriter, r *http.Request, tok, next string) {
	addr := remoteAddr(r.RemoteAddr)
	if !s.dash.sess.allowSignIn(addr) {
		s.log.Warn("dashboard sign-in refused: too many failed sign-ins from this address", zap.String("remote", r.RemoteAddr))
		w.Header().Set("Retry-After", strconv.Itoa(int(signInRefill/time.Second)))
		s.loginPage(w, r, http.StatusTooManyRequests, loginView{Next: next, Limited: true})
		return
	}
	if !equalHashed(strings.TrimSpace(tok), s.cfg.Token) {
		s.dash.sess.failedSignIn(addr)
		s.log.Info("dashboard sign-in refused: wrong token", zap.String("remote", r.RemoteAddr))
		s.loginPage(w, r, http.StatusUnauthorized, loginView{Next: next, Wrong: true})
		return
	}
	s.setSession(w, r, s.dash.sess.now().Unix())
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// secureRequest reports whether r came over HTTPS, to the server or to a
// proxy in front of it: the cookie is then marked Secure.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if s.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.loginPage(w, r, http.StatusOK, loginView{Next: next})
}

// login is the form's POST: token and next.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if err := checkMediaType(r, []string{"application/x-www-form-urlencoded"}, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil {
		s.writeError(w, r, badRequest("the sign-in form did not parse: %v", err))
		return
	}
	next := localPath(r.PostForm.Get("next"))
	if s.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.loginWith(w, r, r.PostForm.Get("token"), next)
}

// logout clears the cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secureRequest(r)})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// localPath returns p when it is a path on this server ("/..."), "/"
// otherwise: the login never redirects to another site.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return "/"
	}
	return p
}

// withoutToken is u's path and query without its token parameter.
func withoutToken(u *url.URL) string {
	q := u.Query()
	q.Del("token")
	p := u.EscapedPath()
	if e := q.Encode(); e != "" {
		p += "?" + e
	}
	return localPath(p)
}

func (s *Server) stylesheet(w http.ResponseWriter, r *http.Request) {
	b, err := webFS.ReadFile("web/dashboard.css")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Cache-Control", "max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

// countsView is the counts table: one row per queue, a column per state.
type countsView struct {
	States []tasks.State
	Rows   []countRow
	Total  countRow
	// ByQueueSucceeded: the rows count succeeded tasks too (otherwise only
	// the total does; see tasks.TaskCounts).
	ByQueueSucceeded bool
	// More: queues left out past dashQueues.
	More int
	// Err: the counts could not be read (or the store cannot count).
	Err string
}

type countRow struct {
	Queue  string
	N      map[tasks.State]int64
	All    int64
	Paused bool
	// Scheduled: of the queued, those not ready yet; Waited: how long the
	// oldest ready one has waited, rounded ("": none is ready).
	Scheduled int64
	Waited    string
	// Graph: the queue's attempts this runner recorded in the last hour
	// (nil: none; the overview only).
	Graph *throughputView
}

// stateScheduled is the lists' word for a queued task whose run_at is to
// come (/tasks?state=scheduled).
const stateScheduled tasks.State = "scheduled"

// listStates are the states /tasks filters by: the store's and scheduled.
var listStates = []tasks.State{tasks.StateQueued, stateScheduled, tasks.StateClaimed, tasks.StateRunning, tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled}

var allStates = []tasks.State{tasks.StateQueued, tasks.StateClaimed, tasks.StateRunning, tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled}

// counts returns the counts, from a cache at most countsFor old.
func (s *Server) counts(ctx context.Context) countsView {
	v := countsView{States: allStates, Total: countRow{N: map[tasks.State]int64{}}}
	d := s.dash
	d.mu.Lock()
	if d.countsAt.IsZero() || time.Since(d.countsAt) >= countsFor {
		d.counts, d.countErr = s.deps.Store.CountTasks(ctx)
		d.countsAt = time.Now()
		if d.countErr != nil {
			s.log.Warn("dashboard: counting tasks failed", zap.Error(d.countErr))
			d.countsAt = time.Time{}
		}
	}
	counts, err := d.counts, d.countErr
	d.mu.Unlock()
	if err != nil {
		v.Err = "the counts could not be read from the store (details are in the runner's log)"
		return v
	}
	v.ByQueueSucceeded = counts.SucceededByQueue
	for st, n := range counts.Total {
		v.Total.N[st] = n
		v.Total.All += n
	}
	index := map[string]int{} // queue → its row; -1 past dashQueues
	for _, c := range counts.ByQueue {
		i, seen := index[c.Queue]
		if !seen {
			i = -1
			if len(v.Rows) < dashQueues {
				i = len(v.Rows)
				v.Rows = append(v.Rows, countRow{Queue: c.Queue, N: map[tasks.State]int64{}})
			} else {
				v.More++
			}
			index[c.Queue] = i
		}
		if i >= 0 {
			v.Rows[i].N[c.State] += c.Count
			v.Rows[i].All += c.Count
		}
	}
	var oldest time.Duration // of every queue's
	anyReady := false
	for _, w := range counts.Waiting {
		v.Total.Scheduled += w.Scheduled
		waited := ""
		if age, ok := w.Waited(counts.Now); ok {
			waited, oldest, anyReady = roundAge(age), max(oldest, age), true
		}
		if i, seen := index[w.Queue]; seen && i >= 0 {
			v.Rows[i].Scheduled, v.Rows[i].Waited = w.Scheduled, waited
		}
	}
	if anyReady {
		v.Total.Waited = roundAge(oldest)
	}
	ps, err := s.deps.Store.PausedQueues(ctx)
	if err != nil {
		s.log.Warn("dashboard: reading the paused queues failed", zap.Error(err))
		v.Err = "the paused queues could not be read from the store (details are in the runner's log)"
		return v
	}
	for _, p := range ps {
		i, seen := index[p.Queue]
		if !seen && len(v.Rows) < dashQueues {
			i = len(v.Rows)
			v.Rows = append(v.Rows, countRow{Queue: p.Queue, N: map[tasks.State]int64{}})
		} else if !seen {
			continue
		}
		if i >= 0 {
			v.Rows[i].Paused = true
		}
	}
	slices.SortFunc(v.Rows, func(a, b countRow) int { return strings.Compare(a.Queue, b.Queue) })
	return v
}

// roundAge is d for people: whole seconds under an hour ("42s", "3m5s"),
// minutes past it ("2h13m0s").
func roundAge(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

// moduleNames returns the names of the modules of ts (none when the store
// fails to read them: a list still shows).
func (s *Server) moduleNames(ctx context.Context, ts ...tasks.Task) map[string]string {
	if len(ts) == 0 {
		return nil
	}
	shas := make([]string, 0, len(ts))
	for _, t := range ts {
		if !slices.Contains(shas, t.Module) {
			shas = append(shas, t.Module)
		}
	}
	names, err := s.deps.Store.ModuleNames(ctx, shas)
	if err != nil {
		s.log.Warn("dashboard: reading module names failed", zap.Error(err))
		return nil
	}
	return names
}

// failureView is a dead task with its last attempt.
type failureView struct {
	Task tasks.Task
	Last tasks.Attempt
	Has  bool
}

// overviewView is the overview's data.
type overviewView struct {
	Counts   countsView
	Running  []tasks.Task
	RunMore  bool
	Failures []failureView
	// Throughput is the graph of this runner's last hour (throughput.go);
	// each row of Counts has its queue's.
	Throughput throughputView
}

func (s *Server) overview(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	ctx := r.Context()
	now := time.Now()
	v := overviewView{Counts: s.counts(ctx), Throughput: s.tp.view(now)}
	graphs := s.tp.queueViews(now)
	for i, row := range v.Counts.Rows {
		if g, ok := graphs[row.Queue]; ok {
			v.Counts.Rows[i].Graph = &g
		}
	}
	running, err := s.deps.Store.List(ctx, tasks.ListFilter{State: tasks.StateRunning, Limit: dashRunning + 1})
	if err != nil {
		return "", page{}, err
	}
	if len(running) > dashRunning {
		running, v.RunMore = running[:dashRunning], true
	}
	v.Running = running
	dead, err := s.deps.Store.ListNewest(ctx, tasks.NewestFilter{State: tasks.StateDead, Limit: dashFailures})
	if err != nil {
		return "", page{}, err
	}
	for _, t := range dead {
		f := failureView{Task: t}
		as, err := s.deps.Store.Attempts(ctx, t.ID)
		if err != nil && !errors.Is(err, tasks.ErrNotFound) { // pruned meanwhile
			return "", page{}, err
		}
		if len(as) > 0 {
			f.Last, f.Has = as[len(as)-1], true
		}
		v.Failures = append(v.Failures, f)
	}
	return "overview", page{Title: "Overview", Refresh: overviewRefresh, Data: v}, nil
}

// listView is /tasks' data.
type listView struct {
	State  tasks.State
	Queue  string
	Label  string
	Names  map[string]string
	States []tasks.State
	Tasks  []tasks.Task
	// Next is the before= of the next (older) page; 0 on the last one.
	Next int64
}

func (s *Server) taskList(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	q := r.URL.Query()
	v := listView{State: tasks.State(q.Get("state")), Queue: q.Get("queue"), Label: q.Get("label"), States: listStates}
	// scheduled is what the lists show of a queued task whose run_at is
	// to come: the store's state is queued, the rest is kept by time.
	state, onlyScheduled := v.State, v.State == stateScheduled
	if onlyScheduled {
		state = tasks.StateQueued
	} else if v.State != "" && !v.State.Valid() && v.State != tasks.StateClaimed {
		return "", page{}, badRequest("unknown state %q; want one of queued, scheduled, claimed, running, succeeded, dead, cancelled", v.State)
	}
	var labelK, labelV string
	if v.Label != "" {
		var err error
		if labelK, labelV, err = tasks.ParseLabel(v.Label); err != nil {
			return "", page{}, badRequest("%v", err)
		}
	}
	var before int64
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return "", page{}, badRequest("before=%q: want a task id", b)
		}
		before = n
	}
	now := time.Now()
	keep := func(t tasks.Task) bool {
		if onlyScheduled && !scheduled(t, now) {
			return false
		}
		got, ok := t.Labels[labelK]
		return v.Label == "" || ok && got == labelV
	}
	var ts []tasks.Task
	if v.Label == "" && !onlyScheduled {
		var err error
		ts, err = s.deps.Store.ListNewest(r.Context(), tasks.NewestFilter{State: state, Queue: v.Queue, BeforeID: before, Limit: dashPage + 1})
		if err != nil {
			return "", page{}, err
		}
		if len(ts) > dashPage {
			ts = ts[:dashPage]
			v.Next = ts[len(ts)-1].ID
		}
	} else {
		// Labels and run_at are in no index: read pages and keep the
		// matching tasks, reading at most labelScan tasks for one page.
		scanned := 0
		for scanned < labelScan && len(ts) < dashPage {
			batch, err := s.deps.Store.ListNewest(r.Context(), tasks.NewestFilter{State: state, Queue: v.Queue, BeforeID: before, Limit: 500})
			if err != nil {
				return "", page{}, err
			}
			for _, t := range batch {
				before = t.ID
				if keep(t) {
					ts = append(ts, t)
					if len(ts) == dashPage {
						break
					}
				}
			}
			scanned += len(batch)
			if len(batch) < 500 {
				before = 0
				break
			}
		}
		v.Next = before
	}
	v.Tasks = ts
	v.Names = s.moduleNames(r.Context(), ts...)
	title := "Tasks"
	if v.State != "" {
		title = string(v.State) + " tasks"
	}
	return "tasks", page{Title: title, Data: v}, nil
}

// taskView is a task's page data.
type taskView struct {
	Task     tasks.Task
	Attempts []tasks.Attempt
	Names    map[string]string
}

func (s *Server) taskPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	id, err := taskID(r)
	if err != nil {
		return "", page{}, err
	}
	t, err := s.head(r.Context(), id)
	if err != nil {
		return "", page{}, err
	}
	as, err := s.deps.Store.Attempts(r.Context(), id)
	if err != nil {
		return "", page{}, err
	}
	slices.Reverse(as) // newest first
	p := page{Title: fmt.Sprintf("Task %d", id), Data: taskView{Task: t, Attempts: as, Names: s.moduleNames(r.Context(), t)}}
	if !t.State.Terminal() {
		p.Refresh = overviewRefresh
	}
	return "task", p, nil
}

// ago is how long before now t was, rounded for a person ("3s", "4m10s").
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in " + (-d).Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Second).String() + " ago"
	case d < 48*time.Hour:
		return d.Round(time.Minute).String() + " ago"
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// when is t in UTC, to the second; "" when unset.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// pct is done/total as a percentage (0 to 100), 0 when total is not
// positive.
func pct(done, total int64) int64 {
	if total <= 0 || done <= 0 {
		return 0
	}
	if done >= total {
		return 100
	}
	return done * 100 / total
}

// tail is the end of s, at most n bytes, starting at a line or word
// (cutStart) after "…".
func tail(n int, s string) string {
	if len(s) <= n {
		return s
	}
	return "…" + cutStart(s[len(s)-n:])
}

// stderrTail is what the task's page shows of an attempt's stderr: all
// the store keeps, but a tail the runner cut (tasks.StderrTail keeps the
// last tasks.MaxStderrTail bytes) starts at a line or word after "…".
func stderrTail(s string) string {
	if len(s) < tasks.MaxStderrTail-(utf8.UTFMax-1) {
		return s // shorter than any cut tail: all of it
	}
	return "…" + cutStart(s)
}

// cutStart drops what a cut left of the line or word at the start of s:
// s from the first line start in its first half, else the first word
// start there, else the first line start anywhere, else the first
// character start (one long word).
func cutStart(s string) string {
	half := s[:len(s)/2]
	if i := strings.IndexByte(half, '\n'); i >= 0 {
		return s[i+1:]
	}
	if i := strings.IndexAny(half, " \t"); i >= 0 {
		return strings.TrimLeft(s[i:], " \t")
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// sortKeys returns m's keys in order.
func sortKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// query builds "?k=v&..." from pairs, leaving out empty values.
func query(kv ...any) template.URL {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		if v != "" && v != "0" {
			q.Set(fmt.Sprint(kv[i]), v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return template.URL("?" + q.Encode())
}
