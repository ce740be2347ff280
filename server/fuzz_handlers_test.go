package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// validMethod reports whether m is an HTTP token, as the server requires.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// FuzzHandlers sends random requests (method, path, Content-Type, Origin,
// Host, body) to the real handler over a real SQLite store: the answer is
// never a 5xx but 503, an error is always a JSON body, and no task view
// carries an input. Seeds: testdata/fuzz/FuzzHandlers, the f.Add calls
// below and specs with large fields (each field of tasks.MaxCaps at its
// cap and one over, a 1 MiB idempotency key: PostgreSQL's index refused
// such a key with a 500 before the caps).
func FuzzHandlers(f *testing.F) {
	store := openStore(f)
	srv, err := server.New(server.Config{MaxModuleBytes: 2 << 20}, server.Deps{Store: store}) // room for the large specs
	require.NoError(f, err)
	h := srv.Handler()
	ctx := context.Background()
	sum, err := store.PutModule(ctx, noop)
	require.NoError(f, err)
	first, _, err := store.Submit(ctx, tasks.Spec{Module: sum, Input: []byte("input bytes")})
	require.NoError(f, err)
	second, _, err := store.Submit(ctx, tasks.Spec{Module: sum})
	require.NoError(f, err)
	_, err = store.Cancel(ctx, second.ID)
	require.NoError(f, err)
	require.Equal(f, int64(1), first.ID, "the seeds name task 1")

	spec := `{"module":"` + sum + `","input":"aGk=","limits":{"timeout":"5s"}}`
	for _, s := range []struct {
		method, path, ctype, origin, host string
		body                              []byte
	}{
		{"GET", "/v1/tasks", "", "", "localhost:8080", nil},
		{"GET", "/v1/tasks?state=queued&limit=2&after=0", "", "", "127.0.0.1:8080", nil},
		{"GET", "/v1/tasks/1", "", "", "localhost", nil},
		{"GET", "/v1/tasks/1/input", "", "", "localhost", nil},
		{"HEAD", "/v1/tasks/1/input", "", "", "localhost", nil},
		{"GET", "/v1/tasks/1/result", "", "", "localhost", nil},
		{"GET", "/v1/tasks/1/attempts", "", "", "localhost", nil},
		{"POST", "/v1/tasks", "application/json", "", "localhost", []byte(spec)},
		{"POST", "/v1/tasks", "text/plain", "", "localhost", []byte(spec)},
		{"POST", "/v1/tasks", "application/json", "http://evil.example", "localhost", []byte(spec)},
		{"POST", "/v1/tasks", "application/json", "", "evil.example", []byte(spec)},
		{"POST", "/v1/modules", "application/wasm", "", "localhost", noop},
		{"POST", "/v1/modules", "application/wasm", "", "localhost", []byte("(module)")},
		{"POST", "/v1/tasks/1/cancel", "", "", "localhost", nil},
		{"POST", "/v1/tasks/2/retry", "", "", "[::1]:8080", nil},
		{"DELETE", "/v1/tasks/1", "", "", "localhost", nil},
		{"GET", "/v1/tasks/%2e%2e/input", "", "", "localhost", nil},
		{"GET", "/healthz", "", "", "localhost", nil},
		{"GET", "/metrics", "", "", "localhost", nil},
	} {
		f.Add(s.method, s.path, s.ctype, s.origin, s.host, s.body)
	}
	for _, body := range server.LargeSpecs(sum) {
		f.Add("POST", "/v1/tasks", "application/json", "", "localhost", body)
	}
	f.Fuzz(func(t *testing.T, method, path, ctype, origin, host string, body []byte) {
		if !validMethod(method) {
			return
		}
		u, err := url.ParseRequestURI(path)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		req := httptest.NewRequest("GET", "/", nil).WithContext(t.Context())
		req.Method, req.URL, req.RequestURI, req.Host = method, u, path, host
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		code := rec.Code
		if code >= 500 && code != http.StatusServiceUnavailable {
			t.Fatalf("%s %q (Host %q): status %d: %s", method, path, host, code, rec.Body.String())
		}
		ct := rec.Header().Get("Content-Type")
		if code >= 400 {
			if ct != "application/json" || !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %q: error %d is not JSON (%s): %q", method, path, code, ct, rec.Body.String())
			}
		}
		if code < 300 && ct == "application/json" && bytes.Contains(rec.Body.Bytes(), []byte(`"input":`)) {
			t.Fatalf("%s %q: a task view carries its input: %s", method, path, rec.Body.String())
		}
	})
}
