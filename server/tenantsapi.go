package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/stint-run/stint/tasks"
)

// The tenants' settings (tasks.Store's SetTenant* and Tenants): GET /v1/tenants lists them,
// POST /v1/tenants changes one tenant's.

// TenantsResponse is the body of GET /v1/tenants: the tenants with a
// setting that is not the default, by name, each with its tasks running
// and the work it used in its quota's current period.
type TenantsResponse struct {
	Tenants map[string]tasks.Tenant `json:"tenants"`
}

// TenantRequest is the body of POST /v1/tenants: the tenant ("" is the
// default tenant) and the settings to change; those left out keep their
// value. WorkPeriod takes a Go duration ("1h"); a quota needs one.
type TenantRequest struct {
	Tenant     string   `json:"tenant"`
	Weight     *int     `json:"weight,omitempty"`
	MaxRunning *int     `json:"max_running,omitempty"`
	WorkQuota  *int64   `json:"work_quota,omitempty"`
	WorkPeriod *string  `json:"work_period,omitempty"`
	Rate       *float64 `json:"rate,omitempty"`
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) {
	all, err := s.deps.Store.Tenants(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, TenantsResponse{Tenants: all})
}

// setTenant applies a TenantRequest and answers with the tenant's
// settings as they are now (200).
func (s *Server) setTenant(w http.ResponseWriter, r *http.Request) {
	var q TenantRequest
	if err := decodeObject(r.Body, "tenant", &q); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := q.apply(r, s.deps.Store); err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.deps.Store.Tenants(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, ok := all[q.Tenant]
	if !ok {
		t = tasks.Tenant{Weight: 1}
	}
	writeJSON(w, http.StatusOK, t)
}

// apply sets what q gives, each setting checked before any is written.
func (q TenantRequest) apply(r *http.Request, ts tasks.Store) error {
	if err := tasks.CheckTenantName(q.Tenant); err != nil {
		return err
	}
	var period time.Duration
	if q.WorkPeriod != nil {
		d, err := time.ParseDuration(*q.WorkPeriod)
		if err != nil {
			return fmt.Errorf("%w: work_period %q: want a duration like \"1h\"", tasks.ErrInvalidSpec, *q.WorkPeriod)
		}
		period = d
	}
	if q.WorkPeriod != nil && q.WorkQuota == nil {
		return fmt.Errorf("%w: work_period without work_quota", tasks.ErrInvalidSpec)
	}
	switch {
	case q.Weight != nil && tasks.CheckTenantWeight(*q.Weight) != nil:
		return tasks.CheckTenantWeight(*q.Weight)
	case q.MaxRunning != nil && tasks.CheckTenantMaxRunning(*q.MaxRunning) != nil:
		return tasks.CheckTenantMaxRunning(*q.MaxRunning)
	case q.WorkQuota != nil && tasks.CheckTenantWorkQuota(*q.WorkQuota, period) != nil:
		return tasks.CheckTenantWorkQuota(*q.WorkQuota, period)
	case q.Rate != nil && tasks.CheckTenantRate(*q.Rate) != nil:
		return tasks.CheckTenantRate(*q.Rate)
	}
	ctx := r.Context()
	if q.Weight != nil {
		if err := ts.SetTenantWeight(ctx, q.Tenant, *q.Weight); err != nil {
			return err
		}
	}
	if q.MaxRunning != nil {
		if err := ts.SetTenantMaxRunning(ctx, q.Tenant, *q.MaxRunning); err != nil {
			return err
		}
	}
	if q.Rate != nil {
		if err := ts.SetTenantRate(ctx, q.Tenant, *q.Rate); err != nil {
			return err
		}
	}
	if q.WorkQuota != nil {
		return ts.SetTenantWorkQuota(ctx, q.Tenant, *q.WorkQuota, period)
	}
	return nil
}
