package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeRefusesAnExposedAPI: runner serve on a non-loopback address
// without http.token is a configuration error (exit 2) that names the key,
// found before the data directory is touched.
func TestServeRefusesAnExposedAPI(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		dir := filepath.Join(t.TempDir(), "data")
		_, stderr, code := runRunner(t, "", "serve", "--data-dir", dir, "--http-addr", addr)
		require.Equal(t, exitUsage, code, stderr)
		require.Contains(t, stderr, "http.token", addr)
		require.Contains(t, stderr, "RUNNER_HTTP_TOKEN", addr)
		require.Contains(t, stderr, "not a loopback address", addr)
		_, err := os.Stat(dir)
		require.ErrorIs(t, err, os.ErrNotExist, "%s: nothing was created", addr)
	}
}

// TestServeAPIGuards: the real runner's API refuses a body of the wrong
// Content-Type (415), a Host that is not loopback (421) and a cross-origin
// POST (403), and serves a well-formed request.
func TestServeAPIGuards(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	p := startRunner(t, nil, "serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--workers", "1",
		"--http-max-concurrent", "8", "--http-max-inflight-bytes", "100MiB")
	httpAddr := p.apiAddr(t)
	p.waitLine(t, "runner ready")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: bound}
	base := "http://" + httpAddr
	wasm := readFile(t, fixture(t, "noop"))
	send := func(method, path, ctype string, body []byte, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(string(body)))
		require.NoError(t, err)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
			} else {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, body := send("POST", "/v1/modules", "application/x-www-form-urlencoded", wasm)
	require.Equal(t, http.StatusUnsupportedMediaType, code, body)
	code, body = send("POST", "/v1/modules", "application/wasm", wasm, "Host", "rebound.example:8080")
	require.Equal(t, http.StatusMisdirectedRequest, code, body)
	code, body = send("POST", "/v1/modules", "application/wasm", wasm, "Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = send("POST", "/v1/modules", "application/wasm", wasm)
	require.Equal(t, http.StatusCreated, code, body)
	var m struct{ SHA256 string }
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	code, body = send("POST", "/v1/tasks", "text/plain", []byte(`{"module":"`+m.SHA256+`","input":"aGk="}`))
	require.Equal(t, http.StatusUnsupportedMediaType, code, body)
	code, body = send("POST", "/v1/tasks", "application/json", []byte(`{"module":"`+m.SHA256+`","input":"aGk=","run_at":"`+
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`))
	require.Equal(t, http.StatusCreated, code, body)
	var task struct {
		ID        int64 `json:"id"`
		InputSize int   `json:"input_size"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &task))
	require.Equal(t, 2, task.InputSize)
	require.NotContains(t, body, `"input":`)
	code, body = send("GET", fmt.Sprintf("/v1/tasks/%d/input", task.ID), "", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "hi", body)

	p.stopCleanly(t)
}
