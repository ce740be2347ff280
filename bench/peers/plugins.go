package main

// The plugin benchmark (-plugins): one warm call of a no-op export and of a
// small bytes-in/bytes-out export (upper-case 64 bytes), Stint's
// Plugin.Call (and Plugin.CallInto, which fills the caller's Outcome)
// against Extism's Plugin.Call and wasmtime-go's Func.Call on
// the same exports, in one process, interleaved by round; and the stop
// latency of a stuck export call in Stint. Not part of the default run.

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"
	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

var (
	pluginsBench  = flag.Bool("plugins", false, "run the plugin-call benchmark instead (Stint Plugin.Call vs Extism Plugin.Call vs wasmtime-go Func.Call)")
	pluginsN      = flag.Int("plugins-n", 20000, "calls per engine, export and round (-plugins)")
	pluginsRounds = flag.Int("plugins-rounds", 5, "rounds (-plugins)")
	pluginsWindow = flag.Duration("plugins-window", 500*time.Millisecond, "calls/s window per engine and round (-plugins)")
)

//go:embed testdata/extism_upper.wasm
var extismUpper []byte

var upperInput = bytes.Repeat([]byte("stint plugin! "), 5)[:64]
var upperWant = bytes.ToUpper(upperInput)

// caller makes calls on one instance; newCaller gives each goroutine its
// own (Extism and wasmtime instances are not safe for concurrent use;
// Stint's plugin is, with Manifest.Instances of them).
type caller func(export string) error

type pluginEngine struct {
	name      string
	newCaller func() (caller, func(), error)
}

func runPluginBench() error {
	ctx := context.Background()
	if *pdkOnly || *pdkHTTPOnly {
		return runExtismPDKBench(ctx, *pluginsRounds, *pluginsN/4) // extism_pdk.go
	}
	par := runtime.NumCPU()
	basic := wat.MustLoad("plugin_basic")

	rt, err := sandbox.New(ctx, sandbox.Config{Interrupt: sandbox.InterruptChecks})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	sp, err := rt.LoadPlugin(ctx, basic, sandbox.Manifest{Name: "basic", Instances: par})
	if err != nil {
		return err
	}
	rtW, err := sandbox.New(ctx, sandbox.Config{Interrupt: sandbox.InterruptWazero})
	if err != nil {
		return err
	}
	defer rtW.Close(ctx)
	spW, err := rtW.LoadPlugin(ctx, basic, sandbox.Manifest{Name: "basic", Instances: par})
	if err != nil {
		return err
	}
	stintCaller := func(p *sandbox.Plugin) func() (caller, func(), error) {
		return func() (caller, func(), error) {
			return func(export string) error {
				out, err := p.Call(ctx, export, upperIn(export))
				if err != nil {
					return err
				}
				return checkStintUpper(export, out)
			}, func() {}, nil
		}
	}

	// Plugin.CallInto: the same call into an Outcome the caller keeps (one
	// per caller, that is per goroutine), which a warm call then does not
	// allocate.
	stintIntoCaller := func(p *sandbox.Plugin) func() (caller, func(), error) {
		return func() (caller, func(), error) {
			var out sandbox.Outcome
			return func(export string) error {
				if err := p.CallInto(ctx, export, upperIn(export), sandbox.CallOptions{}, &out); err != nil {
					return err
				}
				return checkStintUpper(export, &out)
			}, func() {}, nil
		}
	}

	extismCompiled, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: extismUpper, Name: "main"}}},
		extism.PluginConfig{RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, nil)
	if err != nil {
		return err
	}
	defer extismCompiled.Close(ctx)
	extismCaller := func() (caller, func(), error) {
		p, err := extismCompiled.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			return nil, nil, err
		}
		return func(export string) error {
			rc, out, err := p.CallWithContext(ctx, export, upperIn(export))
			if err != nil || rc != 0 {
				return fmt.Errorf("extism: rc %d: %v", rc, err)
			}
			if export == "upper" && !bytes.Equal(out, upperWant) {
				return fmt.Errorf("extism: upper returned %q", out)
			}
			return nil
		}, func() { p.Close(ctx) }, nil
	}

	wcfg := wasmtime.NewConfig()
	wcfg.SetEpochInterruption(true)
	wengine := wasmtime.NewEngineWithConfig(wcfg)
	wmod, err := wasmtime.NewModule(wengine, basic)
	if err != nil {
		return err
	}
	wasmtimeCaller := func() (caller, func(), error) {
		store := wasmtime.NewStore(wengine)
		store.SetEpochDeadline(farDeadline)
		inst, err := wasmtime.NewInstance(store, wmod, nil)
		if err != nil {
			store.Close()
			return nil, nil, err
		}
		noop, upper, alloc := inst.GetFunc(store, "noop"), inst.GetFunc(store, "upper"), inst.GetFunc(store, "alloc")
		mem := inst.GetExport(store, "memory").Memory()
		return func(export string) error {
			if export == "noop" {
				_, err := noop.Call(store)
				return err
			}
			// The same convention as Stint's: alloc, write, call, read back.
			p, err := alloc.Call(store, int32(len(upperInput)))
			if err != nil {
				return err
			}
			data := mem.UnsafeData(store)
			ptr := uint32(p.(int32))
			copy(data[ptr:], upperInput)
			r, err := upper.Call(store, int32(ptr), int32(len(upperInput)))
			if err != nil {
				return err
			}
			res := uint64(r.(int64))
			optr, olen := uint32(res>>32), uint32(res)
			data = mem.UnsafeData(store)
			if uint64(optr)+uint64(olen) > uint64(len(data)) {
				return errors.New("wasmtime: output out of bounds")
			}
			out := bytes.Clone(data[optr : optr+olen])
			if !bytes.Equal(out, upperWant) {
				return fmt.Errorf("wasmtime: upper returned %q", out)
			}
			return nil
		}, func() { store.Close() }, nil
	}

	engines := []pluginEngine{
		{"Stint Plugin.Call (checks)", stintCaller(sp)},
		{"Stint Plugin.CallInto (checks)", stintIntoCaller(sp)},
		{"Stint Plugin.Call (wazero)", stintCaller(spW)},
		{"Extism Plugin.Call", extismCaller},
		{"wasmtime-go Func.Call", wasmtimeCaller},
	}
	type key struct{ engine, export string }
	lat := map[key][]time.Duration{}
	rate := map[key][]float64{}
	for round := 0; round < *pluginsRounds; round++ {
		for _, e := range engines {
			for _, export := range []string{"noop", "upper"} {
				c, done, err := e.newCaller()
				if err != nil {
					return fmt.Errorf("%s: %w", e.name, err)
				}
				for range 200 { // warm up
					if err := c(export); err != nil {
						return fmt.Errorf("%s %s: %w", e.name, export, err)
					}
				}
				for range *pluginsN {
					t0 := time.Now()
					if err := c(export); err != nil {
						return fmt.Errorf("%s %s: %w", e.name, export, err)
					}
					lat[key{e.name, export}] = append(lat[key{e.name, export}], time.Since(t0))
				}
				done()
				r, err := callsPerSecond(e, export, par, *pluginsWindow)
				if err != nil {
					return fmt.Errorf("%s %s: %w", e.name, export, err)
				}
				rate[key{e.name, export}] = append(rate[key{e.name, export}], r)
			}
		}
	}
	fmt.Printf("Warm plugin calls: %d calls per engine, export and round, %d rounds interleaved; calls/s: %d goroutines for %s per round (median of rounds)\n\n",
		*pluginsN, *pluginsRounds, par, *pluginsWindow)
	fmt.Println("| engine | export | p50 | p99 | calls/s |")
	fmt.Println("| --- | --- | ---: | ---: | ---: |")
	for _, export := range []string{"noop", "upper"} {
		for _, e := range engines {
			k := key{e.name, export}
			l := lat[k]
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
			r := rate[k]
			sort.Float64s(r)
			fmt.Printf("| %s | %s | %s | %s | %.0f |\n", e.name, export, fmtDur(l[len(l)/2]), fmtDur(l[len(l)*99/100]), r[len(r)/2])
		}
	}

	// Stop latency of a stuck export: cancel the call's context once the
	// guest spins (a call gives no signal that it started, so a short
	// head start), then time until Call returns.
	fmt.Println("\nStop latency of a stuck export call (spin: `loop br`), Stint, from cancel to Call's return:")
	fmt.Println()
	fmt.Println("| interrupt mode | samples | p50 | p99 | max |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: |")
	for _, m := range []struct {
		name string
		p    *sandbox.Plugin
	}{{"checks", sp}, {"wazero", spW}} {
		var l []time.Duration
		for range 50 {
			cctx, cancel := context.WithCancel(ctx)
			var stopAt atomic.Int64
			go func() {
				time.Sleep(2 * time.Millisecond)
				stopAt.Store(time.Now().UnixNano())
				cancel()
			}()
			out, err := m.p.Call(cctx, "spin", nil)
			end := time.Now().UnixNano()
			if err != nil || out.Kind != sandbox.KindForced {
				return fmt.Errorf("spin: %v %v", err, out)
			}
			l = append(l, time.Duration(end-stopAt.Load()))
		}
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		fmt.Printf("| %s | %d | %s | %s | %s |\n", m.name, len(l), fmtDur(l[len(l)/2]), fmtDur(l[len(l)*99/100]), fmtDur(l[len(l)-1]))
	}
	if err := runHostCallBench(ctx, *pluginsRounds, *pluginsN/20); err != nil { // hostcall.go
		return err
	}
	return runExtismPDKBench(ctx, *pluginsRounds, *pluginsN/4) // extism_pdk.go
}

// callsPerSecond runs par goroutines, each with its own caller, for
// window, and returns the calls completed per second.
func callsPerSecond(e pluginEngine, export string, par int, window time.Duration) (float64, error) {
	var calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, par)
	stop := make(chan struct{})
	for range par {
		c, done, err := e.newCaller()
		if err != nil {
			return 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c(export); err != nil {
					errs <- err
					return
				}
				calls.Add(1)
			}
		}()
	}
	t0 := time.Now()
	time.Sleep(window)
	close(stop)
	wg.Wait()
	el := time.Since(t0)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(calls.Load()) / el.Seconds(), nil
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f µs", float64(d.Nanoseconds())/1e3)
	default:
		return fmt.Sprintf("%.2f ms", float64(d.Nanoseconds())/1e6)
	}
}

// upperIn is what a call of export gets: upperInput, or nothing for noop.
func upperIn(export string) []byte {
	if export == "noop" {
		return nil
	}
	return upperInput
}

// checkStintUpper checks a Stint plugin call's outcome out of export: a
// success, and upperWant from upper.
func checkStintUpper(export string, out *sandbox.Outcome) error {
	if !out.Success() {
		return errors.New(out.String())
	}
	if export == "upper" && !bytes.Equal(out.Output, upperWant) {
		return fmt.Errorf("stint: upper returned %q", out.Output)
	}
	return nil
}
