package main

// The Extism host function table (with -pdk and -plugins): a warm call of
// the lookup export of wasm-examples/extism-kv, a Go PDK plugin that calls
// its host's kv_get in extism:host/user (a kernel block in, a new block
// out), in Stint (package sandbox/extism's NewHostFunctionWithStack) and
// in Extism's go-sdk (extism.NewHostFunctionWithStack), the same callback
// in both.

import (
	"context"
	"errors"
	"fmt"
	"os"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox"
	stextism "github.com/stint-run/stint/sandbox/extism"
)

var hostFnValue = []byte("the value of the key, 32 bytes..")

// kvGet is kv_get's callback, the same in both: it reads the key block
// and answers a new block holding hostFnValue.
func kvGet(p interface {
	ReadString(offset uint64) (string, error)
	WriteBytes(b []byte) (uint64, error)
}, stack []uint64) {
	if _, err := p.ReadString(stack[0]); err != nil {
		panic(err)
	}
	off, err := p.WriteBytes(hostFnValue)
	if err != nil {
		panic(err)
	}
	stack[0] = off
}

func runExtismHostFnBench(ctx context.Context, dir string, rounds, n int) error {
	path, err := buildExtismPlugin(*pdkRepo, dir, "extism-kv")
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	input := []byte("answer")
	check := func(who string, out []byte) error {
		if string(out) != string(hostFnValue) {
			return fmt.Errorf("%s: wrong output %q", who, out)
		}
		return nil
	}

	stint := func(mode sandbox.InterruptMode, nonBlocking bool) (func() error, func(), error) {
		get := stextism.NewHostFunctionWithStack("kv_get", func(_ context.Context, p *stextism.CurrentPlugin, stack []uint64) {
			kvGet(p, stack)
		}, []stextism.ValueType{stextism.ValueTypePTR}, []stextism.ValueType{stextism.ValueTypePTR})
		set := stextism.NewHostFunctionWithStack("kv_set", func(context.Context, *stextism.CurrentPlugin, []uint64) {},
			[]stextism.ValueType{stextism.ValueTypePTR, stextism.ValueTypePTR}, nil)
		hold := stextism.NewHostFunctionWithStack("hold", func(context.Context, *stextism.CurrentPlugin, []uint64) {}, nil, nil)
		get.NonBlocking, set.NonBlocking, hold.NonBlocking = nonBlocking, nonBlocking, nonBlocking
		man := sandbox.Manifest{Name: "extism-kv",
			HostModules: []string{"wasi_snapshot_preview1", sandbox.ExtismModule, "stint", stextism.UserModule}}
		cfg := sandbox.Config{Interrupt: mode, HostModules: stextism.HostModules(get, set, hold)}
		return stintPluginCall(ctx, cfg, wasm, man, func(p *sandbox.Plugin) error { // extism_pdk.go
			out, err := p.Call(ctx, "lookup", input)
			if err != nil {
				return err
			}
			if !out.Success() {
				return fmt.Errorf("stint: %s", out)
			}
			return check("stint", out.Output)
		})
	}
	ext := func() (func() error, func(), error) {
		get := extism.NewHostFunctionWithStack("kv_get", func(_ context.Context, p *extism.CurrentPlugin, stack []uint64) {
			kvGet(p, stack)
		}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
		set := extism.NewHostFunctionWithStack("kv_set", func(context.Context, *extism.CurrentPlugin, []uint64) {},
			[]extism.ValueType{extism.ValueTypePTR, extism.ValueTypePTR}, nil)
		hold := extism.NewHostFunctionWithStack("hold", func(context.Context, *extism.CurrentPlugin, []uint64) {}, nil, nil)
		// The plugin's wait export imports Stint's stint.stop_requested: a stub (never called here).
		stop := extism.NewHostFunctionWithStack("stop_requested", func(_ context.Context, _ *extism.CurrentPlugin, stack []uint64) { stack[0] = 0 },
			nil, []extism.ValueType{extism.ValueTypeI32})
		stop.SetNamespace("stint")
		return extismPluginCall(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}}},
			extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)},
			[]extism.HostFunction{get, set, hold, stop},
			func(p *extism.Plugin) error { // extism_pdk.go
				rc, out, err := p.CallWithContext(ctx, "lookup", input)
				if err != nil || rc != 0 {
					return errors.Join(fmt.Errorf("extism: rc %d", rc), err)
				}
				return check("extism", out)
			})
	}
	engines := []pdkEngine{
		{"Stint Plugin.Call (checks)", func() (func() error, func(), error) { return stint(sandbox.InterruptChecks, false) }},
		{"Stint Plugin.Call (checks), host functions NonBlocking", func() (func() error, func(), error) { return stint(sandbox.InterruptChecks, true) }},
		{"Stint Plugin.Call (wazero)", func() (func() error, func(), error) { return stint(sandbox.InterruptWazero, false) }},
		{"Extism go-sdk Plugin.Call", ext},
	}
	title := fmt.Sprintf("Extism Go PDK plugin with a host function (wasm-examples/extism-kv, %d KB), warm call of lookup (its kv_get in extism:host/user: a 6-byte key block in, a 32-byte value block out)", len(wasm)>>10)
	return pdkTable(title, engines, rounds, n)
}
