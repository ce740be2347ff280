package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// The runners and schedules endpoints over a real SQLite store.
func TestRunnersAndSchedulesAPI(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	checked := 0
	c, _ := newClient(t, server.Config{Token: "secret"}, server.Deps{Store: store,
		CheckSpec: func(s tasks.Spec) error {
			checked++
			return tasks.CheckSpec(s, tasks.Policy{Max: tasks.Limits{MemoryBytes: 1 << 20}})
		}})

	type runnersBody struct {
		Runners []server.RunnerView `json:"runners"`
	}
	rec := c.do("GET", "/v1/runners", nil)
	want(t, rec, http.StatusOK)
	require.Empty(t, decode[runnersBody](t, rec).Runners)
	ctx := context.Background()
	_, err := store.RecordRunner(ctx, tasks.RunnerInfo{Owner: "a", Host: "h", Lease: 10 * time.Second, Workers: 3, InFlight: 1})
	require.NoError(t, err)
	rec = c.do("GET", "/v1/runners", nil)
	want(t, rec, http.StatusOK)
	rs := decode[runnersBody](t, rec).Runners
	require.Len(t, rs, 1)
	require.Equal(t, "a", rs[0].Owner)
	require.Equal(t, "10s", rs[0].Lease)
	require.Equal(t, "alive", rs[0].Status)
	require.Equal(t, 3, rs[0].Workers)

	sha := c.upload()
	type schedulesBody struct {
		Schedules []server.ScheduleView `json:"schedules"`
	}
	rec = c.do("POST", "/v1/schedules", []byte(`{"name":"nightly","cron":"0 3 * * *","spec":{"module":"`+sha+`","queue":"edge","input":"aGk="}}`))
	want(t, rec, http.StatusCreated)
	require.Equal(t, "/v1/schedules/nightly", rec.Header().Get("Location"))
	sc := decode[server.ScheduleView](t, rec)
	require.Equal(t, "0 3 * * *", sc.Cron)
	require.Equal(t, 3, sc.NextRun.Hour())
	require.True(t, sc.NextRun.After(time.Now()))
	require.Equal(t, 2, sc.InputSize)
	require.Nil(t, sc.Spec.Input, "the input bytes are left out")
	require.Equal(t, 1, checked, "the spec is checked against the runner's policy")

	rec = c.do("POST", "/v1/schedules", []byte(`{"name":"tick","every":"10m","spec":{"module":"`+sha+`"}}`))
	want(t, rec, http.StatusCreated)
	require.Equal(t, "10m0s", decode[server.ScheduleView](t, rec).Every)

	for _, bad := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"name":"tick","every":"10m","spec":{"module":"` + sha + `"}}`, http.StatusConflict, "a schedule named tick exists"},
		{`{"name":"x","every":"soon","spec":{"module":"` + sha + `"}}`, http.StatusUnprocessableEntity, `every "soon"`},
		{`{"name":"x","cron":"* * *","spec":{"module":"` + sha + `"}}`, http.StatusUnprocessableEntity, "cron"},
		{`{"name":"x","spec":{"module":"` + sha + `"}}`, http.StatusUnprocessableEntity, "no interval and no cron"},
		{`{"name":"x","every":"1m","spec":{"module":"` + sha + `","limits":{"memory_bytes":2097152}}}`, http.StatusUnprocessableEntity, "over the runner's maximum"},
		{`{"name":"x","every":"1m","spec":{"module":"` + sha + `"},"extra":1}`, http.StatusBadRequest, "unknown field"},
		{`{"name":"x","every":"1m","spec":{"module":"` + sha[:10] + `"}}`, http.StatusUnprocessableEntity, "module"},
	} {
		wantError(t, c.do("POST", "/v1/schedules", []byte(bad.body)), bad.code, bad.msg)
	}

	rec = c.do("GET", "/v1/schedules", nil)
	want(t, rec, http.StatusOK)
	list := decode[schedulesBody](t, rec).Schedules
	require.Len(t, list, 2)
	require.Equal(t, "nightly", list[0].Name)

	rec = c.do("POST", "/v1/schedules/tick/pause", nil)
	want(t, rec, http.StatusOK)
	p := decode[server.ScheduleView](t, rec)
	require.True(t, p.Paused)
	require.True(t, p.NextRun.IsZero(), "no next run while paused")
	rec = c.do("POST", "/v1/schedules/tick/resume", nil)
	want(t, rec, http.StatusOK)
	require.False(t, decode[server.ScheduleView](t, rec).Paused)
	wantError(t, c.do("POST", "/v1/schedules/none/pause", nil), http.StatusNotFound, "schedule not found")
	wantError(t, c.do("GET", "/v1/schedules/none", nil), http.StatusNotFound, "schedule not found")
	wantError(t, c.do("GET", "/v1/schedules/tick/pause", nil), http.StatusMethodNotAllowed, "not allowed")

	want(t, c.do("DELETE", "/v1/schedules/tick", nil), http.StatusNoContent)
	wantError(t, c.do("DELETE", "/v1/schedules/tick", nil), http.StatusNotFound, "schedule not found")
	rec = c.do("GET", "/v1/schedules/nightly", nil)
	want(t, rec, http.StatusOK)
	require.Equal(t, "edge", decode[server.ScheduleView](t, rec).Spec.Queue)

	// Every route wants the token.
	c.token = ""
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/runners"}, {"GET", "/v1/schedules"}, {"POST", "/v1/schedules"},
		{"POST", "/v1/schedules/nightly/pause"}, {"DELETE", "/v1/schedules/nightly"},
	} {
		wantError(t, c.do(r.method, r.path, nil), http.StatusUnauthorized, "bearer token")
	}
}
