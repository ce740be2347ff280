package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// The files in deploy/ that name metrics.
var (
	alertRules       = "../deploy/prometheus/stint-alerts.yaml"
	grafanaDashboard = "../deploy/grafana/stint-dashboard.json"
)

// metricName is a metric name in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:stint|go|process)_[a-z0-9_]+\b`)

// TestDeployMetricsExist: every metric the alert rules and the Grafana
// dashboard name is in the /metrics of a real server over a real SQLite
// store and a real pool that ran a task, with a runner and a schedule
// recorded; and the metrics to alert on carry what they should.
func TestDeployMetricsExist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := openStore(t)
	rt := newRuntime(t)
	var api atomic.Pointer[server.Server]
	p, err := pool.New(store, rt, pool.Config{Workers: 1, OnEvent: func(e pool.Event) {
		srv := api.Load()
		switch {
		case srv == nil:
		case e.Kind == pool.EventStarted:
			srv.ObserveAttemptStart(e.Queue, e.Waited)
		case e.Kind == pool.EventEnded:
			srv.ObserveAttemptEnd(e.Queue, e.Tenant, e.Attempt.Outcome, e.Attempt.Duration(), e.Attempt.Work)
		}
	}})
	require.NoError(t, err)
	srv, r := startServer(t, server.Config{}, server.Deps{Store: store, Submit: p.Submit, Version: "v1.2.3-test",
		Stats:        func() server.PoolStats { return server.PoolStats(p.Stats()) },
		SandboxStats: func() server.SandboxStats { return server.SandboxStats{} }})
	api.Store(srv)
	require.NoError(t, p.Start(ctx))
	t.Cleanup(func() { require.NoError(t, p.Stop(context.Background())) })

	_, err = store.RecordRunner(ctx, tasks.RunnerInfo{Owner: "r1", Host: "h", Lease: time.Minute, Workers: 1})
	require.NoError(t, err)
	sha, err := store.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	_, err = store.AddSchedule(ctx, tasks.Schedule{Name: "hourly", Cron: "0 * * * *", Spec: tasks.Spec{Module: sha}})
	require.NoError(t, err)
	require.NoError(t, store.SetTenantWorkQuota(ctx, "acme", 1000, time.Hour))  // the tenants' series
	require.NoError(t, store.SetQueueWorkQuota(ctx, "capped", 1000, time.Hour)) // the queues' limits' series
	task, _, err := p.Submit(ctx, tasks.Spec{Module: sha, Queue: "edge"})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := p.Wait(wctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State)

	// A task that waits (SQLite counts succeeded tasks by queue in
	// stint_tasks only).
	_, _, err = p.Submit(ctx, tasks.Spec{Module: sha, Queue: "edge", RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	// A ready task in a paused queue: it waits however old.
	require.NoError(t, store.PauseQueue(ctx, "held"))
	_, _, err = p.Submit(ctx, tasks.Spec{Module: sha, Queue: "held"})
	require.NoError(t, err)
	// A tenant's tasks, ready and for later, in the paused queue.
	_, _, err = p.Submit(ctx, tasks.Spec{Module: sha, Queue: "held", Tenant: "beta"})
	require.NoError(t, err)
	_, _, err = p.Submit(ctx, tasks.Spec{Module: sha, Queue: "held", Tenant: "beta", RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)

	rep := r.do("GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, rep.code)
	rep = r.do("GET", "/metrics", nil) // the first is counted in stint_http_requests_total
	require.Equal(t, http.StatusOK, rep.code)
	body := string(rep.body)
	exported := map[string]bool{}
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		exported[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	for _, line := range []string{
		`stint_attempts_ended_total{outcome="succeeded",queue="edge"} 1`,
		`stint_attempt_duration_seconds_count{queue="edge"} 1`,
		`stint_queue_wait_seconds_count{queue="edge"} 1`,
		`stint_queue_tasks{queue="edge",state="queued"} 1`,
		`stint_queue_scheduled_tasks{queue="edge"} 1`,
		`stint_queue_oldest_ready_age_seconds{queue="edge"} 0`,
		`stint_queue_scheduled_tasks{queue="held"} 1`,
		`stint_queue_paused{queue="held"} 1`,
		`stint_tasks{state="succeeded"} 1`,
		`stint_tasks{state="queued"} 4`,
		`stint_tenant_queued_tasks{tenant="beta"} 1`,
		`stint_tenant_scheduled_tasks{tenant="beta"} 1`,
		`stint_tenant_running_tasks{tenant="beta"} 0`,
		`stint_tenant_claimed_tasks{tenant="beta"} 0`,
		`stint_tasks{state="claimed"} 0`,
		`stint_tenant_work_units_used{tenant="acme"} 0`,
		`stint_tenant_throttled{tenant="acme"} 0`,
		`stint_queue_work_units_used{queue="capped"} 0`,
		`stint_queue_throttled{queue="capped"} 0`,
		`stint_tasks{state="dead"} 0`,
		`stint_runners{status="alive"} 1`,
		`stint_runners{status="silent"} 0`,
		`stint_schedules{status="active"} 1`,
		`stint_store_scrape_errors 0`,
		`stint_http_requests_total{code="200",method="GET",route="/metrics"} 1`,
		`stint_build_info{go_version="` + runtimeVersion() + `",version="v1.2.3-test"} 1`,
	} {
		require.True(t, strings.Contains(body, line+"\n"), "/metrics has no line %s", line)
	}
	require.Contains(t, body, `stint_schedule_next_run_timestamp_seconds{schedule="hourly"}`)
	require.Contains(t, body, `stint_queue_oldest_ready_age_seconds{queue="held"}`)
	require.Contains(t, body, `stint_attempt_work_units_total{queue="edge"} `)

	var named []string
	rules, err := os.ReadFile(alertRules)
	require.NoError(t, err)
	var parsed struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(rules, &parsed), alertRules)
	require.NotEmpty(t, parsed.Groups)
	for _, g := range parsed.Groups {
		for _, rule := range g.Rules {
			require.NotEmpty(t, rule.Alert)
			require.NotEmpty(t, rule.Expr, rule.Alert)
			named = append(named, metricName.FindAllString(rule.Expr, -1)...)
		}
	}
	dash, err := os.ReadFile(grafanaDashboard)
	require.NoError(t, err)
	var board struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(dash, &board), grafanaDashboard)
	require.NotEmpty(t, board.Panels)
	for _, panel := range board.Panels {
		require.NotEmpty(t, panel.Targets, panel.Title)
		for _, target := range panel.Targets {
			named = append(named, metricName.FindAllString(target.Expr, -1)...)
		}
	}
	slices.Sort(named)
	named = slices.Compact(named)
	require.Greater(t, len(named), 10)
	for _, name := range named {
		require.True(t, exported[name], "%s is named in deploy/ but not exported by /metrics", name)
	}
}

func runtimeVersion() string { return runtime.Version() }
