package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// The examples run tiny fixtures of internal/testwasm/wat (their .wat
// sources are beside them): echo, a WASI command that copies stdin to
// stdout; plugin_basic, a plugin that imports nothing; plugin_host, a
// plugin that imports the host function env.kv_get.

// A task: compile a WASI command once, then run it with its input, under
// limits, and read what happened in the Outcome.
func ExampleRuntime_Run() {
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	mod, err := rt.Compile(ctx, wat.MustLoad("echo"))
	if err != nil {
		panic(err)
	}
	out, err := rt.Run(ctx, mod, sandbox.Spec{
		Input:  []byte("hello, stint\n"),
		Limits: sandbox.Limits{Timeout: 10 * time.Second, MemoryBytes: 1 << 20},
	})
	if err != nil {
		panic(err) // only for a spec that cannot run or a closed runtime
	}
	fmt.Printf("%s, exit code %d, stdout %q\n", out.Kind, out.ExitCode, out.Stdout)
	// Output:
	// succeeded, exit code 0, stdout "hello, stint\n"
}

// A plugin: load it with its manifest, then call its exports by name,
// bytes in and bytes out. The instance is kept warm between calls.
func ExampleRuntime_LoadPlugin() {
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	p, err := rt.LoadPlugin(ctx, wat.MustLoad("plugin_basic"), sandbox.Manifest{
		Name:   "basic",
		Limits: sandbox.PluginLimits{Timeout: 5 * time.Second, MemoryBytes: 1 << 20},
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)

	for _, fn := range []string{"upper", "count", "count"} {
		out, err := p.Call(ctx, fn, []byte("hello"))
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s %q warm=%v\n", fn, out.Kind, out.Output, out.Warm)
	}
	// Output:
	// upper: succeeded "HELLO" warm=false
	// count: succeeded "1" warm=true
	// count: succeeded "2" warm=true
}

// A host module: the embedder's own functions, given to guests under an
// import module name ("env" here). A plugin imports from it only if its
// manifest grants the module; a task may import any registered module.
func ExampleConfig_hostModules() {
	ctx := context.Background()
	data := map[string]string{"planet": "mars"}
	// kvGet is env.kv_get(key_ptr, key_len, buf_ptr, buf_len) -> i32: the
	// value's length (written at buf_ptr if it fits), or -1 for no value.
	kvGet := func(_ context.Context, c sandbox.Call, stack []uint64) error {
		key, err := c.ReadString(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
		if err != nil {
			return err // a bad pointer: the guest traps, the host goes on
		}
		v, ok := data[key]
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
	rt, err := sandbox.New(ctx, sandbox.Config{HostModules: []sandbox.HostModuleDef{{
		Name: "env",
		Funcs: []sandbox.HostFunc{{
			Name:    "kv_get",
			Params:  []sandbox.ValueType{sandbox.I32, sandbox.I32, sandbox.I32, sandbox.I32},
			Results: []sandbox.ValueType{sandbox.I32},
			Func:    kvGet,
		}},
	}}})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	// plugin_host also imports stint_plugin (its config) and stint
	// (stop_requested): its manifest grants all three.
	p, err := rt.LoadPlugin(ctx, wat.MustLoad("plugin_host"), sandbox.Manifest{
		Name:        "kv",
		HostModules: []string{"env", "stint_plugin", "stint"},
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)

	for _, key := range []string{"planet", "pluto"} {
		out, err := p.Call(ctx, "kv", []byte(key))
		if err != nil {
			panic(err)
		}
		fmt.Printf("kv(%q): %s %q\n", key, out.Kind, out.Output)
	}

	// A manifest that does not grant env is refused at load.
	_, err = rt.LoadPlugin(ctx, wat.MustLoad("plugin_host"), sandbox.Manifest{HostModules: []string{"stint_plugin", "stint"}})
	fmt.Println(err)
	// Output:
	// kv("planet"): succeeded "mars"
	// kv("pluto"): succeeded "missing"
	// bad_import: module imports env.kv_get, but its manifest does not grant host module "env"
}
