package main

// The Extism HTTP table (with -pdk and -plugins; alone with -pdk-http):
// a warm call making one GET through http_request under an allow-list of
// 127.0.0.1, against one local keep-alive server, by the Go PDK plugin
// wasm-examples/extism-greet (its http export) and by the runtime-less
// plugin_http.wat (its get export), in Stint and in Extism's go-sdk,
// beside the same GET by a bare net/http client; interleaved by round.
// The last column is each row's p50 less net/http's, the median over the
// rounds of the same round's difference (issue 26: "at most 50 µs over the
// request itself").

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

var pdkHTTPOnly = flag.Bool("pdk-http", false, "run only the Extism HTTP table of -pdk (one GET through http_request, Stint vs Extism go-sdk vs net/http)")

// runExtismHTTPBench prints the HTTP table; greet is extism-greet's wasm.
func runExtismHTTPBench(ctx context.Context, greet []byte, rounds, n int) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "yes")
		_, _ = io.WriteString(w, "hello")
	}))
	defer srv.Close()
	url := []byte(srv.URL + "/")
	minimal := wat.MustLoad("plugin_http")
	hosts := []string{"127.0.0.1"}

	stint := func(mode sandbox.InterruptMode, wasm []byte, fn, want string) func() (func() error, func(), error) {
		return func() (func() error, func(), error) {
			man := sandbox.Manifest{Name: "extism-http",
				HostModules: []string{"wasi_snapshot_preview1", sandbox.ExtismModule},
				HTTP:        sandbox.HTTPGrant{AllowedHosts: hosts}}
			return stintPluginCall(ctx, sandbox.Config{Interrupt: mode}, wasm, man, func(p *sandbox.Plugin) error { // extism_pdk.go
				out, err := p.Call(ctx, fn, url)
				if err != nil {
					return err
				}
				if !out.Success() || string(out.Output) != want {
					return fmt.Errorf("stint: %s %q", out, out.Output)
				}
				return nil
			})
		}
	}
	ext := func(wasm []byte, fn, want string) func() (func() error, func(), error) {
		return func() (func() error, func(), error) {
			return extismPluginCall(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
				AllowedHosts: hosts},
				extism.PluginConfig{EnableWasi: true, EnableHttpResponseHeaders: true,
					RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, nil,
				func(p *extism.Plugin) error { // extism_pdk.go
					rc, out, err := p.CallWithContext(ctx, fn, url)
					if err != nil || rc != 0 || string(out) != want {
						return fmt.Errorf("extism: rc %d, output %q: %v", rc, out, err)
					}
					return nil
				})
		}
	}
	direct := func() (func() error, func(), error) {
		// A transport set like the sandbox's: no proxy, keep-alive.
		tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{}).DialContext, MaxIdleConns: 4,
			IdleConnTimeout: 30 * time.Second, ForceAttemptHTTP2: true}
		client := &http.Client{Transport: tr}
		return func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, string(url), nil)
			if err != nil {
				return err
			}
			req.Header.Set("X-Plugin", "extism-greet")
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || string(body) != "hello" || resp.Header.Get("X-Test") != "yes" {
				return fmt.Errorf("net/http: %q: %v", body, err)
			}
			return nil
		}, tr.CloseIdleConnections, nil
	}
	const pdkWant, minWant = "200 yes hello", "hello"
	engines := []pdkEngine{
		{"Go PDK `http`, Stint (checks)", stint(sandbox.InterruptChecks, greet, "http", pdkWant)},
		{"Go PDK `http`, Stint (wazero)", stint(sandbox.InterruptWazero, greet, "http", pdkWant)},
		{"Go PDK `http`, Extism go-sdk", ext(greet, "http", pdkWant)},
		{"`plugin_http.wat` `get`, Stint (checks)", stint(sandbox.InterruptChecks, minimal, "get", minWant)},
		{"`plugin_http.wat` `get`, Extism go-sdk", ext(minimal, "get", minWant)},
		{"net/http GET alone", direct},
	}
	p50s, p99s, _, err := pdkRounds(engines, rounds, n) // extism_pdk.go
	if err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\nOne GET through http_request (allowed hosts: 127.0.0.1) to a local keep-alive server, warm calls: %d calls per engine and round, %d rounds interleaved, medians of the rounds' p50 and p99; load average %s\n\n",
		n, rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Println("| engine | p50 | p99 | p50 − net/http's |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	ref := len(engines) - 1
	for i, e := range engines {
		diffs := make([]time.Duration, rounds)
		for r := range diffs {
			diffs[r] = p50s[i][r] - p50s[ref][r]
		}
		sort.Slice(diffs, func(a, b int) bool { return diffs[a] < diffs[b] })
		fmt.Printf("| %s | %s | %s | %s |\n", e.name, fmtDur(medianDur(p50s[i])), fmtDur(medianDur(p99s[i])), fmtSignedDur(diffs[len(diffs)/2]))
	}
	return nil
}

// fmtSignedDur is fmtDur with a sign for a negative d.
func fmtSignedDur(d time.Duration) string {
	if d < 0 {
		return "−" + fmtDur(-d)
	}
	return fmtDur(d)
}
