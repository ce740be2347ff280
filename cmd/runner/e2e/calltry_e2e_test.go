package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

// extismManifestFile writes an Extism manifest beside a copy of the
// extism-greet plugin (its wasm path relative to the manifest) and
// returns the manifest's path; extra adds members to the manifest.
func extismManifestFile(t *testing.T, extra string) string {
	t.Helper()
	return pluginManifestFile(t, "extism-greet", "greet", `"config": {"greeting": "hi"}, "memory": {"max_pages": 1024}, "timeout_ms": 30000`+extra)
}

// pluginManifestFile writes an Extism manifest, name.json, whose members
// after "wasm" are members, beside name.wasm, a copy of the Go plugin
// named plugin (testwasm.GoPlugin; its path in the manifest relative to
// the manifest), and returns the manifest's path.
func pluginManifestFile(t *testing.T, plugin, name, members string) string {
	t.Helper()
	dir := t.TempDir()
	wasm, err := os.ReadFile(testwasm.GoPlugin(t, plugin))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".wasm"), wasm, 0o600))
	m := filepath.Join(dir, name+".json")
	require.NoError(t, os.WriteFile(m, []byte(`{"wasm": [{"path": "`+name+`.wasm"}], `+members+`}`), 0o600))
	return m
}

// TestCallTryPlugin: runner call for someone trying a plugin: an Extism
// manifest, a literal input, the output and nothing else by default (one
// line saying why when the call fails), the outcome's log line with -v,
// and --loop's times of warm calls.
func TestCallTryPlugin(t *testing.T) {
	t.Parallel()
	m := extismManifestFile(t, "")
	dir := dataDir(t)
	out, stderr, code := runRunner(t, "", "call", "--manifest", m, "greet", "--input-text", "Ada", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "Hello, Ada!", out)
	require.Empty(t, withoutDirWarning(stderr), "quiet by default")

	out, stderr, code = runRunner(t, "", "call", "--manifest", m, "config", "--input-text", "greeting", "--data-dir", dir, "-v")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "hi", out)
	require.Contains(t, stderr, `"outcome":"succeeded"`)

	out, stderr, code = runRunner(t, "", "call", "--manifest", m, "count", "--loop", "20", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "20", out, "warm calls: the var counts them; the last output is printed")
	require.Regexp(t, `^runner: 20 calls: first \S+, warm p50 \S+ p99 \S+ \(19 calls\)\n$`, withoutDirWarning(stderr))

	_, stderr, code = runRunner(t, "", "call", "--manifest", m, "fail", "--input-text", "x", "--data-dir", dir)
	require.Equal(t, 10, code, stderr)
	require.Equal(t, "runner: greet.json fail: failed: fail returned 1: failed on purpose: x\n", withoutDirWarning(stderr))

	_, stderr, code = runRunner(t, "", "call", "--manifest", m, "http", "--input-text", "https://example.com/", "--data-dir", dir)
	require.Equal(t, 11, code, stderr)
	require.Contains(t, stderr, "denied: the plugin's manifest allows no hosts (allowed_hosts)", "deny by default")

	for args, want := range map[string]string{
		"--manifest " + m + " greet --grant wasi_snapshot_preview1": "do not go with --manifest",
		"--manifest " + m + " greet x":                              "with --manifest, give only FUNC",
		"--manifest " + m + " greet --loop 0":                       "--loop 0",
		"--manifest " + m + " greet --input-text a --input -":       "give one",
		"--manifest " + m + ".missing greet":                        "--manifest: open",
	} {
		_, stderr, code = runRunner(t, "", append([]string{"call", "--data-dir", dir}, strings.Fields(args)...)...)
		require.Equal(t, 2, code, "%s: %s", args, stderr)
		require.Contains(t, stderr, want, args)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"wasm": [{"path": "x.wasm"}], "allowed_host": ["a"]}`), 0o600))
	runExits(t, 2, `"allowed_host" is not a field of Extism's manifest`,
		"call", "--manifest", bad, "greet", "--data-dir", dir)
}

// withoutDirWarning drops the warning that dataDir's directories (and the
// shared compilation cache they link to) are open to other users.
func withoutDirWarning(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.Contains(l, "is open to other users") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// TestCallHTTP: an Extism plugin's HTTP request through runner call
// reaches a local server only when the manifest names its address.
func TestCallHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", r.Header.Get("X-Plugin"))
		_, _ = io.WriteString(w, "pong")
	}))
	t.Cleanup(srv.Close)
	dir := dataDir(t)
	m := extismManifestFile(t, `, "allowed_hosts": ["127.0.0.1"]`)
	out, stderr, code := runRunner(t, "", "call", "--manifest", m, "http", "--input-text", srv.URL+"/", "--data-dir", dir,
		"--log-level", "debug")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "200 extism-greet pong", out)
	require.Contains(t, stderr, `"msg":"plugin http request"`)
	require.Contains(t, stderr, `"host":"`+strings.TrimPrefix(srv.URL, "http://")+`"`)

	byName := extismManifestFile(t, `, "allowed_hosts": ["localhost"]`)
	_, stderr, code = runRunner(t, "", "call", "--manifest", byName, "http", "--input-text",
		strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/", "--data-dir", dir)
	require.Equal(t, 11, code, stderr)
	require.Contains(t, stderr, "is a loopback, private or link-local address; allowed_hosts must name it")

	// The flags' manifest: --allow-host.
	out, stderr, code = runRunner(t, "", "call", testwasm.GoPlugin(t, "extism-greet"), "http", "--input-text", srv.URL+"/",
		"--grant", "extism:host/env", "--grant", "wasi_snapshot_preview1", "--allow-host", "127.0.0.1", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "200 extism-greet pong", out)
}

// TestCallFetch: runner call --manifest --fetch fetches a wasm url with
// GET over https from a public address only: an http url needs
// --fetch-insecure-http, a loopback one --fetch-allow-addr naming it, and
// a manifest's other method is refused, all before any request.
func TestCallFetch(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(testwasm.GoPlugin(t, "extism-greet"))
	require.NoError(t, err)
	methods := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods <- r.Method
		_, _ = w.Write(wasm)
	}))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256(wasm)
	manifest := func(extra string) string {
		m := filepath.Join(t.TempDir(), "fetched.json")
		require.NoError(t, os.WriteFile(m, []byte(`{"wasm": [{"url": "`+srv.URL+`/greet.wasm", "hash": "`+hex.EncodeToString(sum[:])+`"`+extra+`}]}`), 0o600))
		return m
	}
	m := manifest("")
	dir := dataDir(t)
	for _, c := range []struct {
		flags []string
		m     string
		want  string
	}{
		{[]string{"--fetch"}, m, "a module is fetched over https only (http with runner call --fetch-insecure-http"},
		{[]string{"--fetch", "--fetch-insecure-http"}, m, "denied: 127.0.0.1 is a loopback, private or link-local address; runner call --fetch-allow-addr"},
		{[]string{"--fetch", "--fetch-insecure-http", "--fetch-allow-addr", "127.0.0.1"}, manifest(`, "method": "DELETE"`), "a module is fetched with GET only"},
		{[]string{"--fetch-insecure-http"}, m, "--fetch-insecure-http and --fetch-allow-addr go with --fetch"},
	} {
		args := append([]string{"call", "--manifest", c.m, "greet", "--input-text", "Ada", "--data-dir", dir}, c.flags...)
		_, stderr, code := runRunner(t, "", args...)
		require.Equal(t, 2, code, "%v: %s", c.flags, stderr)
		require.Contains(t, stderr, c.want, c.flags)
	}
	require.Empty(t, methods, "no request reached the server")
	out, stderr, code := runRunner(t, "", "call", "--manifest", m, "greet", "--input-text", "Ada", "--data-dir", dir,
		"--fetch", "--fetch-insecure-http", "--fetch-allow-addr", "127.0.0.1")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "Hello, Ada!", out)
	require.Equal(t, "GET", <-methods)
}

// TestCallUserCache: with no data directory, runner call compiles once
// into the user's cache directory (created 0700) and the second call
// loads from it (the debug line of the cache's use says so); the data
// directory is still not created. sandbox.user_cache=off uses none.
func TestCallUserCache(t *testing.T) {
	t.Parallel()
	xdg := t.TempDir()
	missing := filepath.Join(t.TempDir(), "stint-data")
	env := []string{"XDG_CACHE_HOME=" + xdg}
	m := extismManifestFile(t, "")
	var took []time.Duration
	for i, want := range []string{`"prepared_cache_hits":0`, `"prepared_cache_hits":1`} {
		start := time.Now()
		out, stderr, code := runRunnerWith(t, env, "", "call", "--manifest", m, "greet", "--input-text", "Ada",
			"--data-dir", missing, "--log-level", "debug")
		took = append(took, time.Since(start))
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "Hello, Ada!", out)
		require.Contains(t, stderr, `"msg":"compilation cache in the user's cache directory","dir":"`+filepath.Join(xdg, "stint")+`"`)
		require.Contains(t, stderr, want, "call %d", i+1)
	}
	t.Logf("runner call of a Go PDK plugin with no data_dir: first %s, second %s", took[0], took[1])
	fi, err := os.Stat(filepath.Join(xdg, "stint"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.NoDirExists(t, missing, "a command that creates nothing in data_dir")

	xdgOff := t.TempDir()
	_, stderr, code := runRunnerWith(t, []string{"XDG_CACHE_HOME=" + xdgOff}, "", "call", "--manifest", m, "greet",
		"--data-dir", missing, "--sandbox-user-cache", "off", "--log-level", "debug")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "sandbox.user_cache is off")
	entries, err := os.ReadDir(xdgOff)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.NoDirExists(t, missing)
}
