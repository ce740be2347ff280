package server_test

import (
	"context"
	"fmt"
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
	require.Equal(t, tasks.Tenant{Weight: 3, SharedLimits: tasks.SharedLimits{MaxRunning: 5}}, decode[tasks.Tenant](t, rec))
	rec = c.do("POST", "/v1/tenants", []byte(`{"tenant":"acme","work_quota":1000,"work_period":"1h"}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.Tenant{Weight: 3, SharedLimits: tasks.SharedLimits{MaxRunning: 5, WorkQuota: 1000, WorkPeriod: time.Hour}}, decode[tasks.Tenant](t, rec))
	rec = c.do("POST", "/v1/tenants", []byte(`{"tenant":"","weight":2,"rate":0.5}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.Tenant{Weight: 2, SharedLimits: tasks.SharedLimits{Rate: 0.5, Tokens: 1}}, decode[tasks.Tenant](t, rec), "a full bucket holds max(1, rate)")

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
		"acme": {Weight: 3, SharedLimits: tasks.SharedLimits{MaxRunning: 5, WorkQuota: 1000, WorkPeriod: time.Hour}},
		"":     {Weight: 2, SharedLimits: tasks.SharedLimits{Rate: 0.5, Tokens: 1}},
	}, decode[server.TenantsResponse](t, rec).Tenants, "a refused request changed nothing")
}

// TestTaskThrottledInAPI: GET /v1/tasks/{id} of a ready task whose tenant
// is at its work quota says so and until when; once the quota is lifted,
// it does not.
func TestTaskThrottledInAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	c, _ := newClient(t, server.Config{}, server.Deps{Store: st})
	require.NoError(t, st.SetTenantWorkQuota(ctx, "acme", 10, time.Hour))
	first, _, err := st.Submit(ctx, tasks.Spec{Module: mod, Tenant: "acme"})
	require.NoError(t, err)
	second, _, err := st.Submit(ctx, tasks.Spec{Module: mod, Tenant: "acme"})
	require.NoError(t, err)
	cl, err := st.Claim(ctx, tasks.ClaimRequest{Owner: "test", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, first.ID, cl[0].Task.ID)
	errs, err := st.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded", Work: 50}}}) // over its quota of 10
	require.NoError(t, err)
	require.NoError(t, errs[0])

	path := fmt.Sprintf("/v1/tasks/%d", second.ID)
	rec := c.do("GET", path, nil)
	want(t, rec, http.StatusOK)
	v := decode[server.TaskView](t, rec)
	require.NotNil(t, v.Throttled, "the tenant is at its quota")
	require.Contains(t, v.Throttled.Reason, "work quota")
	require.True(t, v.Throttled.Until.After(time.Now()))

	require.NoError(t, st.SetTenantWorkQuota(ctx, "acme", 0, 0))
	rec = c.do("GET", path, nil)
	want(t, rec, http.StatusOK)
	require.Nil(t, decode[server.TaskView](t, rec).Throttled)
}

// TestClaimedTaskInAPI: GET /v1/tasks/{id} and GET /v1/tasks show a task a
// runner claimed and none of its workers began as "claimed", with its
// runner, and as "running" once the runner marked it begun; the tenants'
// counts and the task counts tell them apart too.
func TestClaimedTaskInAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	c, _ := newClient(t, server.Config{}, server.Deps{Store: st})
	task, _, err := st.Submit(ctx, tasks.Spec{Module: mod, Tenant: "acme"})
	require.NoError(t, err)
	cl := claimOne(t, st, tasks.ClaimRequest{Owner: "runner-a", Max: 1, Lease: time.Minute})
	require.Equal(t, task.ID, cl.Task.ID)

	check := func(state tasks.State, claimed, running int) {
		t.Helper()
		rec := c.do("GET", fmt.Sprintf("/v1/tasks/%d", task.ID), nil)
		want(t, rec, http.StatusOK)
		v := decode[server.TaskView](t, rec)
		require.Equal(t, state, v.State)
		require.Equal(t, "runner-a", v.LeaseOwner, "its runner")
		require.Equal(t, state == tasks.StateRunning, !v.BeganAt.IsZero())
		rec = c.do("GET", "/v1/tasks", nil)
		want(t, rec, http.StatusOK)
		list := decode[struct {
			Tasks []server.TaskView `json:"tasks"`
		}](t, rec)
		require.Len(t, list.Tasks, 1)
		require.Equal(t, state, list.Tasks[0].State)
		rec = c.do("GET", "/v1/tasks?state=claimed", nil)
		want(t, rec, http.StatusOK)
		require.Len(t, decode[struct {
			Tasks []server.TaskView `json:"tasks"`
		}](t, rec).Tasks, claimed, "state=claimed lists the claimed alone")
		rec = c.do("GET", "/v1/tenants", nil)
		want(t, rec, http.StatusOK)
		acme := decode[server.TenantsResponse](t, rec).Tenants["acme"]
		require.Equal(t, claimed, acme.Claimed)
		require.Equal(t, running, acme.Running)
	}
	check(tasks.StateClaimed, 1, 0)
	require.NoError(t, st.MarkBegun(ctx, []tasks.Lease{cl.Lease}))
	check(tasks.StateRunning, 0, 1)
}
