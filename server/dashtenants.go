package server

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/stint-run/stint/tasks"
)

// The dashboard's tenants page: each tenant's weight, limit and quota,
// its running tasks and work used, and a form that changes them
// (as POST /v1/tenants does).

// tenantsView is the /tenants page's data.
type tenantsView struct {
	Tenants []tenantRow
}

// tenantRow is one tenant of the page.
type tenantRow struct {
	Name string
	tasks.Tenant
}

// routeDashTenants adds the tenants page and its form to mux.
func (s *Server) routeDashTenants(mux *http.ServeMux) {
	mux.HandleFunc("GET /tenants", s.dashPage(s.tenantsPage))
	mux.HandleFunc("POST /tenants", s.dashAction(s.tenantForm))
}

func (s *Server) tenantsPage(_ http.ResponseWriter, r *http.Request) (string, page, error) {
	v := tenantsView{}
	all, err := s.deps.Store.Tenants(r.Context())
	if err != nil {
		return "", page{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		v.Tenants = append(v.Tenants, tenantRow{Name: name, Tenant: all[name]})
	}
	return "tenants", page{Title: "Tenants", Refresh: overviewRefresh, Data: v}, nil
}

// tenantForm is the tenants page's form: the fields filled in are set,
// the empty ones left as they are.
func (s *Server) tenantForm(_ http.ResponseWriter, r *http.Request) (string, string, page, error) {
	q := TenantRequest{Tenant: r.PostForm.Get("tenant")}
	num := func(field string) (*int64, error) {
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
	var err error
	var weight, maxRunning *int64
	if weight, err = num("weight"); err != nil {
		return "", "", page{}, err
	}
	if maxRunning, err = num("max_running"); err != nil {
		return "", "", page{}, err
	}
	if q.WorkQuota, err = num("work_quota"); err != nil {
		return "", "", page{}, err
	}
	if v := strings.TrimSpace(r.PostForm.Get("rate")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "", "", page{}, fmt.Errorf("%w: rate %q: want a number of starts a second", tasks.ErrInvalidSpec, v)
		}
		q.Rate = &f
	}
	if weight != nil {
		q.Weight = new(int(*weight))
	}
	if maxRunning != nil {
		q.MaxRunning = new(int(*maxRunning))
	}
	if p := strings.TrimSpace(r.PostForm.Get("work_period")); p != "" && q.WorkQuota != nil {
		q.WorkPeriod = &p
	} else if q.WorkQuota != nil && *q.WorkQuota > 0 {
		p := "1h"
		q.WorkPeriod = &p
	}
	if err := q.apply(r, s.deps.Store); err != nil {
		return "", "", page{}, err
	}
	return "/tenants", "", page{}, nil
}
