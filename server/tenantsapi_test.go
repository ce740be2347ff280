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

	// Through the API, which the next GET sees at once (a change made
	// elsewhere shows within limitsFresh).
	want(t, c.do("POST", "/v1/tenants", []byte(`{"tenant":"acme","work_quota":0}`)), http.StatusOK)
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

// TestQueueLimitsAPI: POST /v1/queues/{queue}/limits sets the limits it
// names and keeps the others, checks them all before writing any, and
// answers the queue's limits; GET /v1/queues lists them beside the counts
// (a queue with a limit and no task too), and GET /v1/tasks/{id} of a
// ready task the queue holds back says why; the store's claims apply them.
func TestQueueLimitsAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	c, _ := newClient(t, server.Config{}, server.Deps{Store: st})

	rec := c.do("POST", "/v1/queues/slow/limits", []byte(`{"max_running":1}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.SharedLimits{MaxRunning: 1}, decode[tasks.SharedLimits](t, rec))
	rec = c.do("POST", "/v1/queues/slow/limits", []byte(`{"work_quota":1000,"work_period":"1h","rate":0.5}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.SharedLimits{MaxRunning: 1, WorkQuota: 1000, WorkPeriod: time.Hour, Rate: 0.5, Tokens: 1},
		decode[tasks.SharedLimits](t, rec), "max_running kept")
	for _, tc := range []struct{ body, msg string }{
		{`{"max_running":-1,"rate":2}`, "max_running"},
		{`{"rate":-1}`, "rate"},
		{`{"work_quota":10,"work_period":"1ms"}`, "1s"},
		{`{"work_period":"1h"}`, "work_period without work_quota"},
	} {
		wantError(t, c.do("POST", "/v1/queues/slow/limits", []byte(tc.body)), http.StatusUnprocessableEntity, tc.msg)
	}
	wantError(t, c.do("POST", "/v1/queues/slow/limits", []byte(`{"max_runing":2}`)), http.StatusBadRequest, "unknown field")
	rec = c.do("POST", "/v1/queues/idle/limits", []byte(`{"rate":3}`))
	want(t, rec, http.StatusOK)

	var slow []tasks.Task
	for range 2 {
		task, _, err := st.Submit(ctx, tasks.Spec{Module: mod, Queue: "slow"})
		require.NoError(t, err)
		slow = append(slow, task)
	}
	cl := claimOne(t, st, tasks.ClaimRequest{Owner: "runner-a", Max: 10, Lease: time.Minute})
	require.Equal(t, slow[0].ID, cl.Task.ID, "slow's limit: one of its two")

	rec = c.do("GET", "/v1/queues", nil)
	want(t, rec, http.StatusOK)
	qs := decode[queuesBody](t, rec).Queues
	require.Len(t, qs, 2)
	require.Equal(t, "idle", qs[0].Queue, "a queue with a limit and no task")
	require.Equal(t, &tasks.SharedLimits{Rate: 3, Tokens: 3}, qs[0].Limits)
	qs[1].Limits.Tokens = 0 // spent by the claim, refilling at 0.5 a second
	require.Equal(t, &tasks.SharedLimits{MaxRunning: 1, Claimed: 1, Queued: 1, WorkQuota: 1000, WorkPeriod: time.Hour, Rate: 0.5},
		qs[1].Limits)

	path := fmt.Sprintf("/v1/tasks/%d", slow[1].ID)
	rec = c.do("GET", path, nil)
	want(t, rec, http.StatusOK)
	v := decode[server.TaskView](t, rec)
	require.NotNil(t, v.Throttled, "slow runs its most")
	require.Equal(t, "its queue runs its most tasks at once (1)", v.Throttled.Reason)

	rec = c.do("POST", "/v1/queues/slow/limits", []byte(`{"max_running":0,"rate":0,"work_quota":0}`))
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.SharedLimits{}, decode[tasks.SharedLimits](t, rec), "no limit left")
	require.Nil(t, decode[server.TaskView](t, c.do("GET", path, nil)).Throttled)
	require.Equal(t, slow[1].ID, claimOne(t, st, tasks.ClaimRequest{Owner: "runner-a", Max: 10, Lease: time.Minute}).Task.ID)
}
