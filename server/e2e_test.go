package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// remote is a client of a started server, over TCP.
type remote struct {
	t     *testing.T
	c     *http.Client
	base  string
	token string
}

type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r remote) do(method, path string, body []byte) reply {
	r.t.Helper()
	req, err := http.NewRequest(method, r.base+path, bytes.NewReader(body))
	require.NoError(r.t, err)
	setContentType(req)
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.c.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(r.t, err)
	return reply{code: resp.StatusCode, header: resp.Header, body: b}
}

// expect checks the status and decodes a JSON body into v (when not nil).
func (r remote) expect(rep reply, code int, v any) {
	r.t.Helper()
	require.Equal(r.t, code, rep.code, "body: %s", rep.body)
	if v != nil {
		require.Equal(r.t, "application/json", rep.header.Get("Content-Type"))
		require.NoError(r.t, json.Unmarshal(rep.body, v), "body: %s", rep.body)
	}
}

func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	return store
}

// newRuntime returns a sandbox runtime with the default config, closed
// when the test ends.
func newRuntime(t *testing.T) *sandbox.Runtime {
	t.Helper()
	rt, err := sandbox.New(context.Background(), sandbox.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	return rt
}

func startServer(t *testing.T, cfg server.Config, deps server.Deps) (*server.Server, remote) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	srv, err := server.New(cfg, deps)
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(context.Background())) })
	return srv, remote{t: t, c: httpClient(t), base: "http://" + srv.Addr(), token: cfg.Token}
}

// The API over a real SQLite store and a real listener, without workers.
func TestEndToEndSQLite(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	var ready atomic.Bool
	ready.Store(true)
	_, r := startServer(t, server.Config{Token: "tok"}, server.Deps{Store: store, Ready: ready.Load})

	// Token enforcement.
	anon := r
	anon.token = ""
	var e struct{ Error string }
	anon.expect(anon.do("GET", "/v1/tasks", nil), http.StatusUnauthorized, &e)
	require.Contains(t, e.Error, "bearer token")
	wrong := r
	wrong.token = "tik"
	wrong.expect(wrong.do("POST", "/v1/modules", noop), http.StatusUnauthorized, nil)
	anon.expect(anon.do("GET", "/healthz", nil), http.StatusOK, nil)

	// Upload.
	var m moduleBody
	r.expect(r.do("POST", "/v1/modules", noop), http.StatusCreated, &m)
	require.Equal(t, sandbox.SHA256(noop), m.SHA256)
	stored, err := store.Module(context.Background(), m.SHA256)
	require.NoError(t, err)
	require.Equal(t, noop, stored)

	// Submit, and submit again with the same idempotency key.
	var task, again apiTask
	spec := `{"module":"` + m.SHA256 + `","input":"aGk=","queue":"q1","idempotency_key":"once","limits":{"timeout":"45s"}}`
	r.expect(r.do("POST", "/v1/tasks", []byte(spec)), http.StatusCreated, &task)
	require.Equal(t, tasks.StateQueued, task.State)
	require.Equal(t, 45*time.Second, task.Limits.Timeout)
	require.Equal(t, -1, task.CheckpointSize)
	r.expect(r.do("POST", "/v1/tasks", []byte(spec)), http.StatusOK, &again)
	require.Equal(t, task.ID, again.ID)
	var other apiTask
	r.expect(r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`"}`)), http.StatusCreated, &other)

	// Errors from the real store map as from the fake.
	r.expect(r.do("POST", "/v1/tasks", []byte(`{"module":"`+strings.Repeat("0", 64)+`"}`)), http.StatusNotFound, nil)
	r.expect(r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`","limits":{"stdout":-1}}`)), http.StatusUnprocessableEntity, nil)
	r.expect(r.do("GET", "/v1/tasks/424242", nil), http.StatusNotFound, nil)
	r.expect(r.do("GET", "/v1/tasks/abc", nil), http.StatusBadRequest, nil)

	// Get.
	var got apiTask
	r.expect(r.do("GET", fmt.Sprintf("/v1/tasks/%d", task.ID), nil), http.StatusOK, &got)
	require.Equal(t, task.ID, got.ID)
	require.Nil(t, got.Input)
	require.Equal(t, 2, got.InputSize)
	rep := r.do("GET", fmt.Sprintf("/v1/tasks/%d/input", task.ID), nil)
	require.Equal(t, http.StatusOK, rep.code)
	require.Equal(t, "hi", string(rep.body))
	require.Equal(t, "q1", got.Queue)
	require.Equal(t, -1, got.CheckpointSize)

	// List.
	var l listBody
	r.expect(r.do("GET", "/v1/tasks", nil), http.StatusOK, &l)
	require.Len(t, l.Tasks, 2)
	r.expect(r.do("GET", "/v1/tasks?queue=q1&state=queued", nil), http.StatusOK, &l)
	require.Len(t, l.Tasks, 1)
	require.Equal(t, task.ID, l.Tasks[0].ID)
	r.expect(r.do("GET", "/v1/tasks?limit=1", nil), http.StatusOK, &l)
	require.Len(t, l.Tasks, 1)
	require.Equal(t, task.ID, l.NextAfter)
	r.expect(r.do("GET", fmt.Sprintf("/v1/tasks?limit=1&after=%d", l.NextAfter), nil), http.StatusOK, &l)
	require.Equal(t, other.ID, l.Tasks[0].ID)
	r.expect(r.do("GET", "/v1/tasks?state=bogus", nil), http.StatusBadRequest, nil)

	// Result before success, attempts before any.
	r.expect(r.do("GET", fmt.Sprintf("/v1/tasks/%d/result", task.ID), nil), http.StatusConflict, &e)
	require.Contains(t, e.Error, "queued")
	var as attemptsBody
	r.expect(r.do("GET", fmt.Sprintf("/v1/tasks/%d/attempts", task.ID), nil), http.StatusOK, &as)
	require.Empty(t, as.Attempts)

	// Cancel, cancel again, retry, retry again.
	base := fmt.Sprintf("/v1/tasks/%d", task.ID)
	r.expect(r.do("POST", base+"/cancel", nil), http.StatusOK, &got)
	require.Equal(t, tasks.StateCancelled, got.State)
	r.expect(r.do("POST", base+"/cancel", nil), http.StatusConflict, nil)
	r.expect(r.do("POST", base+"/retry", nil), http.StatusOK, &got)
	require.Equal(t, tasks.StateQueued, got.State)
	r.expect(r.do("POST", base+"/retry", nil), http.StatusConflict, nil)

	// Readiness flips; submissions are still accepted.
	var rd struct{ Ready bool }
	anon.expect(anon.do("GET", "/readyz", nil), http.StatusOK, &rd)
	require.True(t, rd.Ready)
	rep = anon.do("GET", "/metrics", nil)
	require.Contains(t, string(rep.body), "\nstint_ready 1\n")
	ready.Store(false)
	anon.expect(anon.do("GET", "/readyz", nil), http.StatusServiceUnavailable, &rd)
	require.False(t, rd.Ready)
	rep = anon.do("GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, rep.code)
	require.Contains(t, string(rep.body), "\nstint_ready 0\n")
	r.expect(r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`"}`)), http.StatusCreated, nil)
}

// poolWorkload adapts a pool.Pool to shutdown.Workload.
type poolWorkload struct{ *pool.Pool }

func (p poolWorkload) Stats() shutdown.Stats {
	s := p.Pool.Stats()
	return shutdown.Stats{Running: s.Running, Finished: s.Finished, Interrupted: s.Interrupted, Forced: s.Forced}
}

// The whole stack: a task runs in the sandbox through the pool, its result
// comes back through the API, and a shutdown turns readiness off while
// submissions are still queued, then stops the server in a hook.
func TestEndToEndPoolAndShutdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := openStore(t)
	rt := newRuntime(t)
	pool, err := pool.New(store, rt, pool.Config{Workers: 2, Policy: tasks.Policy{Max: tasks.Limits{Stdout: 1 << 20}, MaxInput: 16, Caps: tasks.Caps{Env: 1}}})
	require.NoError(t, err)
	require.NoError(t, pool.Start(ctx))
	t.Cleanup(func() { require.NoError(t, pool.Stop(context.Background())) })
	coord, err := shutdown.New(shutdown.Config{}, shutdown.Options{})
	require.NoError(t, err)
	require.NoError(t, coord.Register(poolWorkload{pool}))

	srv, r := startServer(t, server.Config{}, server.Deps{
		Store: store, Submit: pool.Submit, Ready: coord.Ready, Stats: func() server.PoolStats { return server.PoolStats(pool.Stats()) },
	})

	var m moduleBody
	r.expect(r.do("POST", "/v1/modules", wat.MustLoad("echo")), http.StatusCreated, &m)
	// A spec over the runner's maximum is refused before anything is stored.
	rep := r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`","limits":{"stdout":2097152}}`))
	require.Equal(t, http.StatusUnprocessableEntity, rep.code, string(rep.body))
	require.Contains(t, string(rep.body), "stdout 2MiB is over the runner's maximum 1MiB")
	rep = r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`","input":"`+base64.StdEncoding.EncodeToString(make([]byte, 17))+`"}`))
	require.Equal(t, http.StatusUnprocessableEntity, rep.code, string(rep.body))
	require.Contains(t, string(rep.body), "input 17 bytes is over the runner's maximum 16 bytes")
	// A field over the pool's own cap: 413, naming the limit.
	rep = r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`","env":{"A":"1","B":"2"}}`))
	require.Equal(t, http.StatusRequestEntityTooLarge, rep.code, string(rep.body))
	require.Contains(t, string(rep.body), "env: 2 entries, over this runner's limits.max_env of 1 entries")
	var task apiTask
	r.expect(r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`","input":"aGVsbG8gd29ybGQ="}`)), http.StatusCreated, &task)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := pool.Wait(waitCtx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State, "last error: %s", done.LastError)

	rep = r.do("GET", fmt.Sprintf("/v1/tasks/%d/result", task.ID), nil)
	require.Equal(t, http.StatusOK, rep.code)
	require.Equal(t, "application/octet-stream", rep.header.Get("Content-Type"))
	require.Equal(t, "hello world", string(rep.body))
	var got apiTask
	r.expect(r.do("GET", fmt.Sprintf("/v1/tasks/%d", task.ID), nil), http.StatusOK, &got)
	require.Equal(t, len("hello world"), got.ResultSize)
	// A list gives the sizes, not the bytes.
	rep = r.do("GET", "/v1/tasks?state=succeeded", nil)
	require.Equal(t, http.StatusOK, rep.code)
	require.Contains(t, string(rep.body), `"input_size":11,"result_size":11`)
	require.NotContains(t, string(rep.body), `"input":`)
	require.NotContains(t, string(rep.body), `"result":`)
	var as attemptsBody
	r.expect(r.do("GET", fmt.Sprintf("/v1/tasks/%d/attempts", task.ID), nil), http.StatusOK, &as)
	require.Len(t, as.Attempts, 1)
	require.Equal(t, "succeeded", as.Attempts[0].Outcome)
	r.expect(r.do("POST", fmt.Sprintf("/v1/tasks/%d/retry", task.ID), nil), http.StatusConflict, nil)

	rep = r.do("GET", "/metrics", nil)
	require.Contains(t, string(rep.body), "\nstint_ready 1\n")
	require.Contains(t, string(rep.body), "\nstint_pool_running 0\n")
	require.Contains(t, string(rep.body), "\nstint_pool_attempts_total{result=\"finished\"} 1\n")

	// During the stop (a hook that runs before the server's own), the
	// server still answers: not ready, but a submission is queued.
	type during struct {
		ready, submit int
		metrics       string
		task          apiTask
	}
	seen := make(chan during, 1)
	require.NoError(t, coord.AddHook(shutdown.Hook{Name: "probe", Priority: 0, Run: func(context.Context) error {
		var d during
		req, _ := http.NewRequest("GET", r.base+"/readyz", nil)
		if resp, err := r.c.Do(req); err == nil {
			d.ready = resp.StatusCode
			_ = resp.Body.Close()
		}
		if resp, err := r.c.Post(r.base+"/v1/tasks", "application/json",
			strings.NewReader(`{"module":"`+m.SHA256+`"}`)); err == nil {
			d.submit = resp.StatusCode
			_ = json.NewDecoder(resp.Body).Decode(&d.task)
			_ = resp.Body.Close()
		}
		if resp, err := r.c.Get(r.base + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			d.metrics = string(b)
			_ = resp.Body.Close()
		}
		seen <- d
		return nil
	}}))
	require.NoError(t, coord.AddHook(shutdown.Hook{Name: "http", Priority: 10, Run: srv.Shutdown}))
	report := coord.Shutdown(ctx)
	require.NoError(t, report.Err())

	d := <-seen
	require.Equal(t, http.StatusServiceUnavailable, d.ready)
	require.Equal(t, http.StatusCreated, d.submit)
	require.Contains(t, d.metrics, "\nstint_ready 0\n")
	// The pool took no new work: the task submitted during the stop waits.
	queued, err := store.Get(ctx, d.task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, queued.State)
	// The server is gone.
	_, err = r.c.Get(r.base + "/healthz")
	require.Error(t, err)
}
