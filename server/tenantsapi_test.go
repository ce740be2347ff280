package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestTenantsAPI: POST /v1/tenants sets the settings it names and keeps
// the others, checks them all before writing any, and GET /v1/tenants
// lists them.
func TestTenantsAPI(t *testing.T) {
	t.Parallel()
	st, _ := noopStore(t, sqlite.Options{})
	c, _ := newClient(t, server.Config{}, server.Deps{Store: st})

	rec := c.do("POST", "/v1/tenants", []byte(`{"tenant":"acme","weight":3,"max_running":5}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.Tenant{Weight: 3, MaxRunning: 5}, decode[tasks.Tenant](t, rec))
	rec = c.do("POST", "/v1/tenants", []byte(`{"tenant":"acme","work_quota":1000,"work_period":"1h"}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.Tenant{Weight: 3, MaxRunning: 5, WorkQuota: 1000, WorkPeriod: time.Hour}, decode[tasks.Tenant](t, rec))
	rec = c.do("POST", "/v1/tenants", []byte(`{"tenant":"","weight":2,"rate":0.5}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.Tenant{Weight: 2, Rate: 0.5, Tokens: 1}, decode[tasks.Tenant](t, rec), "a full bucket holds max(1, rate)")

	for _, tc := range []struct{ body, msg string }{
		{`{"tenant":"acme","weight":0,"max_running":1}`, "weight"},
		{`{"tenant":"acme","max_running":-1}`, "max_running"},
		{`{"tenant":"acme","rate":-1}`, "rate"},
		{`{"tenant":"acme","work_quota":10,"work_period":"1ms"}`, "1s"},
		{`{"tenant":"acme","work_period":"1h"}`, "work_period without work_quota"},
		{`{"tenant":"acme","work_quota":10,"work_period":"soon"}`, "work_period"},
		{`{"tenant":"a\tb","weight":2}`, "tenant"},
	} {
		wantError(t, c.do("POST", "/v1/tenants", []byte(tc.body)), http.StatusUnprocessableEntity, tc.msg)
	}
	wantError(t, c.do("POST", "/v1/tenants", []byte(`{"tenant":"acme","wieght":2}`)), http.StatusBadRequest, "unknown field")

	rec = c.do("GET", "/v1/tenants", nil)
	want(t, rec, http.StatusOK)
	require.Equal(t, map[string]tasks.Tenant{
		"acme": {Weight: 3, MaxRunning: 5, WorkQuota: 1000, WorkPeriod: time.Hour},
		"":     {Weight: 2, Rate: 0.5, Tokens: 1},
	}, decode[server.TenantsResponse](t, rec).Tenants, "a refused request changed nothing")
}
