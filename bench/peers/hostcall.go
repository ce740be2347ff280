package main

// The host call benchmark (part of -plugins): what one call from a guest
// into a no-op host function costs, in Stint (an embedder's HostFunc, both
// interrupt modes), wasmtime-go (Linker.FuncWrap) and Extism (a
// HostFunction), on the same module (testdata/hostcall.wat; Extism's copy
// imports from its own namespace). Each export call makes 1,000 host calls
// (`calls`) or runs the same loop without them (`none`); the difference of
// their medians, divided by 1,000, is one host call.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"
	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox"
)

var (
	//go:embed testdata/hostcall.wasm
	hostcallWasm []byte
	//go:embed testdata/extism_hostcall.wasm
	extismHostcallWasm []byte
)

// hostCallsPerExport is the number of host calls one `calls` export makes.
const hostCallsPerExport = 1000

func runHostCallBench(ctx context.Context, rounds, n int) error {
	noop := sandbox.HostModuleDef{Name: "bench", Funcs: []sandbox.HostFunc{{
		Name: "noop", Func: func(context.Context, sandbox.Call, []uint64) error { return nil },
	}}}
	type engine struct {
		name string
		call func(export string) error
	}
	var engines []engine
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(ctx, sandbox.Config{Interrupt: mode, HostModules: []sandbox.HostModuleDef{noop}})
		if err != nil {
			return err
		}
		defer rt.Close(ctx)
		p, err := rt.LoadPlugin(ctx, hostcallWasm, sandbox.Manifest{Name: "hostcall", HostModules: []string{"bench"}})
		if err != nil {
			return err
		}
		engines = append(engines, engine{"Stint HostFunc (" + string(mode) + ")", func(export string) error {
			out, err := p.Call(ctx, export, nil)
			if err != nil {
				return err
			}
			if !out.Success() {
				return errors.New(out.String())
			}
			return nil
		}})
	}

	wcfg := wasmtime.NewConfig()
	wcfg.SetEpochInterruption(true)
	wengine := wasmtime.NewEngineWithConfig(wcfg)
	wmod, err := wasmtime.NewModule(wengine, hostcallWasm)
	if err != nil {
		return err
	}
	linker := wasmtime.NewLinker(wengine)
	if err := linker.FuncWrap("bench", "noop", func() {}); err != nil {
		return err
	}
	store := wasmtime.NewStore(wengine)
	defer store.Close()
	store.SetEpochDeadline(farDeadline)
	winst, err := linker.Instantiate(store, wmod)
	if err != nil {
		return err
	}
	wfuncs := map[string]*wasmtime.Func{"calls": winst.GetFunc(store, "calls"), "none": winst.GetFunc(store, "none")}
	engines = append(engines, engine{"wasmtime-go FuncWrap", func(export string) error {
		_, err := wfuncs[export].Call(store)
		return err
	}})

	hf := extism.NewHostFunctionWithStack("noop", func(context.Context, *extism.CurrentPlugin, []uint64) {}, nil, nil)
	ecomp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: extismHostcallWasm, Name: "main"}}},
		extism.PluginConfig{RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, []extism.HostFunction{hf})
	if err != nil {
		return err
	}
	defer ecomp.Close(ctx)
	ep, err := ecomp.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		return err
	}
	defer ep.Close(ctx)
	engines = append(engines, engine{"Extism HostFunction", func(export string) error {
		rc, _, err := ep.CallWithContext(ctx, export, nil)
		if err != nil || rc != 0 {
			return fmt.Errorf("extism: rc %d: %v", rc, err)
		}
		return nil
	}})

	lat := map[string][]time.Duration{}
	for range rounds {
		for _, e := range engines {
			for range 50 { // warm up
				if err := e.call("calls"); err != nil {
					return fmt.Errorf("%s: %w", e.name, err)
				}
			}
			for range n { // interleaved: calls, none
				for _, export := range []string{"calls", "none"} {
					t0 := time.Now()
					if err := e.call(export); err != nil {
						return fmt.Errorf("%s %s: %w", e.name, export, err)
					}
					lat[e.name+"/"+export] = append(lat[e.name+"/"+export], time.Since(t0))
				}
			}
		}
	}
	median := func(l []time.Duration) time.Duration {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		return l[len(l)/2]
	}
	fmt.Printf("\nHost function calls: an export making %d calls of a no-op host function, against the same loop without them; %d pairs per engine and round, %d rounds interleaved\n\n",
		hostCallsPerExport, n, rounds)
	fmt.Println("| engine | export with calls, p50 | without, p50 | one host call |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	for _, e := range engines {
		c, o := median(lat[e.name+"/calls"]), median(lat[e.name+"/none"])
		fmt.Printf("| %s | %s | %s | %s |\n", e.name, fmtDur(c), fmtDur(o), fmtDur((c-o)/hostCallsPerExport))
	}
	return nil
}
