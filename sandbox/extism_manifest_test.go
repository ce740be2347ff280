package sandbox_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

func fromExtism(t *testing.T, js string, opts sandbox.ExtismManifestOptions) (sandbox.Manifest, []byte, error) {
	t.Helper()
	return sandbox.ManifestFromExtism(context.Background(), []byte(js), opts)
}

// Every field of Extism's manifest, mapped to Stint's.
func TestManifestFromExtismFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.wasm"), wasm, 0o600))
	sum := sandbox.SHA256(wasm)
	man, got, err := fromExtism(t, `{"wasm": [{"path": "p.wasm", "hash": "`+sum+`"}],
		"config": {"k": "v"}, "memory": {"max_pages": 4, "max_http_response_bytes": 100, "max_var_bytes": 50},
		"timeout_ms": 1500, "allowed_hosts": ["*.example.com"],
		"allowed_paths": {"data": "/data", "ro:/etc": "etc"}}`, sandbox.ExtismManifestOptions{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, wasm, got)
	require.Equal(t, "p.wasm", man.Name)
	require.Equal(t, sum, man.SHA256)
	require.Equal(t, []string{"wasi_snapshot_preview1", sandbox.ExtismModule}, man.HostModules)
	require.Equal(t, map[string]string{"k": "v"}, man.Config)
	require.Equal(t, int64(4*sandbox.PageSize), man.Limits.MemoryBytes)
	require.Equal(t, int64(100), man.HTTP.MaxResponseBytes)
	require.Equal(t, int64(50), man.MaxVarBytes)
	require.Equal(t, 1500*time.Millisecond, man.Limits.Timeout)
	require.Equal(t, []string{"*.example.com"}, man.HTTP.AllowedHosts)
	require.Equal(t, []sandbox.Mount{
		{HostPath: filepath.Join(dir, "data"), GuestPath: "/data", Writable: true},
		{HostPath: "/etc", GuestPath: "/etc", Writable: false},
	}, man.Mounts)

	// Data, named; nothing else: no host, no file, Stint's default timeout.
	man, got, err = fromExtism(t, `{"wasm": [{"data": "`+base64.StdEncoding.EncodeToString(wasm)+`", "name": "main"}]}`, sandbox.ExtismManifestOptions{})
	require.NoError(t, err)
	require.Equal(t, wasm, got)
	require.Equal(t, "main", man.Name)
	require.Empty(t, man.HTTP.AllowedHosts)
	require.Empty(t, man.Mounts)
	require.Zero(t, man.Limits.Timeout)
}

// What Stint cannot do is refused, naming the field.
func TestManifestFromExtismRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.wasm"), []byte("wasm"), 0o600))
	zeros := fmt.Sprintf("%064d", 0)
	for js, want := range map[string]string{
		`{"wasm": [{"path": "p.wasm"}], "allowed_host": []}`:         `"allowed_host" is not a field of Extism's manifest`,
		`{"wasm": [{"path": "p.wasm"}], "memory": {"max_pagez": 1}}`: `memory."max_pagez" is not a field`,
		`{"wasm": [{"path": "p.wasm", "sha": "x"}]}`:                 `wasm[0]."sha" is not a field`,
		`{"wasm": []}`: "wasm: no module",
		`{"wasm": [{"path": "p.wasm"}, {"path": "p.wasm"}]}`:                        "wasm: 2 modules: Stint loads one module",
		`{"wasm": [{"path": "p.wasm", "data": "AA=="}]}`:                            "want exactly one of path, data and url",
		`{"wasm": [{"path": "p.wasm", "hash": "` + zeros + `"}]}`:                   "wasm[0].hash: the module's sha256 is",
		`{"wasm": [{"path": "p.wasm", "hash": "abc"}]}`:                             `hash "abc" is not a sha256`,
		`{"wasm": [{"path": "missing.wasm"}]}`:                                      "wasm[0]: path: open",
		`{"wasm": [{"data": "!!"}]}`:                                                "data: not base64",
		`{"wasm": [{"url": "http://127.0.0.1:1/p.wasm", "hash": "` + zeros + `"}]}`: "fetching a module is not allowed",
		`{"wasm": [{"path": "p.wasm"}], "memory": {"max_pages": 0}}`:                "memory.max_pages: 0 pages",
		`{"wasm": [{"path": "p.wasm"}], "memory": {"max_var_bytes": 2000000}}`:      "memory.max_var_bytes 2000000: must be between 1 and 1048576",
		`{"wasm": [{"path": "p.wasm"}], "memory": {"max_http_response_bytes": 0}}`:  "memory.max_http_response_bytes 0",
		`{"wasm": [{"path": "p.wasm"}], "timeout_ms": 0}`:                           "timeout_ms 0",
		`{"wasm": [{"path": "p.wasm"}], "allowed_paths": {"": "/x"}}`:               "allowed_paths",
		`[1]`:                 "not a JSON object",
		`{"wasm": "p.wasm"}`:  "wasm: want a list of objects",
		`{"timeout_ms": "1"}`: "not JSON of Extism's manifest",
	} {
		_, _, err := fromExtism(t, js, sandbox.ExtismManifestOptions{Dir: dir})
		require.ErrorIs(t, err, sandbox.ErrManifest, js)
		require.Contains(t, err.Error(), want, js)
	}
}

// A URL is fetched only when allowed, with a hash that must match, and a
// size cap.
func TestManifestFromExtismURL(t *testing.T) {
	t.Parallel()
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		_, _ = w.Write(wasm)
	}))
	t.Cleanup(srv.Close)
	sum := sandbox.SHA256(wasm)
	js := `{"wasm": [{"url": "` + srv.URL + `/p.wasm", "headers": {"Authorization": "Bearer t"}, "hash": "` + sum + `"}]}`
	fetch := sandbox.ExtismManifestOptions{FetchURLs: true, FetchInsecureHTTP: true, FetchAllowAddrs: []string{"127.0.0.1"}}
	man, got, err := fromExtism(t, js, fetch)
	require.NoError(t, err)
	require.Equal(t, wasm, got)
	require.Equal(t, sum, man.SHA256)

	_, _, err = fromExtism(t, `{"wasm": [{"url": "`+srv.URL+`/p.wasm"}]}`, fetch)
	require.ErrorContains(t, err, "a module fetched from a URL must have a hash")
	_, _, err = fromExtism(t, `{"wasm": [{"url": "`+srv.URL+`/p.wasm", "hash": "`+sum+`"}]}`, fetch)
	require.ErrorContains(t, err, "status 403 Forbidden")
	fetch.MaxWasmBytes = 4
	_, _, err = fromExtism(t, js, fetch)
	require.ErrorContains(t, err, "more than 4 bytes")
	_, _, err = fromExtism(t, js, sandbox.ExtismManifestOptions{})
	require.ErrorContains(t, err, "fetching a module is not allowed")
}

// TestManifestFromExtismFetchChecks: a module's url is fetched with GET
// only, over https unless FetchInsecureHTTP, never from a loopback (or
// other special-purpose) address FetchAllowAddrs does not name (on its
// port, if it names one), redirects checked the same way, the manifest's
// headers that would change where or how the GET goes refused and the
// others not sent to another host, and a hash mismatch names no digest of
// what the url answered.
func TestManifestFromExtismFetchChecks(t *testing.T) {
	t.Parallel()
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	sum := sandbox.SHA256(wasm)
	type hit struct{ method, token, path string }
	hits := make(chan hit, 100)
	handler := func(w http.ResponseWriter, r *http.Request) {
		hits <- hit{r.Method, r.Header.Get("X-Token"), r.URL.Path}
		switch r.URL.Path {
		case "/to":
			http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
		case "/other":
			_, _ = w.Write([]byte("\x00asm\x01\x00\x00\x00 but not that module"))
		default:
			_, _ = w.Write(wasm)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(handler))
	t.Cleanup(srv.Close)
	other := httptest.NewServer(http.HandlerFunc(handler))
	t.Cleanup(other.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	manifest := func(u, extra string) string {
		return `{"wasm": [{"url": "` + u + `", "hash": "` + sum + `"` + extra + `}]}`
	}
	noHit := func() {
		t.Helper()
		select {
		case h := <-hits:
			t.Fatalf("a request reached the server: %+v", h)
		default:
		}
	}
	named := sandbox.ExtismManifestOptions{FetchURLs: true, FetchInsecureHTTP: true, FetchAllowAddrs: []string{"127.0.0.1:" + port}}
	_, got, err := fromExtism(t, manifest(srv.URL+"/p.wasm", `, "method": "get", "headers": {"X-Token": "t"}`), named)
	require.NoError(t, err)
	require.Equal(t, wasm, got)
	require.Equal(t, hit{"GET", "t", "/p.wasm"}, <-hits)

	// refused: js is refused saying want, after requests to paths only.
	refused := func(js string, opts sandbox.ExtismManifestOptions, want string, paths ...string) {
		t.Helper()
		_, _, err := fromExtism(t, js, opts)
		require.ErrorIs(t, err, sandbox.ErrManifest)
		require.ErrorContains(t, err, want)
		for _, p := range paths {
			require.Equal(t, p, (<-hits).path)
		}
		noHit()
	}
	// GET only.
	refused(manifest(srv.URL+"/p.wasm", `, "method": "DELETE"`), named, `method "DELETE": a module is fetched with GET only`)
	// https by default.
	refused(manifest(srv.URL+"/p.wasm", ""), sandbox.ExtismManifestOptions{FetchURLs: true, FetchAllowAddrs: []string{"127.0.0.1"}},
		"a module is fetched over https only (http with runner call --fetch-insecure-http")
	// Loopback only when named, on the port named.
	refused(manifest(srv.URL+"/p.wasm", ""), sandbox.ExtismManifestOptions{FetchURLs: true, FetchInsecureHTTP: true},
		"denied: 127.0.0.1 is a loopback, private or link-local address; runner call --fetch-allow-addr (FetchAllowAddrs) must name it")
	refused(manifest(other.URL+"/p.wasm", ""), named, "denied: 127.0.0.1 is named in runner call --fetch-allow-addr (FetchAllowAddrs) with other ports than")
	// Redirects: checked the same way (the first request is answered, the
	// redirect's is not made).
	refused(manifest(srv.URL+"/to?u="+url.QueryEscape(other.URL+"/p.wasm"), ""), named, "with other ports than", "/to")
	refused(manifest(srv.URL+"/to?u="+url.QueryEscape("ftp://127.0.0.1/p.wasm"), ""), named, `redirect to ftp://127.0.0.1/p.wasm: scheme "ftp"`, "/to")
	httpsOnly := sandbox.ExtismManifestOptions{FetchURLs: true, FetchAllowAddrs: []string{"127.0.0.1"}}
	refused(manifest("https://127.0.0.1:1/p.wasm", `, "headers": {"Host": "example.com"}`), httpsOnly, `header "Host": not one a module's fetch sends`)
	refused(manifest("https://127.0.0.1:1/p.wasm", `, "headers": {"x-http-method-override": "DELETE"}`), httpsOnly, `header "x-http-method-override"`)
	refused(manifest("https://u:p@127.0.0.1:1/p.wasm", ""), httpsOnly, "a URL with user info")
	// A redirect to another host gets none of the manifest's headers.
	both := sandbox.ExtismManifestOptions{FetchURLs: true, FetchInsecureHTTP: true, FetchAllowAddrs: []string{"127.0.0.1"}}
	toOther := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/p.wasm"
	_, _, err = fromExtism(t, manifest(srv.URL+"/to?u="+url.QueryEscape(toOther), `, "headers": {"X-Token": "t"}`),
		sandbox.ExtismManifestOptions{FetchURLs: true, FetchInsecureHTTP: true, FetchAllowAddrs: []string{"127.0.0.1", "::1"}})
	require.NoError(t, err)
	require.Equal(t, hit{"GET", "t", "/to"}, <-hits)
	require.Equal(t, hit{"GET", "", "/p.wasm"}, <-hits)
	// A wrong answer: its digest is not in the error.
	_, _, err = fromExtism(t, manifest(srv.URL+"/other", ""), both)
	require.ErrorContains(t, err, "what the url answered does not have the sha256 the manifest expects ("+sum+")")
	wrong := sandbox.SHA256([]byte("\x00asm\x01\x00\x00\x00 but not that module"))
	require.NotContains(t, err.Error(), wrong)
	require.Equal(t, "/other", (<-hits).path)
	noHit()
}

// An Extism Go PDK plugin loaded from an Extism manifest: config, vars
// capped by max_var_bytes, HTTP by allowed_hosts.
func TestManifestFromExtismPlugin(t *testing.T) {
	t.Parallel()
	srv, _ := httpServer(t)
	path := testwasm.GoPlugin(t, "extism-greet")
	js := `{"wasm": [{"path": "` + path + `"}], "config": {"greeting": "hi"}, "memory": {"max_pages": 512, "max_var_bytes": 100},
		"timeout_ms": 30000, "allowed_hosts": ["127.0.0.1"]}`
	man, wasm, err := fromExtism(t, js, sandbox.ExtismManifestOptions{})
	require.NoError(t, err)
	rt := newRuntime(t, sandbox.Config{CacheDir: testwasm.CompileCacheDir(t)})
	p, err := rt.LoadPlugin(context.Background(), wasm, man)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })

	require.Equal(t, "hi", string(call(t, p, "config", "greeting", sandbox.CallOptions{}).Output))
	require.Equal(t, "200 yes hello", string(call(t, p, "http", srv.URL+"/", sandbox.CallOptions{}).Output))
	require.Equal(t, "1", string(call(t, p, "count", "", sandbox.CallOptions{}).Output), "a var of 5+1+64 bytes fits in 100")

	man.MaxVarBytes = 60
	p2, err := rt.LoadPlugin(context.Background(), wasm, man)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p2.Close(context.Background())) })
	out := call(t, p2, "count", "", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindTrapped, out.Kind, out.String())
	require.Contains(t, out.Message, "over their limit of 60")
}

// ImportedModules lists the modules a module imports functions from, each
// once, in order (tables, memories and globals skipped), and refuses what
// is not a module.
func TestImportedModules(t *testing.T) {
	t.Parallel()
	w := wasmtest.Cat
	fn := func(mod, name string) []byte {
		return w(wasmtest.Str(mod), wasmtest.Str(name), []byte{0}, wasmtest.LEB(0))
	}
	mod := wasmtest.Module(wasmtest.Sec(1, wasmtest.Vec(wasmtest.FuncType(nil, nil))),
		wasmtest.Sec(2, wasmtest.Vec(
			fn("wasi_snapshot_preview1", "fd_write"),
			w(wasmtest.Str("tab"), wasmtest.Str("t"), []byte{1, 0x70, 1}, wasmtest.LEB(1), wasmtest.LEB(2)), // a table
			w(wasmtest.Str("glob"), wasmtest.Str("g"), []byte{3, 0x7f, 0}),                                  // a global
			fn(sandbox.ExtismModule, "alloc"),
			fn("wasi_snapshot_preview1", "fd_read"),
			fn("extism:host/user", "kv_get"),
		)))
	got, err := sandbox.ImportedModules(mod)
	require.NoError(t, err)
	require.Equal(t, []string{"wasi_snapshot_preview1", sandbox.ExtismModule, "extism:host/user"}, got)

	got, err = sandbox.ImportedModules(wasmtest.Module())
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = sandbox.ImportedModules([]byte("not wasm"))
	require.Error(t, err)
	_, err = sandbox.ImportedModules(wasmtest.Module(wasmtest.Sec(2, wasmtest.LEB(3), fn("a", "b"))))
	require.ErrorContains(t, err, "malformed import section")
}

// A module that imports its host app's functions (extism:host/user, as
// Extism's go-sdk gives them to a plugin) has them granted by
// ManifestFromExtism; one that does not, not.
func TestManifestFromExtismGrantsUserModule(t *testing.T) {
	t.Parallel()
	imports := func(mod string) []byte {
		return wasmtest.Module(wasmtest.Sec(1, wasmtest.Vec(wasmtest.FuncType(nil, nil))),
			wasmtest.Sec(2, wasmtest.Vec(wasmtest.Cat(wasmtest.Str(mod), wasmtest.Str("f"), []byte{0}, wasmtest.LEB(0)))))
	}
	js := func(wasm []byte) string {
		return `{"wasm": [{"data": "` + base64.StdEncoding.EncodeToString(wasm) + `"}]}`
	}
	man, _, err := fromExtism(t, js(imports("extism:host/user")), sandbox.ExtismManifestOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"wasi_snapshot_preview1", sandbox.ExtismModule, "extism:host/user"}, man.HostModules)
	man, _, err = fromExtism(t, js(imports("env")), sandbox.ExtismManifestOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"wasi_snapshot_preview1", sandbox.ExtismModule}, man.HostModules, "only Extism's namespace")
}
