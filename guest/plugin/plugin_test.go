//go:build !wasip1

package plugin_test

import (
	"testing"

	"github.com/stint-run/stint/guest/plugin"
)

// Input is what the host wrote where alloc pointed; anything else (a
// pointer that is not the input buffer, a length past it) is no input.
// Output packs the length in the low 32 bits and keeps nothing for none.
func TestInputOutput(t *testing.T) {
	ptr, n := plugin.Alloc([]byte("hello"))
	if got := plugin.InputString(ptr, n); got != "hello" {
		t.Fatalf("Input = %q, want hello", got)
	}
	if got := plugin.Input(ptr+1, n); got != nil {
		t.Fatalf("Input at another pointer = %q, want nil", got)
	}
	if got := plugin.Input(ptr, n+1); got != nil {
		t.Fatalf("Input past the buffer = %q, want nil", got)
	}
	if res := plugin.OutputString("abc"); uint32(res) != 3 {
		t.Fatalf("Output's length = %d, want 3", uint32(res))
	}
	if res := plugin.Output(nil); res != 0 {
		t.Fatalf("Output(nil) = %d, want 0", res)
	}
	res := plugin.Handle(ptr, n, func(in []byte) ([]byte, error) { return append(in, '!'), nil })
	if uint32(res) != 6 {
		t.Fatalf("Handle's output length = %d, want 6", uint32(res))
	}
	if _, ok := plugin.Config("anything"); ok {
		t.Fatal("Config outside wasip1 found a value")
	}
}

// Get calls again with a buffer of the length the host asked for, and
// reports a negative length as none.
func TestGet(t *testing.T) {
	var lens []uint32
	v, ok := plugin.Get(func(_, argLen, _, bufLen uint32) int32 {
		lens = append(lens, argLen, bufLen)
		return 1000
	}, []byte("key"))
	if !ok || len(v) != 1000 {
		t.Fatalf("Get = %d bytes, %v; want 1000, true", len(v), ok)
	}
	if len(lens) != 4 || lens[0] != 3 || lens[2] != 3 || lens[3] != 1000 {
		t.Fatalf("calls (arg_len, buf_len) = %v; want [3 256 3 1000]", lens)
	}
	if _, ok := plugin.Get(func(_, _, _, _ uint32) int32 { return -1 }, nil); ok {
		t.Fatal("Get of a negative length found a value")
	}
}
