// Command plugin-host is an example host app: it loads plugins with
// different manifests, gives them a host function (env.kv_get over an
// in-memory store), calls them warm, stops a stuck call and a cooperative
// one, and prints each outcome. It is self-contained (it imports only
// package sandbox), so it can be copied into another module.
//
// Its own plugin, plugin.wat, is beside it and embedded as plugin.wasm:
//
//	go run ./examples/plugin-host
//
// With -kvplugin it also loads a Go plugin (wasm-examples/kvplugin, built as
// a wasip1 reactor):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o kvplugin.wasm ./wasm-examples/kvplugin
//	go run ./examples/plugin-host -kvplugin kvplugin.wasm
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/sandbox"
)

// pluginWasm is plugin.wat built (wat2wasm --debug-names plugin.wat -o plugin.wasm).
//
//go:embed plugin.wasm
var pluginWasm []byte

func main() {
	kvplugin := flag.String("kvplugin", "", "also load the Go plugin wasm-examples/kvplugin, built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared")
	flag.Parse()
	var goWasm []byte
	var err error
	if *kvplugin != "" {
		goWasm, err = os.ReadFile(*kvplugin)
	}
	if err == nil {
		err = run(context.Background(), os.Stdout, goWasm, "")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plugin-host:", err)
		os.Exit(1)
	}
}

// store is the host's key-value store, which plugins read through
// env.kv_get.
type store struct {
	mu   sync.Mutex
	data map[string]string
}

// kvGet is env.kv_get(key_ptr, key_len, buf_ptr, buf_len) -> i32: the
// value's length (written at buf_ptr if it fits), or -1 if there is no
// such key. A bad pointer is an error: the call traps, the host goes on.
func (s *store) kvGet(_ context.Context, c sandbox.Call, stack []uint64) error {
	key, err := c.ReadString(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if err != nil {
		return err
	}
	s.mu.Lock()
	v, ok := s.data[key]
	s.mu.Unlock()
	if !ok {
		stack[0] = api.EncodeI32(-1)
		return nil
	}
	if len(v) <= int(api.DecodeU32(stack[3])) {
		if err := c.Write(api.DecodeU32(stack[2]), []byte(v)); err != nil {
			return err
		}
	}
	stack[0] = api.EncodeI32(int32(len(v)))
	return nil
}

// run is the example; goWasm is the Go plugin (nil: none), cacheDir
// wazero's compilation cache ("" none).
func run(ctx context.Context, w io.Writer, goWasm []byte, cacheDir string) error {
	kv := &store{data: map[string]string{"answer": "42", "planet": "mars"}}
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: cacheDir, HostModules: []sandbox.HostModuleDef{{
		Name: "env",
		Funcs: []sandbox.HostFunc{{Name: "kv_get", Func: kv.kvGet,
			Params:  []sandbox.ValueType{sandbox.I32, sandbox.I32, sandbox.I32, sandbox.I32},
			Results: []sandbox.ValueType{sandbox.I32}}},
	}}})
	if err != nil {
		return err
	}
	defer rt.Close(context.Background())

	// The Go plugin needs WASI (the Go runtime uses it); it may read one
	// config value. Its calls get 2 s and 32 MiB.
	var goPlugin *sandbox.Plugin
	if goWasm != nil {
		goPlugin, err = rt.LoadPlugin(ctx, goWasm, sandbox.Manifest{
			Name:        "kvplugin",
			HostModules: []string{"wasi_snapshot_preview1", "env", "stint_plugin"},
			Config:      map[string]string{"greeting": "hi"},
			Limits:      sandbox.PluginLimits{Timeout: 2 * time.Second, MemoryBytes: 32 << 20},
		})
		if err != nil {
			return fmt.Errorf("loading kvplugin: %w", err)
		}
		defer goPlugin.Close(context.Background())
	}

	// The WAT plugin gets no WASI, but the stint module (stop_requested),
	// and a different config value; its calls get 1 s and 1 MiB.
	watPlugin, err := rt.LoadPlugin(ctx, pluginWasm, sandbox.Manifest{
		Name:        "watplugin",
		HostModules: []string{"env", "stint", "stint_plugin"},
		Config:      map[string]string{"motd": "the WAT plugin reads its own config"},
		Limits:      sandbox.PluginLimits{Timeout: time.Second, MemoryBytes: 1 << 20},
	})
	if err != nil {
		return fmt.Errorf("loading watplugin: %w", err)
	}
	defer watPlugin.Close(context.Background())

	// A manifest that grants less is refused at load, naming the import.
	if _, err := rt.LoadPlugin(ctx, pluginWasm, sandbox.Manifest{Name: "denied", HostModules: []string{"stint"}}); err != nil {
		fmt.Fprintf(w, "load denied: %v\n", err)
	}

	show := func(p *sandbox.Plugin, fn, input string, opts sandbox.CallOptions) {
		out, err := p.CallWith(ctx, fn, []byte(input), opts)
		if err != nil {
			fmt.Fprintf(w, "%s.%s(%q): error: %v\n", p.Name(), fn, input, err)
			return
		}
		fmt.Fprintf(w, "%s.%s(%q) -> %s", p.Name(), fn, input, out.Kind)
		if out.Output != nil {
			fmt.Fprintf(w, " %q", out.Output)
		}
		if out.Message != "" {
			fmt.Fprintf(w, " (%s)", out.Message)
		}
		fmt.Fprintf(w, " warm=%v\n", out.Warm)
	}
	plugins := []*sandbox.Plugin{watPlugin}
	if goPlugin != nil {
		plugins = append(plugins, goPlugin)
		show(goPlugin, "greet", "Ada", sandbox.CallOptions{})
		show(goPlugin, "greet", "Grace", sandbox.CallOptions{}) // warm: the same instance counts its calls
		show(goPlugin, "lookup", "answer", sandbox.CallOptions{})
		show(goPlugin, "lookup", "pluto", sandbox.CallOptions{})
		show(goPlugin, "spin", "", sandbox.CallOptions{Timeout: 200 * time.Millisecond}) // stuck: forced at its timeout
		show(goPlugin, "greet", "Ada", sandbox.CallOptions{})                            // a fresh instance
	}
	show(watPlugin, "kv", "planet", sandbox.CallOptions{})
	show(watPlugin, "config", "motd", sandbox.CallOptions{})
	show(watPlugin, "config", "greeting", sandbox.CallOptions{}) // not in its manifest
	stop := make(chan struct{})
	close(stop)
	show(watPlugin, "stop_aware", "", sandbox.CallOptions{Stop: stop})                // asked to stop, ends on its own
	show(watPlugin, "spin", "", sandbox.CallOptions{Timeout: 100 * time.Millisecond}) // stuck: forced at its timeout
	show(watPlugin, "kv", "answer", sandbox.CallOptions{})                            // a fresh instance
	for _, p := range plugins {
		st := p.Stats()
		fmt.Fprintf(w, "%s: %d calls, %d instances made, %d discarded\n", p.Name(), st.Calls, st.Instantiations, st.Discarded)
	}
	return nil
}
