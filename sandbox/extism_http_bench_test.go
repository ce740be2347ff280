package sandbox_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// BenchmarkExtismHTTP (issue 26: "an HTTP request through the allow-list
// costs at most 50 µs over the request itself"): each iteration makes, in
// a rotating order against one local keep-alive server, (a) a warm call
// of extism-greet's http export (one GET through http_request, its
// allow-list and dial checks, then http_headers), (b) the same GET by a
// Go net/http client whose transport is configured like the sandbox's (no
// proxy, keep-alive), (c) a warm call of its greet export (no HTTP) and
// (a') a warm call of plugin_http.wat's get, the same GET through
// http_request (then http_status_code and http_headers) by a guest with no
// language runtime: what the host's path costs with a guest that does
// almost nothing. It reports each one's p50 and p99 and the overheads
// a−b−c, a−b and a'−b (of the p50s), in ns.
func BenchmarkExtismHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "yes")
		_, _ = io.WriteString(w, "hello")
	}))
	defer srv.Close()

	wasm, err := os.ReadFile(testwasm.GoPlugin(b, "extism-greet"))
	if err != nil {
		b.Fatal(err)
	}
	rt, err := sandbox.New(context.Background(), sandbox.Config{CacheDir: testwasm.CompileCacheDir(b), CompileTimeout: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rt.Close(context.Background()) }()
	man := extismManifest()
	man.HTTP = sandbox.HTTPGrant{AllowedHosts: []string{"127.0.0.1"}}
	man.Limits.Timeout = 0 // the defaults: 10 s for the call and for a request (DefaultPluginTimeout, DefaultHTTPTimeout)
	p, err := rt.LoadPlugin(context.Background(), wasm, man)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close(context.Background()) }()
	minimal, err := rt.LoadPlugin(context.Background(), wat.MustLoad("plugin_http"), sandbox.Manifest{Name: "plugin-http",
		HostModules: []string{sandbox.ExtismModule}, HTTP: man.HTTP, Limits: man.Limits})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = minimal.Close(context.Background()) }()

	tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{}).DialContext, MaxIdleConns: 4,
		IdleConnTimeout: 30 * time.Second, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := srv.URL + "/"
	in := []byte(url)

	plugin := func(p *sandbox.Plugin, fn string, input []byte, want string) {
		out, err := p.Call(context.Background(), fn, input)
		if err != nil || !out.Success() || string(out.Output) != want {
			b.Fatal(err, out)
		}
	}
	direct := func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("X-Plugin", "extism-greet")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(body) != "hello" || resp.Header.Get("X-Test") != "yes" {
			b.Fatal(err, string(body))
		}
	}
	ops := []func(){
		func() { plugin(p, "http", in, "200 yes hello") }, // (a)
		direct, // (b)
		func() { plugin(p, "greet", []byte("bench"), "Hello, bench!") }, // (c)
		func() { plugin(minimal, "get", in, "hello") },                  // (a')
	}
	for _, op := range ops { // warm: the connections, the instance
		op()
		op()
	}
	var samples [4][]time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		for j := range ops {
			k := (i + j) % len(ops)
			start := time.Now()
			ops[k]()
			samples[k] = append(samples[k], time.Since(start))
		}
		i++
	}
	b.StopTimer()
	var p50 [4]float64
	for k, name := range []string{"a-plugin-http", "b-direct-http", "c-plugin-greet", "a'-minimal-http"} {
		s := samples[k]
		slices.Sort(s)
		p50[k] = float64(s[len(s)/2])
		b.ReportMetric(p50[k], name+"-p50-ns")
		b.ReportMetric(float64(s[len(s)*99/100]), name+"-p99-ns")
	}
	b.ReportMetric(p50[0]-p50[1]-p50[2], "a-b-c-p50-ns")
	b.ReportMetric(p50[0]-p50[1], "a-b-p50-ns")
	b.ReportMetric(p50[3]-p50[1], "a'-b-p50-ns")
}
