package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// noop is a valid module: the noop fixture.
var noop = wat.MustLoad("noop")

// client sends requests straight to a handler, through a recorder.
type client struct {
	t     *testing.T
	h     http.Handler
	token string
}

func newClient(t *testing.T, cfg server.Config, deps server.Deps) (client, *server.Server) {
	t.Helper()
	srv, err := server.New(cfg, deps)
	require.NoError(t, err)
	return client{t: t, h: srv.Handler(), token: cfg.Token}, srv
}

func (c client) do(method, path string, body []byte) *httptest.ResponseRecorder {
	c.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Host = "localhost:8080"
	setContentType(req)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	return rec
}

// want checks the status (printing the body when it differs).
func want(t *testing.T, rec *httptest.ResponseRecorder, code int) {
	t.Helper()
	require.Equal(t, code, rec.Code, "body: %s", rec.Body.String())
}

// wantError checks an error response: its status, JSON body and message.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, code int, contains string) {
	t.Helper()
	want(t, rec, code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "body: %s", rec.Body.String())
	require.Contains(t, e.Error, contains)
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var v T
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), "body: %s", rec.Body.String())
	return v
}

// apiTask is a task as the API returns it.
type apiTask struct {
	tasks.Task
	ResultSize int `json:"result_size"`
}

type listBody struct {
	Tasks     []apiTask `json:"tasks"`
	NextAfter int64     `json:"next_after"`
}

type attemptsBody struct {
	Attempts []tasks.Attempt `json:"attempts"`
}

type moduleBody struct {
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
}

// upload stores the noop module and returns its hash.
func (c client) upload() string {
	c.t.Helper()
	rec := c.do("POST", "/v1/modules", noop)
	want(c.t, rec, http.StatusCreated)
	return decode[moduleBody](c.t, rec).SHA256
}

// submit posts a spec and checks the status.
func (c client) submit(body string, code int) apiTask {
	c.t.Helper()
	rec := c.do("POST", "/v1/tasks", []byte(body))
	want(c.t, rec, code)
	return decode[apiTask](c.t, rec)
}

// setContentType sets the Content-Type the API wants on a POST to
// /v1/modules or /v1/tasks.
func setContentType(req *http.Request) {
	if req.Method != http.MethodPost {
		return
	}
	switch req.URL.Path {
	case "/v1/modules":
		req.Header.Set("Content-Type", "application/wasm")
	case "/v1/tasks", "/v1/schedules", "/v1/tenants":
		req.Header.Set("Content-Type", "application/json")
	default:
		if strings.HasPrefix(req.URL.Path, "/v1/queues/") && strings.HasSuffix(req.URL.Path, "/limits") {
			req.Header.Set("Content-Type", "application/json")
		}
	}
}

func doReq(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// list gets /v1/tasks with the query q (empty, or starting with "?"),
// checks the 200 and decodes the page.
func (c client) list(q string) listBody {
	c.t.Helper()
	rec := c.do("GET", "/v1/tasks"+q, nil)
	want(c.t, rec, http.StatusOK)
	return decode[listBody](c.t, rec)
}

// idsOf returns the IDs of a page's tasks, in order (never nil).
func idsOf(l listBody) []int64 {
	out := []int64{}
	for _, tk := range l.Tasks {
		out = append(out, tk.ID)
	}
	return out
}
