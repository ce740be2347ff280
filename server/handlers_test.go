package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := server.New(server.Config{}, server.Deps{})
	require.ErrorContains(t, err, "store is required")
	_, err = server.New(server.Config{MaxModuleBytes: -1}, server.Deps{Store: newFakeStore()})
	require.ErrorContains(t, err, "negative")
	srv, err := server.New(server.Config{}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	require.Equal(t, server.DefaultAddr, srv.Addr())
	require.NotNil(t, srv.Registry())
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := server.Config{}.WithDefaults()
	require.Equal(t, "127.0.0.1:8080", c.Addr)
	require.Equal(t, int64(64<<20), c.MaxModuleBytes)
	require.NotNil(t, c.Logger)
	require.NoError(t, c.Validate())
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	var ready atomic.Bool
	ready.Store(true)
	c, _ := newClient(t, server.Config{Token: "secret"}, server.Deps{Store: newFakeStore(), Ready: ready.Load})
	c.token = "" // probes need no token

	rec := c.do("GET", "/healthz", nil)
	want(t, rec, http.StatusOK)
	require.Equal(t, "ok", rec.Body.String())

	rec = c.do("GET", "/readyz", nil)
	want(t, rec, http.StatusOK)
	require.JSONEq(t, `{"ready":true}`, rec.Body.String())

	ready.Store(false)
	rec = c.do("GET", "/readyz", nil)
	want(t, rec, http.StatusServiceUnavailable)
	require.JSONEq(t, `{"ready":false}`, rec.Body.String())

	// Still healthy, and submissions are still accepted (only queued).
	want(t, c.do("GET", "/healthz", nil), http.StatusOK)
	c.token = "secret"
	sum := c.upload()
	c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)
}

func TestReadyDefaultsToTrue(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: newFakeStore()})
	want(t, c.do("GET", "/readyz", nil), http.StatusOK)
}

func TestToken(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, server.Config{Token: "s3cret"}, server.Deps{Store: newFakeStore()})
	for _, tc := range []struct {
		name, header string
		code         int
	}{
		{"missing", "", http.StatusUnauthorized},
		{"wrong", "Bearer nope", http.StatusUnauthorized},
		{"prefix of the token", "Bearer s3cre", http.StatusUnauthorized},
		{"not bearer", "Basic s3cret", http.StatusUnauthorized},
		{"no scheme", "s3cret", http.StatusUnauthorized},
		{"right", "Bearer s3cret", http.StatusOK},
		{"scheme case-insensitive", "bearer s3cret", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "/v1/tasks", nil)
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := doReq(c.h, req)
			if tc.code == http.StatusUnauthorized {
				wantError(t, rec, tc.code, "bearer token")
				require.Contains(t, rec.Header().Get("WWW-Authenticate"), "Bearer")
			} else {
				want(t, rec, tc.code)
			}
		})
	}
	// Unknown /v1 paths are refused before routing: nothing leaks.
	c.token = ""
	wantError(t, c.do("GET", "/v1/nothing", nil), http.StatusUnauthorized, "bearer token")
	wantError(t, c.do("POST", "/v1/modules", noop), http.StatusUnauthorized, "bearer token")
	// Probes stay open; /metrics too, but only to loopback addresses
	// (httptest's requests come from 192.0.2.1: TestMetricsLoopbackOnly).
	want(t, c.do("GET", "/healthz", nil), http.StatusOK)
	want(t, c.do("GET", "/readyz", nil), http.StatusOK)
	wantError(t, c.do("GET", "/metrics", nil), http.StatusUnauthorized, "bearer token")
}

func TestModules(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, server.Config{MaxModuleBytes: 1024}, server.Deps{Store: newFakeStore()})

	rec := c.do("POST", "/v1/modules", noop)
	want(t, rec, http.StatusCreated)
	m := decode[moduleBody](t, rec)
	require.True(t, tasks.ValidModuleHash(m.SHA256), m.SHA256)
	require.Equal(t, len(noop), m.Size)
	// The same bytes again: same hash.
	rec = c.do("POST", "/v1/modules", noop)
	want(t, rec, http.StatusCreated)
	require.Equal(t, m.SHA256, decode[moduleBody](t, rec).SHA256)

	wantError(t, c.do("POST", "/v1/modules", nil), http.StatusBadRequest, "empty")
	wantError(t, c.do("POST", "/v1/modules", []byte("(module)")), http.StatusBadRequest, "not a WebAssembly")
	big := append(append([]byte(nil), noop...), make([]byte, 2048)...)
	wantError(t, c.do("POST", "/v1/modules", big), http.StatusRequestEntityTooLarge, "1024 bytes")

	// Without a Content-Length the limit still holds while reading.
	req, err := http.NewRequest("POST", "/v1/modules", strings.NewReader(string(big)))
	require.NoError(t, err)
	setContentType(req)
	req.ContentLength = -1
	wantError(t, doReq(c.h, req), http.StatusRequestEntityTooLarge, "1024 bytes")

	wantError(t, c.do("GET", "/v1/modules", nil), http.StatusMethodNotAllowed, "POST")
}

func TestSubmit(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()

	rec := c.do("POST", "/v1/tasks", []byte(`{"module":"`+sum+`","input":"aGk=","args":["a"],"limits":{"timeout":"30s","stdout":100}}`))
	want(t, rec, http.StatusCreated)
	task := decode[apiTask](t, rec)
	require.Equal(t, fmt.Sprintf("/v1/tasks/%d", task.ID), rec.Header().Get("Location"))
	require.Equal(t, tasks.StateQueued, task.State)
	require.Nil(t, task.Input, "a task view carries the input's size, not the input")
	require.NotContains(t, rec.Body.String(), `"input":`)
	require.Equal(t, 2, task.InputSize)
	require.Equal(t, 30*time.Second, task.Limits.Timeout)
	require.Equal(t, int64(100), task.Limits.Stdout)
	require.Equal(t, tasks.DefaultQueue, task.Queue)
	require.Equal(t, -1, task.CheckpointSize)

	// Nanoseconds, as time.Duration encodes, work too.
	task = c.submit(`{"module":"`+sum+`","limits":{"timeout":1500000000}}`, http.StatusCreated)
	require.Equal(t, 1500*time.Millisecond, task.Limits.Timeout)

	// The idempotency key: the first task, with 200.
	first := c.submit(`{"module":"`+sum+`","idempotency_key":"k1"}`, http.StatusCreated)
	again := c.submit(`{"module":"`+sum+`","idempotency_key":"k1","priority":5}`, http.StatusOK)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, 0, again.Priority)

	// The tenant (fair claims).
	require.Equal(t, "acme", c.submit(`{"module":"`+sum+`","tenant":"acme"}`, http.StatusCreated).Tenant)

	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"empty body", ``, http.StatusBadRequest, "empty"},
		{"not JSON", `module=abc`, http.StatusBadRequest, "invalid task spec JSON"},
		{"truncated", `{"module":`, http.StatusBadRequest, "invalid task spec JSON"},
		{"wrong type", `{"module":5}`, http.StatusBadRequest, "invalid task spec JSON"},
		{"unknown field", `{"module":"` + sum + `","timeout":"5s"}`, http.StatusBadRequest, `unknown field "timeout"`},
		{"unknown limit", `{"module":"` + sum + `","limits":{"memory":"64MiB"}}`, http.StatusBadRequest, `unknown field "memory"`},
		{"trailing data", `{"module":"` + sum + `"} {}`, http.StatusBadRequest, "after the object"},
		{"bad duration", `{"module":"` + sum + `","limits":{"timeout":"soon"}}`, http.StatusBadRequest, "duration"},
		{"fractional nanos", `{"module":"` + sum + `","limits":{"timeout":1.5}}`, http.StatusBadRequest, "duration"},
		{"array", `[]`, http.StatusBadRequest, "invalid task spec JSON"},
		{"no module", `{}`, http.StatusUnprocessableEntity, "module is empty"},
		{"bad module hash", `{"module":"abc"}`, http.StatusUnprocessableEntity, "not a hex sha256"},
		{"negative timeout", `{"module":"` + sum + `","limits":{"timeout":"-1s"}}`, http.StatusUnprocessableEntity, "limits.timeout is negative"},
		{"negative attempts", `{"module":"` + sum + `","max_attempts":-1}`, http.StatusUnprocessableEntity, "max_attempts"},
		{"unknown module", `{"module":"` + strings.Repeat("ab", 32) + `"}`, http.StatusNotFound, "module not found"},
		{"args over the cap", `{"module":"` + sum + `","args":[` + strings.Repeat(`"a",`, int(tasks.MaxCaps.Args)) + `"a"]}`,
			http.StatusRequestEntityTooLarge, "args: 1025 entries, over 1024 entries, the most any runner takes (limits.max_args)"},
		{"queue over the cap", `{"module":"` + sum + `","queue":"` + strings.Repeat("q", int(tasks.MaxCaps.Queue)+1) + `"}`,
			http.StatusRequestEntityTooLarge, "(limits.max_queue)"},
		{"tenant over the cap", `{"module":"` + sum + `","tenant":"` + strings.Repeat("t", tasks.MaxTenantName+1) + `"}`,
			http.StatusRequestEntityTooLarge, "(tasks.MaxTenantName)"},
		{"tenant with a control character", `{"module":"` + sum + `","tenant":"a\tb"}`, http.StatusUnprocessableEntity, "tenant"},
		{"key over the cap", `{"module":"` + sum + `","idempotency_key":"` + strings.Repeat("k", int(tasks.MaxCaps.IdempotencyKey)+1) + `"}`,
			http.StatusRequestEntityTooLarge, "(limits.max_idempotency_key)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, c.do("POST", "/v1/tasks", []byte(tc.body)), tc.code, tc.msg)
		})
	}
}

func TestSubmitUsesDepsSubmit(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	var calls atomic.Int32
	submit := func(ctx context.Context, spec tasks.Spec) (tasks.Task, bool, error) {
		calls.Add(1)
		if len(spec.Mounts) > 0 {
			return tasks.Task{}, false, fmt.Errorf("%w: mount %s is not allowed", tasks.ErrInvalidSpec, spec.Mounts[0].HostPath)
		}
		return store.Submit(ctx, spec)
	}
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store, Submit: submit})
	sum := c.upload()
	c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)
	wantError(t, c.do("POST", "/v1/tasks", []byte(`{"module":"`+sum+`","mounts":[{"host_path":"/etc","guest_path":"/etc"}]}`)),
		http.StatusUnprocessableEntity, "mount /etc is not allowed")
	require.Equal(t, int32(2), calls.Load())
}

func TestSubmitTooLarge(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, server.Config{MaxModuleBytes: 1024}, server.Deps{Store: newFakeStore()})
	sum := c.upload()
	body := `{"module":"` + sum + `","input":"` + strings.Repeat("A", 2048) + `"}`
	wantError(t, c.do("POST", "/v1/tasks", []byte(body)), http.StatusRequestEntityTooLarge, "over the limit")
	req, err := http.NewRequest("POST", "/v1/tasks", strings.NewReader(body))
	require.NoError(t, err)
	setContentType(req)
	req.ContentLength = -1
	wantError(t, doReq(c.h, req), http.StatusRequestEntityTooLarge, "over the limit")
}

func TestGetTask(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	task := c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)

	rec := c.do("GET", fmt.Sprintf("/v1/tasks/%d", task.ID), nil)
	want(t, rec, http.StatusOK)
	got := decode[apiTask](t, rec)
	require.Equal(t, task.ID, got.ID)
	require.Contains(t, rec.Body.String(), `"checkpoint_size":-1`)
	require.Contains(t, rec.Body.String(), `"progress_done":0`)
	require.Contains(t, rec.Body.String(), `"progress_total":0`)

	// The result bytes are not in the task, only their size.
	store.set(task.ID, func(tk *tasks.Task) {
		tk.State, tk.Result, tk.ResultSize, tk.ProgressDone, tk.ProgressTotal, tk.CheckpointSize = tasks.StateSucceeded, []byte("output"), 6, 3, 4, 10
	})
	rec = c.do("GET", fmt.Sprintf("/v1/tasks/%d", task.ID), nil)
	want(t, rec, http.StatusOK)
	require.NotContains(t, rec.Body.String(), `"result"`)
	got = decode[apiTask](t, rec)
	require.Equal(t, 6, got.ResultSize)
	require.Equal(t, int64(3), got.ProgressDone)
	require.Equal(t, int64(4), got.ProgressTotal)
	require.Equal(t, 10, got.CheckpointSize)

	for _, p := range []string{"abc", "0", "-3", "1.5", "99999999999999999999"} {
		for _, sub := range []string{"", "/attempts", "/result"} {
			wantError(t, c.do("GET", "/v1/tasks/"+p+sub, nil), http.StatusBadRequest, "want a positive integer")
		}
		wantError(t, c.do("POST", "/v1/tasks/"+p+"/cancel", nil), http.StatusBadRequest, "want a positive integer")
	}
	wantError(t, c.do("GET", "/v1/tasks/999", nil), http.StatusNotFound, "task not found")
	wantError(t, c.do("GET", "/v1/tasks/999/attempts", nil), http.StatusNotFound, "task not found")
	wantError(t, c.do("GET", "/v1/tasks/999/result", nil), http.StatusNotFound, "task not found")
	wantError(t, c.do("POST", "/v1/tasks/999/cancel", nil), http.StatusNotFound, "task not found")
	wantError(t, c.do("POST", "/v1/tasks/999/retry", nil), http.StatusNotFound, "task not found")
}

func TestResult(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	task := c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)
	path := fmt.Sprintf("/v1/tasks/%d/result", task.ID)

	wantError(t, c.do("GET", path, nil), http.StatusConflict, "is queued")

	store.set(task.ID, func(tk *tasks.Task) { tk.State, tk.Result = tasks.StateSucceeded, []byte{0, 1, 2, 'x'} })
	rec := c.do("GET", path, nil)
	want(t, rec, http.StatusOK)
	require.Equal(t, "application/octet-stream", rec.Header().Get("Content-Type"))
	require.Equal(t, []byte{0, 1, 2, 'x'}, rec.Body.Bytes())

	// An empty result is an empty body, not an error.
	store.set(task.ID, func(tk *tasks.Task) { tk.Result = nil })
	rec = c.do("GET", path, nil)
	want(t, rec, http.StatusOK)
	require.Empty(t, rec.Body.Bytes())
}

func TestAttempts(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	task := c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)
	rec := c.do("GET", fmt.Sprintf("/v1/tasks/%d/attempts", task.ID), nil)
	want(t, rec, http.StatusOK)
	require.JSONEq(t, `{"attempts":[]}`, rec.Body.String())

	store.mu.Lock()
	store.attempts[task.ID] = []tasks.Attempt{{TaskID: task.ID, Number: 1, Outcome: "failed", ExitCode: 3, Counted: true}}
	store.mu.Unlock()
	rec = c.do("GET", fmt.Sprintf("/v1/tasks/%d/attempts", task.ID), nil)
	want(t, rec, http.StatusOK)
	as := decode[attemptsBody](t, rec).Attempts
	require.Len(t, as, 1)
	require.Equal(t, "failed", as[0].Outcome)
	require.Equal(t, 3, as[0].ExitCode)
}

func TestCancelRetry(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	task := c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)
	base := fmt.Sprintf("/v1/tasks/%d", task.ID)

	wantError(t, c.do("POST", base+"/retry", nil), http.StatusConflict, "not allowed in this task state")
	rec := c.do("POST", base+"/cancel", nil)
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.StateCancelled, decode[apiTask](t, rec).State)
	wantError(t, c.do("POST", base+"/cancel", nil), http.StatusConflict, "not allowed in this task state")
	rec = c.do("POST", base+"/retry", nil)
	want(t, rec, http.StatusOK)
	require.Equal(t, tasks.StateQueued, decode[apiTask](t, rec).State)

	wantError(t, c.do("GET", base+"/cancel", nil), http.StatusMethodNotAllowed, "POST")
}

func TestList(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})

	rec := c.do("GET", "/v1/tasks", nil)
	want(t, rec, http.StatusOK)
	require.JSONEq(t, `{"tasks":[]}`, rec.Body.String())

	sum := c.upload()
	var ids []int64
	for i := range 5 {
		q := "a"
		if i%2 == 1 {
			q = "b"
		}
		ids = append(ids, c.submit(`{"module":"`+sum+`","queue":"`+q+`"}`, http.StatusCreated).ID)
	}
	_ = c.do("POST", fmt.Sprintf("/v1/tasks/%d/cancel", ids[0]), nil)

	require.Equal(t, ids, idsOf(c.list("")))
	require.Equal(t, []int64{ids[1], ids[3]}, idsOf(c.list("?queue=b")))
	require.Equal(t, []int64{ids[0]}, idsOf(c.list("?state=cancelled")))
	require.Equal(t, []int64{ids[2], ids[4]}, idsOf(c.list("?state=queued&queue=a")))

	// Paging.
	p1 := c.list("?limit=2")
	require.Equal(t, ids[:2], idsOf(p1))
	require.Equal(t, ids[1], p1.NextAfter)
	p2 := c.list(fmt.Sprintf("?limit=2&after=%d", p1.NextAfter))
	require.Equal(t, ids[2:4], idsOf(p2))
	p3 := c.list(fmt.Sprintf("?limit=2&after=%d", p2.NextAfter))
	require.Equal(t, ids[4:], idsOf(p3))
	require.Zero(t, p3.NextAfter)

	for _, q := range []string{"state=done", "after=x", "after=-1", "limit=0", "limit=-2", "limit=1001", "limit=ten"} {
		wantError(t, c.do("GET", "/v1/tasks?"+q, nil), http.StatusBadRequest, strings.SplitN(q, "=", 2)[0])
	}
}

func TestListLabels(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	labelled := []string{`{"src":"api","team":"a"}`, `{"src":"cli"}`, `{"src":"api"}`, `{}`, `{"src":"api","team":"b"}`}
	var ids []int64
	for _, l := range labelled {
		ids = append(ids, c.submit(`{"module":"`+sum+`","labels":`+l+`}`, http.StatusCreated).ID)
	}
	require.Equal(t, []int64{ids[0], ids[2], ids[4]}, idsOf(c.list("?label=src=api")))
	require.Equal(t, []int64{ids[4]}, idsOf(c.list("?label=src=api&label=team=b")))
	require.Equal(t, []int64{ids[4]}, idsOf(c.list("?label=src%3Dapi&label=team%3Db&label=team%3Db")))
	require.Empty(t, idsOf(c.list("?label=src=api&state=dead")))
	require.Empty(t, idsOf(c.list("?label=src=")))

	// Paging: a full page says where the next starts.
	p1 := c.list("?label=src=api&limit=2")
	require.Equal(t, []int64{ids[0], ids[2]}, idsOf(p1))
	require.Equal(t, ids[2], p1.NextAfter)
	p2 := c.list(fmt.Sprintf("?label=src=api&limit=2&after=%d", p1.NextAfter))
	require.Equal(t, []int64{ids[4]}, idsOf(p2))
	require.Zero(t, p2.NextAfter)

	for _, q := range []string{"label=src", "label==api", "label=src=api&label=src=cli"} {
		wantError(t, c.do("GET", "/v1/tasks?"+q, nil), http.StatusBadRequest, "label")
	}
	many := strings.Repeat("label=a=b&", 17)
	wantError(t, c.do("GET", "/v1/tasks?"+many, nil), http.StatusBadRequest, "at most 16")

	// A request reads at most 10,000 tasks: past them, a page may come
	// back short (here empty) with the after= to go on from.
	all := ids
	for range 10_000 {
		tk, _, err := store.Submit(context.Background(), tasks.Spec{Module: sum})
		require.NoError(t, err)
		all = append(all, tk.ID)
	}
	far, _, err := store.Submit(context.Background(), tasks.Spec{Module: sum, Labels: map[string]string{"src": "far"}})
	require.NoError(t, err)
	p := c.list("?label=src=far")
	require.Empty(t, p.Tasks)
	require.Equal(t, all[9_999], p.NextAfter) // the 10,000th task read
	p = c.list(fmt.Sprintf("?label=src=far&after=%d", p.NextAfter))
	require.Equal(t, []int64{far.ID}, idsOf(p))
	require.Zero(t, p.NextAfter)
}

func TestStoreFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{errors.New("disk I/O error at /secret/path"), http.StatusInternalServerError, "internal server error"},
		{fmt.Errorf("open: %w", tasks.ErrLocked), http.StatusServiceUnavailable, "locked"},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "deadline"},
		{fmt.Errorf("x: %w", tasks.ErrStaleLease), http.StatusConflict, "stale lease"},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			store := newFakeStore()
			c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
			sum := c.upload()
			task := c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)
			store.setFail(tc.err)
			for _, r := range []struct{ method, path string }{
				{"GET", "/v1/tasks"},
				{"GET", fmt.Sprintf("/v1/tasks/%d", task.ID)},
				{"GET", fmt.Sprintf("/v1/tasks/%d/attempts", task.ID)},
				{"GET", fmt.Sprintf("/v1/tasks/%d/result", task.ID)},
				{"POST", fmt.Sprintf("/v1/tasks/%d/cancel", task.ID)},
				{"POST", fmt.Sprintf("/v1/tasks/%d/retry", task.ID)},
				{"POST", "/v1/modules"},
				{"POST", "/v1/tasks"},
			} {
				var body []byte
				switch r.path {
				case "/v1/modules":
					body = noop
				case "/v1/tasks":
					if r.method == "POST" {
						body = []byte(`{"module":"` + sum + `"}`)
					}
				}
				rec := c.do(r.method, r.path, body)
				wantError(t, rec, tc.code, tc.msg)
				require.NotContains(t, rec.Body.String(), "/secret/path")
			}
		})
	}
}

func TestPanicIsA500(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	store.panicky = true
	wantError(t, c.do("GET", "/v1/tasks/1", nil), http.StatusInternalServerError, "internal server error")
}

func TestUnknownRoutesAreJSON(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: newFakeStore()})
	wantError(t, c.do("GET", "/nothing", nil), http.StatusNotFound, "no such endpoint: /nothing")
	wantError(t, c.do("GET", "/v1/tasks/1/nothing", nil), http.StatusNotFound, "no such endpoint")
	rec := c.do("PATCH", "/v1/tasks/1", nil)
	wantError(t, rec, http.StatusMethodNotAllowed, "PATCH not allowed")
	require.Contains(t, rec.Header().Get("Allow"), "GET")
	wantError(t, c.do("POST", "/healthz", nil), http.StatusMethodNotAllowed, "not allowed")
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	var ready atomic.Bool
	ready.Store(true)
	var running atomic.Int64
	running.Store(2)
	stats := func() server.PoolStats {
		return server.PoolStats{Running: int(running.Load()), Finished: 7, Interrupted: 1, Forced: 3, Lost: 4,
			Suspended: 5, Resumed: 6, LostToCrashes: 9, Snapshots: 8, SnapshotDeltas: 7, SnapshotBytes: 3 << 20, SnapshotTime: 1500 * time.Millisecond}
	}
	sandboxStats := func() server.SandboxStats {
		return server.SandboxStats{Modules: 5, Compilations: 9, Evictions: 2, CacheFailures: 1,
			Compiling: 3, CompilingAbandoned: 2, CompileWaiting: 1, CompileTimeouts: 1, Abandoned: 4, Stray: 1, Refused: 2}
	}
	c, _ := newClient(t, server.Config{Token: "t"}, server.Deps{Store: newFakeStore(), Ready: ready.Load, Stats: stats,
		SandboxStats: sandboxStats})
	want(t, c.do("GET", "/v1/tasks", nil), http.StatusOK)
	want(t, c.do("GET", "/v1/tasks/abc", nil), http.StatusBadRequest)

	scrape := func() string {
		t.Helper()
		rec := c.do("GET", "/metrics", nil) // with the token: httptest's requests are not from loopback
		want(t, rec, http.StatusOK)
		require.Contains(t, rec.Header().Get("Content-Type"), "text/plain")
		return rec.Body.String()
	}
	body := scrape()
	for _, line := range []string{
		"stint_ready 1",
		"stint_pool_running 2",
		"stint_pool_held 0",
		"stint_pool_given_back_total 0",
		`stint_pool_attempts_total{result="finished"} 7`,
		`stint_pool_attempts_total{result="interrupted"} 1`,
		`stint_pool_attempts_total{result="forced"} 3`,
		`stint_pool_attempts_total{result="lost"} 4`,
		`stint_pool_attempts_total{result="suspended"} 5`,
		"stint_pool_resumes_total 6",
		"stint_pool_attempts_lost_to_crashes_total 9",
		"# TYPE stint_pool_attempts_lost_to_crashes_total counter",
		"stint_pool_snapshots_total 8",
		"stint_pool_snapshot_deltas_total 7",
		"stint_pool_snapshot_bytes_total 3.145728e+06",
		"stint_pool_snapshot_seconds_total 1.5",
		"# TYPE stint_pool_resumes_total counter",
		"# TYPE stint_pool_snapshots_total counter",
		"# TYPE stint_pool_snapshot_bytes_total counter",
		"# TYPE stint_pool_snapshot_seconds_total counter",
		`stint_http_requests_total{code="200",method="GET",route="/v1/tasks"} 1`,
		`stint_http_requests_total{code="400",method="GET",route="/v1/tasks/{id}"} 1`,
		"# TYPE stint_pool_attempts_total counter",
		"# TYPE stint_pool_running gauge",
		"# TYPE go_goroutines gauge",
		"stint_sandbox_modules 5",
		"stint_sandbox_compilations_total 9",
		"stint_sandbox_evictions_total 2",
		"stint_sandbox_cache_failures_total 1",
		"# TYPE stint_sandbox_evictions_total counter",
		"stint_sandbox_compiling 3",
		"stint_sandbox_compiling_abandoned 2",
		"stint_sandbox_compile_waiting 1",
		"stint_sandbox_compile_timeouts_total 1",
		"stint_sandbox_abandoned_runs_total 4",
		"stint_sandbox_stray_runs 1",
		"stint_sandbox_refused_modules 2",
		"# TYPE stint_sandbox_stray_runs gauge",
		"# TYPE stint_sandbox_abandoned_runs_total counter",
	} {
		require.Contains(t, body, line+"\n")
	}
	// Values are read at scrape time.
	ready.Store(false)
	running.Store(0)
	body = scrape()
	require.Contains(t, body, "stint_ready 0\n")
	require.Contains(t, body, "stint_pool_running 0\n")
}

func TestMetricsWithoutStats(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: newFakeStore()})
	rec := c.do("GET", "/metrics", nil)
	want(t, rec, http.StatusOK)
	require.Contains(t, rec.Body.String(), "stint_ready 1\n")
	require.NotContains(t, rec.Body.String(), "stint_pool_")
}

// Two servers in one process: each has its own registry.
func TestRegistriesAreSeparate(t *testing.T) {
	t.Parallel()
	for range 2 {
		_, err := server.New(server.Config{}, server.Deps{Store: newFakeStore(), Stats: func() server.PoolStats { return server.PoolStats{} }})
		require.NoError(t, err)
	}
}

// TestAPIOnRetry: a spec's on_retry (restart or resume; absent: "", which
// resumes) is stored with the task and shown by POST and GET
// /v1/tasks/{id}; any other value is refused (422) naming the field, and
// nothing is queued.
func TestAPIOnRetry(t *testing.T) {
	t.Parallel()
	st, mod := noopStore(t, sqlite.Options{})
	c, _ := newClient(t, server.Config{}, server.Deps{Store: st})
	ctx := context.Background()

	wantError(t, c.do("POST", "/v1/tasks", []byte(`{"module":"`+mod+`","on_retry":"never"}`)), http.StatusUnprocessableEntity, "on_retry")
	none, err := st.List(ctx, tasks.ListFilter{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, none, "a refused spec is not queued")

	for _, v := range []string{tasks.OnRetryRestart, tasks.OnRetryResume, ""} {
		body := `{"module":"` + mod + `"}`
		if v != "" {
			body = `{"module":"` + mod + `","on_retry":"` + v + `"}`
		}
		rec := c.do("POST", "/v1/tasks", []byte(body))
		want(t, rec, http.StatusCreated)
		posted := decode[map[string]any](t, rec)
		id := int64(posted["id"].(float64))
		stored, err := st.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, v, stored.OnRetry, "on_retry %q", v)

		rec = c.do("GET", "/v1/tasks/"+strconv.FormatInt(id, 10), nil)
		want(t, rec, http.StatusOK)
		got := decode[map[string]any](t, rec)
		for _, view := range []map[string]any{posted, got} {
			if v == "" {
				require.NotContains(t, view, "on_retry")
			} else {
				require.Equal(t, v, view["on_retry"])
			}
		}
	}
}
