package plugin

import (
	"os"
	"runtime"
	"unsafe"
)

var (
	input []byte // the current call's input, written by the host into what alloc returned
	//lint:ignore U1000 written, never read: it keeps the last output reachable until the next call
	output []byte
)

// allocInput returns a buffer of n bytes for the host to write the input
// into (the convention's alloc), reusing the last one when it is big
// enough.
func allocInput(n uint32) []byte {
	if uint32(cap(input)) < n {
		input = make([]byte, n)
	}
	input = input[:n]
	return input
}

// Input returns the call's input: ptr and n are the export's parameters.
// It is the PDK's input buffer, valid until the call returns (the next
// call's input overwrites it): copy what you keep.
func Input(ptr, n uint32) []byte {
	if n == 0 || n > uint32(len(input)) || ptr != Ptr(input) {
		return nil
	}
	return input[:n]
}

// InputString is Input as a string (a copy).
func InputString(ptr, n uint32) string { return string(Input(ptr, n)) }

// Output makes b the call's output and returns what the export returns:
// (ptr << 32 | len), 0 for no output. b is kept alive until the next
// call; do not change it before then.
func Output(b []byte) uint64 {
	output = b
	if len(b) == 0 {
		return 0
	}
	return uint64(Ptr(b))<<32 | uint64(len(b))
}

// OutputString is Output of s.
func OutputString(s string) uint64 { return Output([]byte(s)) }

// Handle runs f on the call's input and returns its output; an error ends
// the call as failed (Fail).
func Handle(ptr, n uint32, f func(in []byte) ([]byte, error)) uint64 {
	out, err := f(Input(ptr, n))
	if err != nil {
		Fail(err)
	}
	return Output(out)
}

// Fail ends the call as failed: err's message goes to stderr
// (Outcome.Stderr) and the guest exits with code 1 (Outcome.ExitCode);
// its instance is discarded, as after any exit. It needs WASI (the Go
// runtime always does). It does not return.
func Fail(err error) {
	_, _ = os.Stderr.WriteString(err.Error() + "\n")
	os.Exit(1)
}

// Ptr is the address of b's first byte in the plugin's linear memory, to
// pass to a host function declared with uint32 parameters (0 for an
// empty b). b must stay referenced until the host function returns
// (runtime.KeepAlive(b) after the call, if nothing else uses it).
func Ptr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// BufferFunc is a host function of the shape (arg_ptr, arg_len, buf_ptr,
// buf_len) -> i32, declared with uint32 parameters: it returns the
// result's length, written at buf_ptr if it fits in buf_len bytes, or a
// negative number for none (stint_plugin.config_get, and the embedder's
// functions built the same way, like examples/plugin-host's env.kv_get).
type BufferFunc func(argPtr, argLen, bufPtr, bufLen uint32) int32

// maxGet bounds the result Get accepts (64 MiB): a host function that
// asks for more is treated as returning none.
const maxGet = 64 << 20

// Get calls f with arg and returns its result (a new slice), calling it
// again with a bigger buffer if the first was too small; false if f
// returned a negative length.
func Get(f BufferFunc, arg []byte) ([]byte, bool) {
	buf := make([]byte, 256)
	for {
		n := f(Ptr(arg), uint32(len(arg)), Ptr(buf), uint32(len(buf)))
		runtime.KeepAlive(arg)
		runtime.KeepAlive(buf)
		switch {
		case n < 0 || n > maxGet:
			return nil, false
		case int(n) <= len(buf):
			return buf[:n], true
		}
		buf = make([]byte, n)
	}
}
