package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/stint-run/stint/tasks"
)

// The tenants' settings (tasks.Store's SetTenant* and Tenants): GET /v1/tenants lists them,
// POST /v1/tenants changes one tenant's. The queues' limits (SetQueue* and
// QueueLimits): GET /v1/queues shows them, POST /v1/queues/{queue}/limits
// changes one queue's.

// TenantsResponse is the body of GET /v1/tenants: the tenants with a
// setting that is not the default, by name, each with its tasks running
// and the work it used in its quota's current period.
type TenantsResponse struct {
	Tenants map[string]tasks.Tenant `json:"tenants"`
}

// TenantRequest is the body of POST /v1/tenants: the tenant ("" is the
// default tenant) and the settings to change; those left out keep their
// value.
type TenantRequest struct {
	Tenant string `json:"tenant"`
	Weight *int   `json:"weight,omitempty"`
	LimitsRequest
}

// LimitsRequest is the limits a TenantRequest changes, and the body of
// POST /v1/queues/{queue}/limits: those left out keep their value (0
// removes one). WorkPeriod takes a Go duration ("1h"); a quota needs one.
type LimitsRequest struct {
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
	err := q.apply(r, s.deps.Store)
	s.limitsChanged() // before the answer: a GET after it sees the change
	if err != nil {
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

// setQueueLimits applies a LimitsRequest to the queue of the path and
// answers with its limits as they are now (200).
func (s *Server) setQueueLimits(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	var q LimitsRequest
	if err := decodeObject(r.Body, "queue limits", &q); err != nil {
		s.writeError(w, r, err)
		return
	}
	err := tasks.CheckQueueName(queue)
	if err == nil {
		err = q.apply(r.Context(), queue, limitSetters{s.deps.Store.SetQueueMaxRunning, s.deps.Store.SetQueueWorkQuota,
			s.deps.Store.SetQueueRate})
		s.limitsChanged() // before the answer: a GET after it sees the change
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.deps.Store.QueueLimits(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, all[queue])
}

// apply sets what q gives, each setting checked before any is written.
func (q TenantRequest) apply(r *http.Request, ts tasks.Store) error {
	if err := tasks.CheckTenantName(q.Tenant); err != nil {
		return err
	}
	if q.Weight != nil {
		if err := tasks.CheckTenantWeight(*q.Weight); err != nil {
			return err
		}
	}
	if _, err := q.check(); err != nil {
		return err
	}
	if q.Weight != nil {
		if err := ts.SetTenantWeight(r.Context(), q.Tenant, *q.Weight); err != nil {
			return err
		}
	}
	return q.LimitsRequest.apply(r.Context(), q.Tenant, limitSetters{ts.SetTenantMaxRunning, ts.SetTenantWorkQuota, ts.SetTenantRate})
}

// limitSetters are a store's setters of a tenant's or of a queue's limits.
type limitSetters struct {
	maxRunning func(context.Context, string, int) error
	workQuota  func(context.Context, string, int64, time.Duration) error
	rate       func(context.Context, string, float64) error
}

// check checks every setting of l and returns its quota's period.
func (l LimitsRequest) check() (time.Duration, error) {
	var period time.Duration
	if l.WorkPeriod != nil {
		d, err := time.ParseDuration(*l.WorkPeriod)
		if err != nil {
			return 0, fmt.Errorf("%w: work_period %q: want a duration like \"1h\"", tasks.ErrInvalidSpec, *l.WorkPeriod)
		}
		period = d
	}
	if l.WorkPeriod != nil && l.WorkQuota == nil {
		return 0, fmt.Errorf("%w: work_period without work_quota", tasks.ErrInvalidSpec)
	}
	switch {
	case l.MaxRunning != nil && tasks.CheckTenantMaxRunning(*l.MaxRunning) != nil:
		return 0, tasks.CheckTenantMaxRunning(*l.MaxRunning)
	case l.WorkQuota != nil && tasks.CheckTenantWorkQuota(*l.WorkQuota, period) != nil:
		return 0, tasks.CheckTenantWorkQuota(*l.WorkQuota, period)
	case l.Rate != nil && tasks.CheckTenantRate(*l.Rate) != nil:
		return 0, tasks.CheckTenantRate(*l.Rate)
	}
	return period, nil
}

// apply sets the limits l gives of name with set, each checked before
// any is written.
func (l LimitsRequest) apply(ctx context.Context, name string, set limitSetters) error {
	period, err := l.check()
	if err != nil {
		return err
	}
	if l.MaxRunning != nil {
		if err := set.maxRunning(ctx, name, *l.MaxRunning); err != nil {
			return err
		}
	}
	if l.Rate != nil {
		if err := set.rate(ctx, name, *l.Rate); err != nil {
			return err
		}
	}
	if l.WorkQuota != nil {
		return set.workQuota(ctx, name, *l.WorkQuota, period)
	}
	return nil
}
