package sandbox_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
	"github.com/tetratelabs/wazero/api"
)

// BenchmarkPluginHostCall: a warm call of a plugin whose export calls an
// embedder's host function once (plugin_host's kv), with a call timeout,
// so that its guest runs on a guest worker (the hand-off of plugin.go and
// guestworker.go). dense: calls back to back; sparse: 200 µs between
// calls, when the worker has parked. proc-cpu-ns/op is the whole
// process's CPU time (every thread: the hand-off's polls included) per call.
func BenchmarkPluginHostCall(b *testing.B) {
	kv := sandbox.HostModuleDef{Name: "env", Funcs: []sandbox.HostFunc{{
		Name: "kv_get", Params: []sandbox.ValueType{sandbox.I32, sandbox.I32, sandbox.I32, sandbox.I32}, Results: []sandbox.ValueType{sandbox.I32},
		Func: func(_ context.Context, c sandbox.Call, stack []uint64) error {
			if err := c.Write(api.DecodeU32(stack[2]), []byte("v")); err != nil {
				return err
			}
			stack[0] = api.EncodeI32(1)
			return nil
		}}}}
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{HostModules: []sandbox.HostModuleDef{kv}})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.LoadPlugin(ctx, wat.MustLoad("plugin_host"), sandbox.Manifest{Name: "kv",
		HostModules: []string{"env", "stint_plugin", "stint"}, Limits: sandbox.PluginLimits{Timeout: 10 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		gap  time.Duration
	}{{"dense", 0}, {"sparse", 200 * time.Microsecond}} {
		b.Run(c.name, func(b *testing.B) {
			var out sandbox.Outcome
			in := []byte("key")
			cpu0 := procCPU()
			var slept time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.CallInto(ctx, "kv", in, sandbox.CallOptions{}, &out); err != nil || out.Kind != sandbox.KindSucceeded {
					b.Fatal(err, out.String())
				}
				if c.gap > 0 {
					t := time.Now()
					time.Sleep(c.gap)
					slept += time.Since(t)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(procCPU()-cpu0)/float64(b.N), "proc-cpu-ns/op")
			b.ReportMetric(float64(out.Duration), "call-ns(last)")
		})
	}
}

// procCPU is the process's user+system CPU time, in ns.
func procCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
