//go:build wasip1

package main

import (
	"strconv"
	"strings"

	"github.com/stint-run/stint/guest/plugin"
)

//go:wasmimport env kv_get
func kvGet(keyPtr, keyLen, bufPtr, bufLen uint32) int32

var calls int // calls this instance served: its warm state

//go:wasmexport greet
func greet(ptr, n uint32) uint64 {
	calls++
	greeting, ok := plugin.Config("greeting")
	if !ok {
		greeting = "hello"
	}
	return plugin.OutputString(greeting + ", " + plugin.InputString(ptr, n) + " (call " + strconv.Itoa(calls) + ")")
}

//go:wasmexport lookup
func lookup(ptr, n uint32) uint64 {
	key := plugin.Input(ptr, n)
	if v, ok := plugin.Get(kvGet, key); ok {
		return plugin.Output(v)
	}
	return plugin.OutputString("no such key: " + string(key))
}

//go:wasmexport upper
func upper(ptr, n uint32) uint64 {
	return plugin.OutputString(strings.ToUpper(plugin.InputString(ptr, n)))
}

//go:wasmexport double
func double(ptr, n uint32) uint64 {
	return plugin.Handle(ptr, n, func(in []byte) ([]byte, error) {
		v, err := strconv.Atoi(string(in))
		return strconv.AppendInt(nil, int64(2*v), 10), err
	})
}

//go:wasmexport noop
func noop() {}

var sink int

//go:wasmexport spin
func spin() {
	for i := 0; ; i++ {
		sink += i
	}
}

func main() {}
