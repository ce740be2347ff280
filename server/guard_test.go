package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

func TestNoTokenNeedsLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "10.1.2.3:80", "example.com:80", "myhost:8080", "127.0.0.1"} {
		_, err := server.New(server.Config{Addr: addr}, server.Deps{Store: newFakeStore()})
		require.ErrorIs(t, err, server.ErrNoToken, addr)
		require.ErrorContains(t, err, "http.token", addr)
		require.ErrorContains(t, err, "RUNNER_HTTP_TOKEN", addr)
		require.False(t, server.LoopbackAddr(addr), addr)
		_, err = server.New(server.Config{Addr: addr, Token: "t"}, server.Deps{Store: newFakeStore()})
		require.NoError(t, err, addr)
	}
	for _, addr := range []string{"127.0.0.1:8080", "127.9.8.7:0", "localhost:8080", "LOCALHOST:1", "[::1]:8080", "[::ffff:127.0.0.1]:80", ""} {
		_, err := server.New(server.Config{Addr: addr}, server.Deps{Store: newFakeStore()})
		require.NoError(t, err, addr)
	}
}

// countingReader counts the reads of a body, to show that it was never
// read.
type countingReader struct {
	r     io.Reader
	mu    sync.Mutex
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.r.Read(p)
}

func (c *countingReader) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

func TestContentType(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	spec := `{"module":"` + sum + `"}`
	task := c.submit(spec, http.StatusCreated)
	send := func(method, path, ctype string, body []byte) (*httptest.ResponseRecorder, *countingReader) {
		t.Helper()
		cr := &countingReader{r: bytes.NewReader(body)}
		req := httptest.NewRequest(method, path, cr)
		req.Host = "127.0.0.1:8080"
		req.ContentLength = int64(len(body))
		if ctype != "-" {
			req.Header.Set("Content-Type", ctype)
		}
		return doReq(c.h, req), cr
	}
	for _, tc := range []struct {
		path, ctype string
		body        []byte
	}{
		{"/v1/tasks", "text/plain", []byte(spec)},
		{"/v1/tasks", "text/plain;charset=UTF-8", []byte(spec)},
		{"/v1/tasks", "application/x-www-form-urlencoded", []byte(spec)},
		{"/v1/tasks", "multipart/form-data; boundary=x", []byte(spec)},
		{"/v1/tasks", "-", []byte(spec)},
		{"/v1/tasks", "application/json-seq", []byte(spec)},
		{"/v1/tasks", "application/json; charset", []byte(spec)}, // does not parse
		{"/v1/tasks", "application/wasm", []byte(spec)},
		{"/v1/modules", "application/json", noop},
		{"/v1/modules", "text/plain", noop},
		{"/v1/modules", "-", noop},
		{fmt.Sprintf("/v1/tasks/%d/cancel", task.ID), "text/plain", []byte("x")},
		{fmt.Sprintf("/v1/tasks/%d/cancel", task.ID), "-", []byte("x")},
		{fmt.Sprintf("/v1/tasks/%d/retry", task.ID), "application/x-www-form-urlencoded", nil},
	} {
		rec, cr := send("POST", tc.path, tc.ctype, tc.body)
		wantError(t, rec, http.StatusUnsupportedMediaType, "Content-Type")
		require.NotEmpty(t, rec.Header().Get("Accept-Post"))
		require.Zero(t, cr.count(), "%s %s: the body was read", tc.path, tc.ctype)
	}
	// Two Content-Type headers: refused.
	req := httptest.NewRequest("POST", "/v1/tasks", strings.NewReader(spec))
	req.Host = "localhost"
	req.Header.Add("Content-Type", "application/json")
	req.Header.Add("Content-Type", "text/plain")
	wantError(t, doReq(c.h, req), http.StatusUnsupportedMediaType, "Content-Type")
	got, err := store.Get(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State, "no refused request changed anything")
	list, err := store.List(t.Context(), tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 1)

	// What is accepted.
	rec, _ := send("POST", "/v1/tasks", "application/json; charset=utf-8", []byte(spec))
	want(t, rec, http.StatusCreated)
	rec, _ = send("POST", "/v1/tasks", "Application/JSON", []byte(spec))
	want(t, rec, http.StatusCreated)
	rec, _ = send("POST", "/v1/modules", "application/octet-stream", noop)
	want(t, rec, http.StatusCreated)
	rec, _ = send("POST", "/v1/modules", "application/wasm", noop)
	want(t, rec, http.StatusCreated)
	rec, _ = send("POST", fmt.Sprintf("/v1/tasks/%d/cancel", task.ID), "-", nil)
	want(t, rec, http.StatusOK)
	rec, _ = send("POST", fmt.Sprintf("/v1/tasks/%d/retry", task.ID), "application/json", []byte("{}"))
	want(t, rec, http.StatusOK)
}

func TestHostMustBeLoopbackWithoutToken(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	send := func(method, path, host string, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = host
		setContentType(req)
		return doReq(c.h, req)
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "127.0.0.1.evil.example:8080", "localhost.evil.example",
		"10.0.0.1:8080", "[::2]:8080", "0.0.0.0:8080", "127.0.0.1:8080@evil"} {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/v1/tasks", ""},
			{"GET", "/healthz", ""},
			{"GET", "/metrics", ""},
			{"POST", "/v1/tasks", `{"module":"` + sum + `"}`},
		} {
			wantError(t, send(r.method, r.path, host, r.body), http.StatusMisdirectedRequest, "not a loopback name")
		}
	}
	list, err := store.List(t.Context(), tasks.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, list, "no refused request was submitted")
	for _, host := range []string{"localhost", "localhost:8080", "LocalHost:9999", "localhost.:8080", "127.0.0.1", "127.0.0.1:8080",
		"127.3.2.1:1", "[::1]:8080", "[::1]", ""} {
		want(t, send("GET", "/v1/tasks", host, ""), http.StatusOK)
	}

	// With a token, the token protects the API: any Host is served.
	ct, _ := newClient(t, server.Config{Addr: "0.0.0.0:8080", Token: "tok"}, server.Deps{Store: newFakeStore()})
	req := httptest.NewRequest("GET", "/v1/tasks", nil)
	req.Host = "runner.example:8080"
	req.Header.Set("Authorization", "Bearer tok")
	want(t, doReq(ct.h, req), http.StatusOK)
}

func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{}, server.Deps{Store: store})
	sum := c.upload()
	task := c.submit(`{"module":"`+sum+`"}`, http.StatusCreated)
	send := func(method, path string, hdr map[string]string, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = "127.0.0.1:8080"
		setContentType(req)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		return doReq(c.h, req)
	}
	cancel := fmt.Sprintf("/v1/tasks/%d/cancel", task.ID)
	for _, hdr := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "null"},
		{"Origin": "http://127.0.0.1:9999"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:8080"},
	} {
		wantError(t, send("POST", cancel, hdr, ""), http.StatusForbidden, "cross-origin request refused")
		wantError(t, send("POST", "/v1/tasks", hdr, `{"module":"`+sum+`"}`), http.StatusForbidden, "cross-origin request refused")
		wantError(t, send("POST", "/v1/modules", hdr, string(noop)), http.StatusForbidden, "cross-origin request refused")
		// Reading is not refused (the browser keeps the answer from the
		// page) and changes nothing.
		want(t, send("GET", "/v1/tasks", hdr, ""), http.StatusOK)
	}
	got, err := store.Get(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State, "the cross-origin cancel changed nothing")

	// The server's own origin, and programs that send no Origin.
	want(t, send("POST", "/v1/tasks", map[string]string{"Origin": "http://127.0.0.1:8080"}, `{"module":"`+sum+`"}`), http.StatusCreated)
	want(t, send("POST", "/v1/tasks", map[string]string{"Sec-Fetch-Site": "same-origin"}, `{"module":"`+sum+`"}`), http.StatusCreated)
	want(t, send("POST", cancel, nil, ""), http.StatusOK)
}

// heldBody is a request body that signals its first read and then blocks
// until released: a request held open inside its handler.
type heldBody struct {
	data        []byte
	started     chan struct{}
	release     chan struct{}
	once, freed sync.Once
}

// free lets the body be read (once, from the test or its cleanup).
func (b *heldBody) free() { b.freed.Do(func() { close(b.release) }) }

func newHeldBody(n int) *heldBody {
	return &heldBody{data: bytes.Repeat([]byte("x"), n), started: make(chan struct{}), release: make(chan struct{})}
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.once.Do(func() {
		close(b.started)
		<-b.release
	})
	if len(b.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// continueClient waits for "100 Continue" before it sends a body marked
// "Expect: 100-continue": the server sends it when the handler starts to
// read, so a body's first Read means its request passed every check.
func continueClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{ExpectContinueTimeout: time.Minute}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

type held struct {
	body *heldBody
	done chan reply
}

// post sends a body of n bytes with Expect: 100-continue in the background.
func post(t *testing.T, c *http.Client, url string, body *heldBody, n int) held {
	t.Helper()
	req, err := http.NewRequest("POST", url, body)
	require.NoError(t, err)
	req.ContentLength = int64(n)
	req.Header.Set("Content-Type", "application/wasm")
	req.Header.Set("Expect", "100-continue")
	h := held{body: body, done: make(chan reply, 1)}
	t.Cleanup(body.free) // a failed test still ends its requests
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			h.done <- reply{code: -1, body: []byte(err.Error())}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		h.done <- reply{code: resp.StatusCode, header: resp.Header, body: b}
	}()
	return h
}

// A request whose body would take the bytes in flight over
// MaxInflightBytes gets 503 with Retry-After before its body is read; it
// passes once the requests holding the budget are over.
func TestInflightBudget(t *testing.T) {
	t.Parallel()
	_, r := startServer(t, server.Config{MaxInflightBytes: 1000, MaxModuleBytes: 4096}, server.Deps{Store: newFakeStore()})
	c := continueClient(t)
	url := r.base + "/v1/modules"
	gauge := func() string {
		rep := r.do("GET", "/metrics", nil)
		for _, l := range strings.Split(string(rep.body), "\n") {
			if strings.HasPrefix(l, "stint_http_inflight_bytes ") {
				return strings.TrimPrefix(l, "stint_http_inflight_bytes ")
			}
		}
		return ""
	}

	a := post(t, c, url, newHeldBody(600), 600)
	<-a.body.started // a holds 600 bytes of the budget
	require.Equal(t, "600", gauge())

	b := post(t, c, url, newHeldBody(600), 600)
	var rep reply
	select {
	case rep = <-b.done:
	case <-b.body.started:
		t.Fatal("the request over the budget passed: its body is being read")
	}
	require.Equal(t, http.StatusServiceUnavailable, rep.code, string(rep.body))
	require.Equal(t, "1", rep.header.Get("Retry-After"))
	require.Contains(t, string(rep.body), "http.max_inflight_bytes (1000)")
	select {
	case <-b.body.started:
		t.Fatal("the refused request's body was read")
	default:
	}

	// A smaller one fits next to a.
	small := post(t, c, url, newHeldBody(300), 300)
	<-small.body.started
	require.Equal(t, "900", gauge())
	small.body.free()
	rep = <-small.done
	require.Equal(t, http.StatusBadRequest, rep.code, "passed the budget, then refused as not wasm: %s", rep.body)

	a.body.free()
	rep = <-a.done
	require.Equal(t, http.StatusBadRequest, rep.code, string(rep.body))
	require.Equal(t, "0", gauge())

	// Now the 600 bytes fit.
	again := post(t, c, url, newHeldBody(600), 600)
	<-again.body.started
	again.body.free()
	rep = <-again.done
	require.Equal(t, http.StatusBadRequest, rep.code, string(rep.body))
}

// Past MaxConcurrent /v1/ requests in progress, another gets 503 with
// Retry-After; the probes are still answered.
func TestMaxConcurrent(t *testing.T) {
	t.Parallel()
	_, r := startServer(t, server.Config{MaxConcurrent: 2}, server.Deps{Store: newFakeStore()})
	c := continueClient(t)
	url := r.base + "/v1/modules"
	var hs []held
	for range 2 {
		h := post(t, c, url, newHeldBody(10), 10)
		<-h.body.started
		hs = append(hs, h)
	}
	rep := r.do("GET", "/v1/tasks", nil)
	require.Equal(t, http.StatusServiceUnavailable, rep.code, string(rep.body))
	require.Equal(t, "1", rep.header.Get("Retry-After"))
	require.Contains(t, string(rep.body), "http.max_concurrent")
	require.Equal(t, http.StatusOK, r.do("GET", "/healthz", nil).code)
	require.Equal(t, http.StatusOK, r.do("GET", "/readyz", nil).code)
	metrics := r.do("GET", "/metrics", nil)
	require.Contains(t, string(metrics.body), "\nstint_http_inflight_requests 2\n")

	for _, h := range hs {
		h.body.free()
		rep := <-h.done
		require.Equal(t, http.StatusBadRequest, rep.code, string(rep.body))
	}
	require.Equal(t, http.StatusOK, r.do("GET", "/v1/tasks", nil).code)
}

// Serving a stored input holds its size in the budget: a second one that
// does not fit waits (503) while the first is being sent.
func TestBlobsCountInTheBudget(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c, _ := newClient(t, server.Config{MaxInflightBytes: 1 << 20}, server.Deps{Store: store})
	sum := c.upload()
	in := base64.StdEncoding.EncodeToString(make([]byte, 700<<10))
	task := c.submit(`{"module":"`+sum+`","input":"`+in+`"}`, http.StatusCreated)

	// The first response blocks on its first write, inside the handler.
	w := &blockingWriter{ResponseRecorder: httptest.NewRecorder(), wrote: make(chan struct{}), release: make(chan struct{})}
	req := httptest.NewRequest("GET", fmt.Sprintf("/v1/tasks/%d/input", task.ID), nil)
	req.Host = "localhost"
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.h.ServeHTTP(w, req)
	}()
	<-w.wrote
	rec := c.do("GET", fmt.Sprintf("/v1/tasks/%d/input", task.ID), nil)
	wantError(t, rec, http.StatusServiceUnavailable, "http.max_inflight_bytes")
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	// Cancel reads the task whole too.
	wantError(t, c.do("POST", fmt.Sprintf("/v1/tasks/%d/cancel", task.ID), nil), http.StatusServiceUnavailable, "http.max_inflight_bytes")
	// The view does not: it is served.
	want(t, c.do("GET", fmt.Sprintf("/v1/tasks/%d", task.ID), nil), http.StatusOK)
	close(w.release)
	<-done
	require.Equal(t, 700<<10, w.Body.Len())
	want(t, c.do("GET", fmt.Sprintf("/v1/tasks/%d/input", task.ID), nil), http.StatusOK)
}

// blockingWriter signals its first Write and blocks it until released.
type blockingWriter struct {
	*httptest.ResponseRecorder
	wrote, release chan struct{}
	once           sync.Once
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.once.Do(func() {
		close(b.wrote)
		<-b.release
	})
	return b.ResponseRecorder.Write(p)
}

// A task view carries input_size, not the input; GET .../input sends the
// input back byte for byte, with its Content-Length. Over a real listener
// and a real SQLite store.
func TestTaskInputEndpoint(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	_, r := startServer(t, server.Config{}, server.Deps{Store: store})
	var m moduleBody
	r.expect(r.do("POST", "/v1/modules", noop), http.StatusCreated, &m)
	input := make([]byte, 3<<20)
	_, _ = rand.Read(input)
	spec, err := json.Marshal(tasks.Spec{Module: m.SHA256, Input: input})
	require.NoError(t, err)
	rep := r.do("POST", "/v1/tasks", spec)
	require.Equal(t, http.StatusCreated, rep.code, string(rep.body))
	require.NotContains(t, string(rep.body), `"input":`)
	require.Less(t, len(rep.body), 4096, "the submit answer does not echo the input")
	var task apiTask
	require.NoError(t, json.Unmarshal(rep.body, &task))
	require.Equal(t, len(input), task.InputSize)

	path := fmt.Sprintf("/v1/tasks/%d", task.ID)
	for _, p := range []string{path, "/v1/tasks"} {
		rep = r.do("GET", p, nil)
		require.Equal(t, http.StatusOK, rep.code)
		require.NotContains(t, string(rep.body), `"input":`, p)
		require.Contains(t, string(rep.body), `"input_size":`+strconv.Itoa(len(input)), p)
		require.Less(t, len(rep.body), 4096, p)
	}
	rep = r.do("GET", path+"/input", nil)
	require.Equal(t, http.StatusOK, rep.code)
	require.Equal(t, "application/octet-stream", rep.header.Get("Content-Type"))
	require.Equal(t, strconv.Itoa(len(input)), rep.header.Get("Content-Length"))
	require.True(t, bytes.Equal(input, rep.body), "the input came back changed (%d bytes)", len(rep.body))

	rep = r.do("HEAD", path+"/input", nil)
	require.Equal(t, http.StatusOK, rep.code)
	require.Equal(t, strconv.Itoa(len(input)), rep.header.Get("Content-Length"))
	require.Empty(t, rep.body)

	// A task without input: an empty body.
	var empty apiTask
	r.expect(r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`"}`)), http.StatusCreated, &empty)
	rep = r.do("GET", fmt.Sprintf("/v1/tasks/%d/input", empty.ID), nil)
	require.Equal(t, http.StatusOK, rep.code)
	require.Equal(t, "0", rep.header.Get("Content-Length"))
	require.Empty(t, rep.body)

	r.expect(r.do("GET", "/v1/tasks/424242/input", nil), http.StatusNotFound, nil)
	r.expect(r.do("GET", "/v1/tasks/x/input", nil), http.StatusBadRequest, nil)
}
