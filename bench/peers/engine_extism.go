package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
)

// extismEngine is the Extism Go SDK v1.7.1 (itself on wazero) running a
// plain WASI command module, which is not an Extism PDK plugin: the
// manifest holds the wasm bytes, NewCompiledPlugin (EnableWasi, a runtime
// config with WithCloseOnContextDone(true)) compiles it once, and each task is
// CompiledPlugin.Instance (which instantiates Extism's kernel module and the
// guest, with our stdin/stdout/stderr in the ModuleConfig), then
// Plugin.CallWithContext(ctx, "_start", nil), then Plugin.Close. Call also
// does its PDK bookkeeping (input reset/alloc/set in the kernel before, error
// and output lookups after); the guest's data goes through WASI stdio, not
// the PDK input/output, since a command module cannot use them.
type extismEngine struct {
	g                 guests
	noop, hello, loop *extism.CompiledPlugin
}

func (e *extismEngine) info() string {
	return "extism go-sdk v1.7.1 (on wazero), CompiledPlugin.Instance + Call(\"_start\") + Close per task"
}

func (e *extismEngine) setup(ctx context.Context, g guests) error {
	e.g = g
	var err error
	for _, m := range []struct {
		dst  **extism.CompiledPlugin
		wasm []byte
	}{{&e.noop, g.noop}, {&e.hello, g.hello}, {&e.loop, g.loop}} {
		manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: m.wasm, Name: "main"}}}
		cfg := extism.PluginConfig{
			EnableWasi:    true,
			RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true),
		}
		if *m.dst, err = extism.NewCompiledPlugin(ctx, manifest, cfg, nil); err != nil {
			return err
		}
	}
	return nil
}

func (e *extismEngine) newTask(guest string) (taskFunc, func(), error) {
	cp := e.noop
	if guest == "hello" {
		cp = e.hello
	}
	ctx := context.Background()
	base := wazeroModuleConfig()
	var stdout, stderr bytes.Buffer
	return func() error {
		stdout.Reset()
		stderr.Reset()
		p, err := cp.Instance(ctx, extism.PluginInstanceConfig{
			ModuleConfig: base.WithStdin(bytes.NewReader(e.g.input)).WithStdout(&stdout).WithStderr(&stderr),
		})
		if err != nil {
			return err
		}
		rc, _, err := p.CallWithContext(ctx, "_start", nil)
		_ = p.Close(ctx)
		if err != nil || rc != 0 {
			return fmt.Errorf("extism: rc %d: %v (stderr %q)", rc, err, stderr.Bytes())
		}
		return checkOut(&e.g, guest, stdout.Bytes())
	}, func() {}, nil
}

func (e *extismEngine) stop() (time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := newSignalWriter()
	p, err := e.loop.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazeroModuleConfig().WithStderr(sig)})
	if err != nil {
		return 0, err
	}
	defer p.Close(context.Background())
	d, err, werr := timeStop(sig.ch, cancel, func() error {
		_, _, err := p.CallWithContext(ctx, "_start", nil)
		return err
	})
	if werr != nil {
		return 0, werr
	}
	if err == nil {
		return 0, fmt.Errorf("extism: stuck guest returned without an error")
	}
	return d, nil
}

func (e *extismEngine) close() {
	ctx := context.Background()
	for _, p := range []*extism.CompiledPlugin{e.noop, e.hello, e.loop} {
		if p != nil {
			_ = p.Close(ctx)
		}
	}
}
