package server

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stint-run/stint/tasks"
)

// The dashboard's tenants page: each tenant's weight, limit and quota,
// its running tasks and work used, and a form that changes them
// (as POST /v1/tenants does); and the same for the queues' limits (as
// POST /v1/queues/{queue}/limits does).

// tenantsView is the /tenants page's data.
type tenantsView struct {
	Tenants []tenantRow
	Queues  []queueLimitsRow
}

// queueLimitsRow is one queue with a limit on the page.
type queueLimitsRow struct {
	Name string
	tasks.SharedLimits
}

// tenantRow is one tenant of the page, with the graph of its attempts
// this runner recorded in the last hour (nil: none).
type tenantRow struct {
	Name string
	tasks.Tenant
	Graph *throughputView
}

// routeDashTenants adds the tenants page and its form to mux.
func (s *Server) routeDashTenants(mux *http.ServeMux) {
	mux.HandleFunc("GET /tenants", s.dashPage(s.tenantsPage))
	mux.HandleFunc("POST /tenants", s.dashAction(s.tenantForm))
	mux.HandleFunc("POST /tenants/queues", s.dashAction(s.queueLimitsForm))
}

func (s *Server) tenantsPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	v := tenantsView{}
	all, err := s.deps.Store.Tenants(r.Context())
	if err != nil {
		return "", page{}, err
	}
	graphs := s.tp.tenantViews(time.Now())
	for _, name := range slices.Sorted(maps.Keys(all)) {
		row := tenantRow{Name: name, Tenant: all[name]}
		if g, ok := graphs[name]; ok {
			row.Graph = &g
		}
		v.Tenants = append(v.Tenants, row)
	}
	queues, err := s.deps.Store.QueueLimits(r.Context())
	if err != nil {
		return "", page{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		v.Queues = append(v.Queues, queueLimitsRow{Name: name, SharedLimits: queues[name]})
	}
	return "tenants", page{Title: "Tenants", Refresh: overviewRefresh, Data: v}, nil
}

// tenantForm is the tenants page's form: the fields filled in are set,
// the empty ones left as they are.
func (s *Server) tenantForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	q := TenantRequest{Tenant: r.PostForm.Get("tenant")}
	weight, err := formWhole(r, "weight")
	if err != nil {
		return "", "", page{}, err
	}
	if weight != nil {
		q.Weight = new(int(*weight))
	}
	if q.LimitsRequest, err = limitsForm(r); err != nil {
		return "", "", page{}, err
	}
	defer s.limitsChanged()
	if err := q.apply(r, s.deps.Store); err != nil {
		return "", "", page{}, err
	}
	return "/tenants", "", page{}, nil
}

// queueLimitsForm is the form of the page's queue limits: the fields
// filled in are set, the empty ones left as they are.
func (s *Server) queueLimitsForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	queue := r.PostForm.Get("queue")
	if err := tasks.CheckQueueName(queue); err != nil {
		return "", "", page{}, err
	}
	l, err := limitsForm(r)
	if err != nil {
		return "", "", page{}, err
	}
	st := s.deps.Store
	defer s.limitsChanged()
	if err := l.apply(r.Context(), queue, limitSetters{st.SetQueueMaxRunning, st.SetQueueWorkQuota, st.SetQueueRate}); err != nil {
		return "", "", page{}, err
	}
	return "/tenants", "", page{}, nil
}

// formWhole reads the whole number of a form's field (nil: left empty).
func formWhole(r *http.Request, field string) (*int64, error) {
	v := strings.TrimSpace(r.PostForm.Get(field))
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: want a whole number", tasks.ErrInvalidSpec, field, v)
	}
	return &n, nil
}

// limitsForm reads the limits of a form (the tenants' or the queues'):
// max_running, rate, work_quota and work_period (1h when a quota is
// given without one).
func limitsForm(r *http.Request) (LimitsRequest, error) {
	var l LimitsRequest
	maxRunning, err := formWhole(r, "max_running")
	if err != nil {
		return l, err
	}
	if maxRunning != nil {
		l.MaxRunning = new(int(*maxRunning))
	}
	if l.WorkQuota, err = formWhole(r, "work_quota"); err != nil {
		return l, err
	}
	if v := strings.TrimSpace(r.PostForm.Get("rate")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return l, fmt.Errorf("%w: rate %q: want a number of starts a second", tasks.ErrInvalidSpec, v)
		}
		l.Rate = &f
	}
	if p := strings.TrimSpace(r.PostForm.Get("work_period")); p != "" && l.WorkQuota != nil {
		l.WorkPeriod = &p
	} else if l.WorkQuota != nil && *l.WorkQuota > 0 {
		p := "1h"
		l.WorkPeriod = &p
	}
	return l, nil
}
