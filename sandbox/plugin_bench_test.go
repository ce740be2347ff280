package sandbox_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// BenchmarkPluginCall: one warm call of a no-op export and of a 64-byte
// upper-case, in each interrupt mode (bench/peers -plugins compares them
// with Extism and wasmtime-go). cpu-ns/op is the calling thread's CPU time
// per call.
func BenchmarkPluginCall(b *testing.B) { benchPluginCall(b, false) }

// BenchmarkPluginCallInto: the same calls through Plugin.CallInto, into
// one Outcome the loop reuses.
func BenchmarkPluginCallInto(b *testing.B) { benchPluginCall(b, true) }

func benchPluginCall(b *testing.B, into bool) {
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(context.Background(), sandbox.Config{Interrupt: mode})
		if err != nil {
			b.Fatal(err)
		}
		p, err := rt.LoadPlugin(context.Background(), wat.MustLoad("plugin_basic"), sandbox.Manifest{})
		if err != nil {
			b.Fatal(err)
		}
		input := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
		for _, c := range []struct {
			export string
			input  []byte
		}{{"noop", nil}, {"upper", input}} {
			b.Run(string(mode)+"/"+c.export, func(b *testing.B) {
				b.ReportAllocs()
				// cpu-ns/op: the thread's CPU time a call takes (the guest
				// runs on the caller's thread), which a loaded machine
				// inflates less than ns/op.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu := sandbox.ThreadCPU()
				if into {
					var out sandbox.Outcome
					for b.Loop() {
						if err := p.CallInto(context.Background(), c.export, c.input, sandbox.CallOptions{}, &out); err != nil || !out.Success() {
							b.Fatal(err, &out)
						}
					}
				} else {
					for b.Loop() {
						out, err := p.Call(context.Background(), c.export, c.input)
						if err != nil || !out.Success() {
							b.Fatal(err, out)
						}
					}
				}
				b.ReportMetric(float64(sandbox.ThreadCPU()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
		_ = p.Close(context.Background())
		_ = rt.Close(context.Background())
	}
}
