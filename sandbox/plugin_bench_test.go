package sandbox_test

import (
	"context"
	"testing"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// BenchmarkPluginCall: one warm call of a no-op export and of a 64-byte
// upper-case, in each interrupt mode (bench/peers -plugins compares them
// with Extism and wasmtime-go).
func BenchmarkPluginCall(b *testing.B) {
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
				for b.Loop() {
					out, err := p.Call(context.Background(), c.export, c.input)
					if err != nil || !out.Success() {
						b.Fatal(err, out)
					}
				}
			})
		}
		_ = p.Close(context.Background())
		_ = rt.Close(context.Background())
	}
}
