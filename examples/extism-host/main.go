// Command extism-host is an example host app for a plugin written with
// Extism's Go PDK (wasm-examples/extism-kv) that calls its host's own
// functions in extism:host/user, as it would under Extism's go-sdk: the
// host defines them with extism.NewHostFunctionWithStack (package
// sandbox/extism, the go-sdk's names: a key-value store read and written
// through the plugin's kernel memory), registers them with
// extism.HostModules, grants them in the manifest, calls the plugin warm,
// asks a call to stop (Stint's guest.StopRequested, from an Extism
// plugin), and stops a call blocked in a host function at its timeout. It
// imports only packages sandbox and sandbox/extism, so it can be copied
// into another module.
//
//	go run ./examples/extism-host
//
// The plugin is wasm-examples/build/extism-kv.wasm if `make wasm` built
// it; otherwise the example builds it (GOOS=wasip1 GOARCH=wasm go build
// -buildmode=c-shared) from wasm-examples/extism-kv, which it finds above
// the working directory.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/extism"
)

func main() {
	wasm, err := pluginWasm()
	if err == nil {
		cache, _ := os.UserCacheDir() // a Go plugin takes seconds to compile: keep the machine code
		if cache != "" {
			cache = filepath.Join(cache, "stint-extism-host-example")
		}
		err = run(context.Background(), os.Stdout, wasm, cache)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "extism-host:", err)
		os.Exit(1)
	}
}

// pluginWasm returns the plugin: built by `make wasm`, or built now.
func pluginWasm() ([]byte, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		src := filepath.Join(dir, "wasm-examples", "extism-kv")
		if _, err := os.Stat(src); err == nil {
			if wasm, err := os.ReadFile(filepath.Join(dir, "wasm-examples", "build", "extism-kv.wasm")); err == nil {
				return wasm, nil
			}
			return buildPlugin(src)
		}
		if filepath.Dir(dir) == dir {
			return nil, errors.New("no wasm-examples/extism-kv above the working directory: run it from the Stint repository")
		}
	}
}

// buildPlugin builds the plugin at src as a WASI reactor.
func buildPlugin(src string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "extism-host")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "extism-kv.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=")
	if msg, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %v\n%s", src, err, msg)
	}
	return os.ReadFile(out)
}

// store is the host's key-value store.
type store struct {
	mu   sync.Mutex
	data map[string][]byte
}

// hostFunctions are the plugin's extism:host/user imports, defined as with
// Extism's go-sdk: each gets the plugin's kernel memory (CurrentPlugin)
// and its parameters in stack. A failure panics: the plugin traps, the
// host goes on.
func (s *store) hostFunctions() []extism.HostFunction {
	// kv_get(key) -> value: a new block holding the key's value, 0 if none.
	get := extism.NewHostFunctionWithStack("kv_get", func(_ context.Context, p *extism.CurrentPlugin, stack []uint64) {
		key, err := p.ReadString(stack[0])
		if err != nil {
			panic(err)
		}
		s.mu.Lock()
		v, ok := s.data[key]
		s.mu.Unlock()
		if !ok {
			stack[0] = 0
			return
		}
		if stack[0], err = p.WriteBytes(v); err != nil {
			panic(err)
		}
	}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})

	// kv_set(key, value): the key's value becomes a copy of the block.
	set := extism.NewHostFunctionWithStack("kv_set", func(_ context.Context, p *extism.CurrentPlugin, stack []uint64) {
		key, err := p.ReadString(stack[0])
		if err != nil {
			panic(err)
		}
		v, err := p.ReadBytes(stack[1])
		if err != nil {
			panic(err)
		}
		s.mu.Lock()
		s.data[key] = v
		s.mu.Unlock()
	}, []extism.ValueType{extism.ValueTypePTR, extism.ValueTypePTR}, nil)

	// hold() waits for something that never comes, until the call is
	// stopped: a host function that may block returns once ctx is done.
	hold := extism.NewHostFunctionWithStack("hold", func(ctx context.Context, _ *extism.CurrentPlugin, _ []uint64) {
		<-ctx.Done()
		panic(ctx.Err())
	}, nil, nil)
	return []extism.HostFunction{get, set, hold}
}

// run is the example: wasm is the plugin, cacheDir wazero's compilation
// cache ("" none).
func run(ctx context.Context, w io.Writer, wasm []byte, cacheDir string) error {
	kv := &store{data: map[string][]byte{"answer": []byte("42")}}
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: cacheDir,
		HostModules: extism.HostModules(kv.hostFunctions()...)})
	if err != nil {
		return err
	}
	defer rt.Close(context.Background())

	// Deny by default: without extism:host/user in its manifest, the
	// plugin is refused at load, naming the import. It needs WASI (the Go
	// runtime), Extism's kernel and Stint's stint module (stop_requested).
	man := sandbox.Manifest{
		Name:        "extism-kv",
		HostModules: []string{"wasi_snapshot_preview1", sandbox.ExtismModule, "stint"},
		Limits:      sandbox.PluginLimits{Timeout: 10 * time.Second, MemoryBytes: 32 << 20},
	}
	if _, err := rt.LoadPlugin(ctx, wasm, man); err != nil {
		fmt.Fprintf(w, "load denied: %v\n", err)
	}
	man.HostModules = append(man.HostModules, extism.UserModule)
	p, err := rt.LoadPlugin(ctx, wasm, man)
	if err != nil {
		return fmt.Errorf("loading extism-kv: %w", err)
	}
	defer p.Close(context.Background())

	show := func(fn, input string, opts sandbox.CallOptions) {
		out, err := p.CallWith(ctx, fn, []byte(input), opts)
		if err != nil {
			fmt.Fprintf(w, "%s(%q): error: %v\n", fn, input, err)
			return
		}
		fmt.Fprintf(w, "%s(%q) -> %s", fn, input, out.Kind)
		if len(out.Output) > 0 {
			fmt.Fprintf(w, " %q", out.Output)
		}
		if out.Message != "" {
			fmt.Fprintf(w, " (%s)", out.Message)
		}
		fmt.Fprintf(w, " warm=%v\n", out.Warm)
	}
	show("lookup", "answer", sandbox.CallOptions{})
	show("store", "planet=mars", sandbox.CallOptions{})
	show("lookup", "planet", sandbox.CallOptions{})
	show("lookup", "pluto", sandbox.CallOptions{})
	stop := make(chan struct{})
	close(stop)
	show("wait", "", sandbox.CallOptions{Stop: stop})                       // asked to stop: guest.StopRequested, ends on its own
	show("stuck", "", sandbox.CallOptions{Timeout: 200 * time.Millisecond}) // blocked in hold: forced at its timeout
	show("lookup", "planet", sandbox.CallOptions{})                         // a fresh instance: the store is the host's
	st := p.Stats()
	fmt.Fprintf(w, "extism-kv: %d calls, %d instances made, %d discarded\n", st.Calls, st.Instantiations, st.Discarded)
	return nil
}
