package main

// The Extism PDK table (-plugins, or alone with -pdk): a warm call of the
// greet export of a plugin built with Extism's Go PDK
// (wasm-examples/extism-greet, unchanged), in Stint (its own host side of
// Extism's ABI) and in Extism's go-sdk, in one process, interleaved by
// round.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox"
)

var (
	pdkOnly = flag.Bool("pdk", false, "run only the Extism PDK table of -plugins (greet, Stint vs Extism go-sdk)")
	pdkRepo = flag.String("pdk-repo", "../..", "Stint repository root, where wasm-examples/extism-greet is built from (-plugins, -pdk)")
)

var greetInput = bytes.Repeat([]byte("Ada "), 16) // 64 bytes
var greetWant = "Hello, " + string(greetInput) + "!"

// buildExtismPlugin builds the Go PDK plugin wasm-examples/NAME into dir.
func buildExtismPlugin(repo, dir, name string) (string, error) {
	out := filepath.Join(dir, name+".wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", out, "./wasm-examples/"+name)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building wasm-examples/%s: %v\n%s", name, err, b)
	}
	return out, nil
}

func runExtismPDKBench(ctx context.Context, rounds, n int) error {
	dir, err := os.MkdirTemp("", "peers-extism-greet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, err := buildExtismPlugin(*pdkRepo, dir, "extism-greet")
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if *pdkHTTPOnly {
		return runExtismHTTPBench(ctx, wasm, rounds, n) // extism_http.go
	}
	man := sandbox.Manifest{Name: "extism-greet", HostModules: []string{"wasi_snapshot_preview1", sandbox.ExtismModule}}
	stint := func(mode sandbox.InterruptMode) (func() error, func(), error) {
		return stintPluginCall(ctx, sandbox.Config{Interrupt: mode}, wasm, man, func(p *sandbox.Plugin) error {
			out, err := p.Call(ctx, "greet", greetInput)
			if err != nil {
				return err
			}
			if !out.Success() || string(out.Output) != greetWant {
				return fmt.Errorf("stint: %s %q", out, out.Output)
			}
			return nil
		})
	}
	ext := func() (func() error, func(), error) {
		return extismPluginCall(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}}},
			extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, nil,
			func(p *extism.Plugin) error {
				rc, out, err := p.CallWithContext(ctx, "greet", greetInput)
				if err != nil || rc != 0 {
					return fmt.Errorf("extism: rc %d: %v", rc, err)
				}
				if string(out) != greetWant {
					return errors.New("extism: wrong output")
				}
				return nil
			})
	}
	engines := []pdkEngine{
		{"Stint Plugin.Call (checks)", func() (func() error, func(), error) { return stint(sandbox.InterruptChecks) }},
		{"Stint Plugin.Call (wazero)", func() (func() error, func(), error) { return stint(sandbox.InterruptWazero) }},
		{"Extism go-sdk Plugin.Call", ext},
	}
	title := fmt.Sprintf("Extism Go PDK plugin (wasm-examples/extism-greet, %d KB), warm call of greet (64 bytes in, 72 out)", len(wasm)>>10)
	if err := pdkTable(title, engines, rounds, n); err != nil {
		return err
	}
	if err := runExtismHostFnBench(ctx, dir, rounds, n); err != nil { // extism_hostfn.go
		return err
	}
	return runExtismHTTPBench(ctx, wasm, rounds, n) // extism_http.go
}

// stintPluginCall loads wasm as a plugin in a new runtime of cfg, for a
// pdkEngine: call is its warm call, and what ends it closes both.
func stintPluginCall(ctx context.Context, cfg sandbox.Config, wasm []byte, man sandbox.Manifest, call func(*sandbox.Plugin) error) (func() error, func(), error) {
	rt, err := sandbox.New(ctx, cfg)
	return warmCall(ctx, rt, err, func(rt *sandbox.Runtime) (*sandbox.Plugin, error) { return rt.LoadPlugin(ctx, wasm, man) }, call)
}

// extismPluginCall compiles man in Extism's go-sdk with cfg and the host
// functions fns and makes an instance of it, for a pdkEngine: call is its
// warm call, and what ends it closes both.
func extismPluginCall(ctx context.Context, man extism.Manifest, cfg extism.PluginConfig, fns []extism.HostFunction, call func(*extism.Plugin) error) (func() error, func(), error) {
	cp, err := extism.NewCompiledPlugin(ctx, man, cfg, fns)
	return warmCall(ctx, cp, err, func(cp *extism.CompiledPlugin) (*extism.Plugin, error) {
		return cp.Instance(ctx, extism.PluginInstanceConfig{})
	}, call)
}

// closer is a runtime, a compiled plugin or a plugin.
type closer interface{ Close(context.Context) error }

// warmCall makes a plugin p of r (what opened r returned r and err), for a
// pdkEngine: call(p) is its warm call, and what ends it closes p, then r.
func warmCall[R, P closer](ctx context.Context, r R, err error, plugin func(R) (P, error), call func(P) error) (func() error, func(), error) {
	if err != nil {
		return nil, nil, err
	}
	p, err := plugin(r)
	if err != nil {
		r.Close(ctx)
		return nil, nil, err
	}
	return func() error { return call(p) }, func() {
		p.Close(ctx)
		r.Close(ctx)
	}, nil
}

// pdkEngine is one row of a PDK table: make returns a warm call and what
// ends it.
type pdkEngine struct {
	name string
	make func() (func() error, func(), error)
}

// pdkTable times the engines' warm calls, interleaved by round, and
// prints the table (the last engine is the reference: Extism's).
func pdkTable(title string, engines []pdkEngine, rounds, n int) error {
	p50s, p99s, totals, err := pdkRounds(engines, rounds, n)
	if err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\n%s: %d calls per engine and round, %d rounds interleaved, medians of the rounds' p50, p99 and calls/s "+
		"(one caller, calls back to back: the round's calls over its wall time); load average %s\n\n",
		title, n, rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Println("| engine | p50 | p99 | p50 / Extism's | calls/s | calls/s / Extism's |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: |")
	last := len(engines) - 1
	ref, refTotal := medianDur(p50s[last]), medianDur(totals[last])
	for i, e := range engines {
		m, total := medianDur(p50s[i]), medianDur(totals[i])
		fmt.Printf("| %s | %s | %s | %.2fx | %.0f | %.1fx |\n", e.name, fmtDur(m), fmtDur(medianDur(p99s[i])), float64(m)/float64(ref),
			float64(n)/total.Seconds(), float64(refTotal)/float64(total))
	}
	return nil
}

// medianDur is the median of d (d is not changed).
func medianDur(d []time.Duration) time.Duration {
	d = append([]time.Duration(nil), d...)
	sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
	return d[len(d)/2]
}

// pdkRounds times the engines' warm calls, interleaved by round: each
// engine's p50 and p99 of each round, and the wall time of its n calls.
func pdkRounds(engines []pdkEngine, rounds, n int) (p50s, p99s, totals [][]time.Duration, err error) {
	p50s = make([][]time.Duration, len(engines))
	p99s = make([][]time.Duration, len(engines))
	totals = make([][]time.Duration, len(engines))
	for round := 0; round < rounds; round++ {
		for i, e := range engines {
			c, done, err := e.make()
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", e.name, err)
			}
			for range 200 { // warm up (and instantiate)
				if err := c(); err != nil {
					done()
					return nil, nil, nil, fmt.Errorf("%s: %w", e.name, err)
				}
			}
			l := make([]time.Duration, 0, n)
			start := time.Now()
			for range n {
				t0 := time.Now()
				if err := c(); err != nil {
					done()
					return nil, nil, nil, fmt.Errorf("%s: %w", e.name, err)
				}
				l = append(l, time.Since(t0))
			}
			totals[i] = append(totals[i], time.Since(start))
			done()
			sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
			p50s[i] = append(p50s[i], l[len(l)/2])
			p99s[i] = append(p99s[i], l[len(l)*99/100])
		}
	}
	return p50s, p99s, totals, nil
}
