//go:build wasip1

// extism-kv is a plugin written with Extism's Go PDK that calls host
// functions of its host app in extism:host/user, as it would under
// Extism's go-sdk: kernel-memory offsets in and out. Stint gives them with
// package sandbox/extism's HostModules (examples/extism-host). It also
// imports Stint's stint module (guest.StopRequested), so its manifest
// grants wasi_snapshot_preview1, extism:host/env, extism:host/user and
// stint. Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o extism-kv.wasm ./wasm-examples/extism-kv
package main

import (
	"strings"

	"github.com/extism/go-pdk"

	"github.com/stint-run/stint/guest"
)

// kvGet is the host's get: the value's block, 0 if there is no such key.
//
//go:wasmimport extism:host/user kv_get
func kvGet(key uint64) uint64

// kvSet is the host's set of the key's block to the value's block.
//
//go:wasmimport extism:host/user kv_set
func kvSet(key, value uint64)

// hold is a host function that blocks (the tests' stuck host function).
//
//go:wasmimport extism:host/user hold
func hold()

// lookup outputs the host's value for the key in its input, or
// "no such key: KEY".
//
//go:wasmexport lookup
func lookup() int32 {
	key := pdk.AllocateString(pdk.InputString())
	defer key.Free()
	off := kvGet(key.Offset())
	if off == 0 {
		pdk.OutputString("no such key: " + pdk.InputString())
		return 0
	}
	v := pdk.FindMemory(off)
	defer v.Free()
	pdk.Output(v.ReadBytes())
	return 0
}

// store sets KEY to VALUE in the host's store, from an input "KEY=VALUE".
//
//go:wasmexport store
func store() int32 {
	k, v, ok := strings.Cut(pdk.InputString(), "=")
	if !ok {
		pdk.SetErrorString("want KEY=VALUE")
		return 1
	}
	key, val := pdk.AllocateString(k), pdk.AllocateString(v)
	kvSet(key.Offset(), val.Offset())
	key.Free()
	val.Free()
	pdk.OutputString("stored " + k)
	return 0
}

// stuck calls hold, which blocks.
//
//go:wasmexport stuck
func stuck() int32 {
	hold()
	return 0
}

// wait works until Stint asks it to stop (guest.StopRequested, the stint
// module: Stint's extras are reachable from an Extism plugin too), then
// outputs "stopped".
//
//go:wasmexport wait
func wait() int32 {
	for n := 0; !guest.StopRequested(); n++ {
		sink += n
	}
	pdk.OutputString("stopped")
	return 0
}

var sink int

func main() {}
